"""Discovery through ``amdsmi`` on real AMD machines (a fake library answering as each would), cross-checked
against the same machines' ``rocm-smi`` / ``amd-smi`` text."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from extender.agent import amdsmi_reader
from extender.model.amd_smi_topo import parse_amd_topology
from extender.model.topology import GpuTopology
from gpu_advisor.cli import main
from tests.amd import fake_amdsmi
from tests.amd.fake_amdsmi import FakeAmdMachine

AMD = Path(__file__).parents[1] / "data" / "amd"


def discover(machine: FakeAmdMachine) -> GpuTopology:
    return amdsmi_reader.discover_amd_topology(fake_amdsmi.fake_amdsmi(machine))


@pytest.mark.parametrize(
    ("machine", "sample"),
    [
        (fake_amdsmi.mi300x_oam, "rocm-smi-8x-mi308x-xgmi.txt"),
        (fake_amdsmi.four_pcie_one_per_numa_node, "rocm-smi-4x-pcie.txt"),
    ],
    ids=["mi300x-oam", "4x-pcie"],
)
def test_the_library_gives_the_same_graph_as_rocm_smi_text(machine, sample: str) -> None:  # type: ignore[no-untyped-def]
    from_library = discover(machine())
    from_text = parse_amd_topology((AMD / sample).read_text())
    assert from_library.links == from_text.links, "every pair: XGMI links and PCIe level alike"
    assert from_library.fingerprint == from_text.fingerprint
    assert from_library.numa_groups() == from_text.numa_groups()
    assert from_library.vendor == from_text.vendor


def test_the_library_gives_the_xgmi_mesh_and_bus_ids_amd_smi_prints() -> None:
    from_library = discover(fake_amdsmi.mi355x_oam())
    from_text = parse_amd_topology((AMD / "amd-smi-8x-mi355x-xgmi.txt").read_text())
    assert [g.pci_bus_id for g in from_library.gpus] == [g.pci_bus_id for g in from_text.gpus]
    assert [lk.nvlinks for lk in from_library.links] == [lk.nvlinks for lk in from_text.links]
    # The library also knows the NUMA nodes that amd-smi topology does not print: 4 GPUs per socket.
    assert from_library.numa_groups() == {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}


def test_each_gpu_carries_what_the_library_says_of_it() -> None:
    gpu = discover(fake_amdsmi.mi300x_oam()).gpu(5)
    # 192 GiB of VRAM = 192 × 1024 MiB = 196608 MiB.
    assert (gpu.product, gpu.memory_mib, gpu.pci_bus_id, gpu.numa_node) == (
        "AMD Instinct MI300X",
        196608,
        "0000:af:00.0",
        1,
    )


def test_an_unsupported_numa_query_makes_only_that_fact_unknown() -> None:
    topo = discover(fake_amdsmi.mi300x_oam(numa_known=False))
    assert all(g.numa_node is None for g in topo.gpus)
    assert {(lk.nvlinks, lk.pcie) for lk in topo.links} == {(1, None)}, "XGMI stays known"


def test_partition_modes_are_read_per_gpu() -> None:
    machine = fake_amdsmi.mi300x_oam()
    machine.gpus[0].compute_partition, machine.gpus[0].memory_partition = "CPX", "NPS4"
    modes = amdsmi_reader.partition_modes(fake_amdsmi.fake_amdsmi(machine))
    assert modes[0] == ("CPX", "NPS4") and modes[1:] == (("SPX", "NPS1"),) * 7


def test_samples_give_gfx_activity_and_vram_in_mib() -> None:
    machine = fake_amdsmi.mi300x_oam()
    machine.gpus[2].gfx_activity, machine.gpus[2].vram_used_bytes = 87, 150 * 1024**3
    machine.gpus[3].gfx_activity = "N/A"
    samples = amdsmi_reader.sample_amd_gpus(fake_amdsmi.fake_amdsmi(machine))
    # 150 GiB used of 192 GiB = 153600 of 196608 MiB.
    assert (samples[2].sm_util_percent, samples[2].memory_used_mib, samples[2].memory_total_mib) == (87, 153600, 196608)
    assert samples[3].sm_util_percent is None, "an unsupported activity is unknown, not 0"


def test_topology_show_amdsmi_prints_the_same_document_as_the_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", fake_amdsmi.fake_amdsmi(fake_amdsmi.mi300x_oam()))
    assert main(["topology", "show", "--amdsmi", "--json"]) == 0
    from_library = GpuTopology.from_dict(json.loads(capsys.readouterr().out))
    assert main(["topology", "show", str(AMD / "rocm-smi-8x-mi308x-xgmi.txt"), "--json"]) == 0
    from_text = GpuTopology.from_dict(json.loads(capsys.readouterr().out))
    assert from_library.links == from_text.links and from_library.vendor.name == "amd"


def test_topology_show_amdsmi_reports_a_missing_driver_plainly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", fake_amdsmi.fake_amdsmi(fake_amdsmi.mi300x_oam(), driver_missing=True))
    assert main(["topology", "show", "--amdsmi"]) != 0
    err = capsys.readouterr().err
    assert "amdsmi could not start (AMDSMI_STATUS_DRIVER_NOT_LOADED)" in err and "Traceback" not in err


def test_topology_show_amdsmi_without_the_package_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", None)  # import amdsmi → ImportError
    assert main(["topology", "show", "--amdsmi"]) != 0
    assert "the amdsmi module is missing" in capsys.readouterr().err
