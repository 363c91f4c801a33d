"""The node agent on an AMD Instinct node: topology through amdsmi, free GPUs from amd.com/gpu allocations,
and /metrics under AMD device metrics exporter's names."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from extender.agent.gpu_reader import AMDSMI
from extender.agent.loop import Agent
from extender.agent.metrics import dcgm_families
from extender.agent.podresources_client import Allocation, PodResourcesClient
from extender.model.topology import GpuTopology
from tests.amd import fake_amdsmi


class Kubelet(PodResourcesClient):
    """PodResources as AMD's device plugin fills it: device IDs are PCI bus ids."""

    def __init__(self) -> None:  # no socket: answers from this description
        self.asked: list[str] = []

    def allocation(self, resource: str = "nvidia.com/gpu") -> Allocation:
        self.asked.append(resource)
        buses = [f"0000:{b}:00.0" for b in ("0c", "22", "38", "5c", "9f", "af", "bf", "df")]
        return Allocation(frozenset(buses), {buses[0]: ("serving", "rocm-serve", "vllm"), buses[5]: ("ml", "t", "c")})

    def close(self) -> None:
        pass


class ApiServer:
    def __init__(self) -> None:
        self.patches: list[Mapping[str, Any]] = []

    def patch_node(self, name: str, patch: Mapping[str, Any]) -> None:
        self.patches.append(patch)


def amd_agent() -> tuple[Agent, Kubelet, ApiServer]:
    machine = fake_amdsmi.mi300x_oam()
    machine.gpus[0].gfx_activity, machine.gpus[0].vram_used_bytes = 93, 180 * 1024**3
    kubelet, api = Kubelet(), ApiServer()
    library = fake_amdsmi.fake_amdsmi(machine)
    agent = Agent("mi300x-a", api, lambda: kubelet, lambda: library, clock=lambda: 1_796_000_000.0, reader=AMDSMI)
    return agent, kubelet, api


def test_the_agent_publishes_the_xgmi_topology_and_the_gpus_amd_com_gpu_leaves_free() -> None:
    agent, kubelet, api = amd_agent()
    assert agent.step() is True
    assert kubelet.asked == ["amd.com/gpu"]
    annotations = api.patches[0]["metadata"]["annotations"]
    topology = GpuTopology.from_json(annotations["gpu-advisor.io/topology"])
    assert topology.vendor.name == "amd" and topology.nvlink_islands() == [list(range(8))]
    # GPUs 0 (bus 0c) and 5 (bus af) are held: 8 − 2 = 6 free.
    assert json.loads(annotations["gpu-advisor.io/free-gpus"])["free"] == [1, 2, 3, 4, 6, 7]


def test_the_agents_metrics_use_amd_exporter_names_and_the_holder() -> None:
    agent, _, _ = amd_agent()
    agent.step()
    families = {g.name: g for g in dcgm_families(agent)}
    assert set(families) == {"gpu_gfx_activity", "gpu_used_vram", "gpu_free_vram"}
    gpu0 = {name: next((labels, v) for labels, v in g.samples if labels["gpu"] == "0") for name, g in families.items()}
    # GPU 0: 93 % busy, 180 GiB = 184320 MiB used of 192 GiB = 196608 MiB, so 12288 MiB free.
    assert {name: v for name, (_, v) in gpu0.items()} == {
        "gpu_gfx_activity": 93,
        "gpu_used_vram": 184320,
        "gpu_free_vram": 12288,
    }
    labels = gpu0["gpu_used_vram"][0]
    assert (labels["pod"], labels["namespace"], labels["device"]) == ("rocm-serve", "serving", "card0")


def test_no_amdsmi_makes_the_agent_not_ready_with_the_reason() -> None:
    machine = fake_amdsmi.mi300x_oam()
    library = fake_amdsmi.fake_amdsmi(machine, driver_missing=True)

    def load() -> Any:
        library.amdsmi_init()
        return library

    agent = Agent("mi300x-a", ApiServer(), Kubelet, load, reader=AMDSMI)
    assert agent.step() is False and not agent.status.ready
    assert "AMDSMI_STATUS_DRIVER_NOT_LOADED" in agent.status.reason
