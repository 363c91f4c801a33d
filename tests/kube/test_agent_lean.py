"""The agent stays lean: its /metrics text is what prometheus_client wrote before, byte for byte, without
loading it; and the agent's process loads neither the kubernetes client, networkx nor prometheus_client."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from extender.agent.exposition import Gauge, go_float, render
from extender.agent.metrics import dcgm_families, dcgm_metrics
from extender.agent.podresources_client import Allocation
from extender.model.topology import GpuTopology
from extender.sources.nvml import discover_topology
from tests.fakes import machines
from tests.fakes.nvml import fake_pynvml

REPO = Path(__file__).resolve().parents[2]
LABELS = ["gpu", "UUID", "device", "modelName", "Hostname", "namespace", "pod", "container"]


class AsPrometheusClient(Collector):
    """The families as the agent's former prometheus_client collector built them (GaugeMetricFamily)."""

    def __init__(self, families: list[Gauge]) -> None:
        self.families = families

    def collect(self) -> list[GaugeMetricFamily]:
        out = []
        for family in self.families:
            gauge = GaugeMetricFamily(family.name, family.help, labels=LABELS)
            for labels, value in family.samples:
                gauge.add_metric([labels[k] for k in LABELS], value)
            out.append(gauge)
        return out


def by_prometheus_client(families: list[Gauge]) -> bytes:
    registry = CollectorRegistry()
    registry.register(AsPrometheusClient(families))
    return generate_latest(registry)


def samples(text: bytes) -> list[tuple[str, dict[str, str], float]]:
    return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text.decode()) for s in f.samples]


@dataclass
class View:
    node: str
    nvml: ModuleType | None
    topology: GpuTopology | None
    allocation: Allocation | None


@pytest.fixture
def view(tmp_path: Path) -> View:
    machine = machines.hgx_h100()
    machine.gpus[3].sm_util, machine.gpus[3].used_mib = 87, 40960
    nvml = fake_pynvml(machine)
    topology = discover_topology(nvml, machine.write_sysfs(tmp_path / "sys"))
    holders = {f"{machine.gpus[3].uuid}::1": ("ml", "train", "main")}
    return View("gpu-1", nvml, topology, Allocation(frozenset(holders), holders))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (87, "87.0"),
        (40599, "40599.0"),  # 81,559 − 40,960 MiB
        (0.5, "0.5"),
        (-2, "-2.0"),
        (999999, "999999.0"),  # six integer digits: still plain
        (1234567, "1.234567e+06"),  # seven: Go's exponent form
        (1e22, "1e+22"),
        (math.inf, "+Inf"),
        (-math.inf, "-Inf"),
        (math.nan, "NaN"),
    ],
)
def test_numbers_are_written_as_go_and_prometheus_client_write_them(value: float, text: str) -> None:
    assert go_float(value) == text == floatToGoString(value)  # type: ignore[no-untyped-call]


def test_the_agents_metrics_are_byte_for_byte_what_prometheus_client_wrote(view: View) -> None:
    families = dcgm_families(view)
    assert sum(len(f.samples) for f in families) == 24  # 8 GPUs × util, used, free
    assert dcgm_metrics(view) == by_prometheus_client(families)


def test_awkward_label_values_are_escaped_as_the_format_says() -> None:
    gauge = Gauge("DCGM_FI_DEV_GPU_UTIL", 'GPU "utilization"\\ (in %).\nsecond line')
    odd = 'a "quoted" back\\slash\nnewline, Ünïcode, {braces}=, comma'
    gauge.add({k: odd if k == "pod" else str(i) for i, k in enumerate(LABELS)}, 12.5)
    text = render([gauge])
    assert text == by_prometheus_client([gauge])
    assert b'pod="a \\"quoted\\" back\\\\slash\\nnewline, \xc3\x9cn\xc3\xafcode, {braces}=, comma"' in text
    ((_, labels, value),) = samples(text)
    assert labels["pod"] == odd and value == 12.5


def test_an_empty_family_still_has_its_help_and_type_lines() -> None:
    text = render([Gauge("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).")])
    assert text == b"# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).\n# TYPE DCGM_FI_DEV_FB_FREE gauge\n"
    assert text == by_prometheus_client([Gauge("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).")])


def test_a_scraper_reads_the_holding_pod_and_the_free_memory(view: View) -> None:
    read = {(name, labels["gpu"]): (labels, value) for name, labels, value in samples(dcgm_metrics(view))}
    labels, util = read["DCGM_FI_DEV_GPU_UTIL", "3"]
    assert util == 87.0 and (labels["namespace"], labels["pod"], labels["container"]) == ("ml", "train", "main")
    assert labels["Hostname"] == "gpu-1" and labels["device"] == "nvidia3"
    assert read["DCGM_FI_DEV_FB_FREE", "3"][1] == 81559 - 40960
    assert read["DCGM_FI_DEV_FB_USED", "0"][0]["pod"] == "", "a free GPU has empty holder labels"


AGENT_PROCESS = """
import json, sys
from pathlib import Path
from gpu_advisor.cli import build_parser
from extender.agent.apiserver import node_writer
from extender.agent.loop import Agent
from extender.agent.podresources_client import PodResourcesClient
from extender.model.topology import GpuTopology
build_parser().parse_args(["agent", "--node", "gpu-1"])
writer = node_writer(sys.argv[1])
doc = {"gpus": [{"index": 0}, {"index": 1}, {"index": 2}], "links": [{"a": 0, "b": 1, "nvlinks": 4}]}
topology = GpuTopology.from_json(json.dumps(doc))
assert topology.nvlink_islands() == [[0, 1], [2]] and topology.link(1, 0).nvlinks == 4
Agent("gpu-1", writer, lambda: PodResourcesClient(sys.argv[2]), lambda: sys.modules["json"])
print(json.dumps(sorted(m for m in ("kubernetes", "networkx", "prometheus_client") if m in sys.modules)))
"""


def test_the_agent_process_loads_no_kubernetes_client_networkx_or_prometheus_client(tmp_path: Path) -> None:
    config = {
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }
    (tmp_path / "config").write_text(json.dumps(config))
    done = subprocess.run(
        [sys.executable, "-c", AGENT_PROCESS, str(tmp_path / "config"), str(tmp_path / "kubelet.sock")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_the_graph_view_is_still_there_for_those_who_ask(tmp_path: Path) -> None:
    topology = GpuTopology.from_json(
        '{"gpus": [{"index": 0}, {"index": 1}], "links": [{"a": 0, "b": 1, "nvlinks": 2}]}'
    )
    graph = topology.graph  # built on first use
    assert graph.edges[1, 0]["link"] == topology.link(0, 1) and graph.nodes[1]["gpu"] == topology.gpu(1)
