"""NVML discovery on real machines (through a fake pynvml that answers like each machine would)."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.model.smi_topo import parse_topo_matrix
from extender.model.topology import GpuTopology, PcieLevel
from extender.sources import nvml
from tests.fakes import machines
from tests.fakes.nvml import FakeMachine, fake_pynvml

TOPO = Path(__file__).parents[1] / "data" / "topo"


def discover(machine: FakeMachine, tmp_path: Path) -> GpuTopology:
    return nvml.discover_topology(fake_pynvml(machine), sysfs=machine.write_sysfs(tmp_path / "sys"))


@pytest.mark.parametrize(
    ("machine", "topo_file"),
    [
        (machines.dgx1_v100, "dgx1-like_8xV100-SXM2_hybrid-cube-mesh.txt"),
        (machines.hgx_h100, "hgx-h100-like_8xH100_NV18_mlengineering-network.txt"),
        (machines.l40s_pcie, "8xL40S_NODE-SYS_1NIC.txt"),
    ],
    ids=["dgx1-v100", "hgx-h100-nvswitch", "8x-l40s-pcie"],
)
def test_nvml_gives_the_same_graph_as_the_machines_topo_matrix(machine, topo_file: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from_nvml = discover(machine(), tmp_path)
    from_text = parse_topo_matrix((TOPO / topo_file).read_text())
    assert from_nvml.indices == from_text.indices
    for ours, theirs in zip(from_nvml.links, from_text.links, strict=True):
        assert ours.nvlinks == theirs.nvlinks, (ours, theirs)
        if theirs.nvlinks == 0:  # the text hides the PCIe level of NVLink pairs
            assert ours.pcie == theirs.pcie, (ours, theirs)
    assert from_nvml.numa_groups() == from_text.numa_groups()
    assert from_nvml.fingerprint != "" and from_nvml.nvlink_islands() == from_text.nvlink_islands()


def test_nvswitch_gpus_are_joined_with_the_smaller_switch_link_count(tmp_path: Path) -> None:
    machine = machines.hgx_h100()
    machine.gpus[3].nvlinks = machine.gpus[3].nvlinks[:12]  # GPU3 has six links down
    topo = discover(machine, tmp_path)
    assert topo.link(0, 1).nvlinks == 18
    assert topo.link(0, 3).nvlinks == 12 and topo.link(3, 7).nvlinks == 12


def test_dgx1_reports_the_pix_switch_under_each_nvlink_pair(tmp_path: Path) -> None:
    topo = discover(machines.dgx1_v100(), tmp_path)
    assert topo.link(0, 1).pcie is PcieLevel.PIX and topo.link(0, 1).nvlinks == 1
    assert topo.link(0, 3).nvlinks == 2 and topo.link(0, 3).pcie is PcieLevel.NODE


def test_gpu_facts_come_through_with_normalized_bus_ids_and_sysfs_numa(tmp_path: Path) -> None:
    gpu = discover(machines.hgx_h100(), tmp_path).gpu(4)
    assert gpu.product == "NVIDIA H100 80GB HBM3" and gpu.memory_mib == 81559
    assert gpu.pci_bus_id == "0000:9a:00.0" and gpu.numa_node == 1
    assert gpu.uuid is not None and gpu.uuid.startswith("GPU-") and gpu.mig is None


def test_an_a100_with_mig_lists_its_instances(tmp_path: Path) -> None:
    gpu = discover(machines.a100_mig(), tmp_path).gpu(0)
    assert gpu.mig is not None and [m.profile for m in gpu.mig] == ["1g.5gb"] * 7
    assert gpu.mig[0].uuid == "MIG-fb42055e-9e53-5764-9278-438605a3014c" and gpu.mig[0].memory_mib == 4864


def test_unsupported_queries_degrade_to_unknown(tmp_path: Path) -> None:
    machine = machines.l40s_pcie()
    machine.pcie.pop((0, 5))
    topo = nvml.discover_topology(fake_pynvml(machine), sysfs=tmp_path / "no-sysfs")
    assert topo.link(0, 5).pcie is None and topo.link(0, 5).nvlinks == 0
    assert topo.gpu(0).numa_node is None


def test_no_nvml_library_is_one_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(machines.l40s_pcie(), library_missing=True))
    with pytest.raises(nvml.NvmlUnavailable, match=r"NVML could not start .*needs an NVIDIA driver"):
        nvml.load_nvml()


def test_sysfs_numa_of_minus_one_means_unknown(tmp_path: Path) -> None:
    machine = machines.a100_mig()
    machine.gpus[0].numa_node = -1
    assert discover(machine, tmp_path).gpu(0).numa_node is None


@pytest.mark.parametrize(
    ("raw", "normal"),
    [("00000000:9A:00.0", "0000:9a:00.0"), (b"0000:07:00.0", "0000:07:00.0"), ("07:00.0", "0000:07:00.0")],
)
def test_bus_ids_are_normalized_to_the_sysfs_form(raw: str | bytes, normal: str) -> None:
    assert nvml.normalize_bus_id(raw) == normal


def test_live_samples_read_utilization_and_memory(tmp_path: Path) -> None:
    machine = machines.l40s_pcie()
    machine.gpus[2].sm_util, machine.gpus[2].used_mib = 37, 1024
    sample = nvml.sample_gpus(fake_pynvml(machine))[2]
    assert (sample.sm_util_percent, sample.memory_used_mib, sample.memory_total_mib) == (37, 1024, 46068)


def test_nvlink_counts_that_disagree_between_the_two_ends_are_reported_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    machine = machines.dgx1_v100()
    machine.gpus[0].nvlinks = [link for link in machine.gpus[0].nvlinks if link[1] != machines.DGX1_BUSES[3]][:5]
    topo = discover(machine, tmp_path)
    assert topo.link(0, 3).nvlinks == 2, "the end that still sees both links wins"
    assert "GPU 0 sees 0 NVLinks to GPU 3 but GPU 3 sees 2" in caplog.text
