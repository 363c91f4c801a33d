"""The node agent against a fake pynvml, a real gRPC PodResources server and an HTTP fake API server."""

from __future__ import annotations

import json
import logging
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from kubernetes import client

from extender.agent.apiserver import ApiTarget, NodeApi
from extender.agent.loop import Agent
from extender.agent.podresources import api_pb2, api_pb2_grpc
from extender.agent.podresources_client import PodResourcesClient
from extender.cluster.state import ANNOTATION_FREE_GPUS, ANNOTATION_TOPOLOGY, FreeReport
from extender.model.topology import GpuTopology
from extender.sources.nvml import NvmlUnavailable, discover_topology
from tests.fakes import machines
from tests.fakes.apiserver import FakeApiServer, node
from tests.fakes.nvml import fake_pynvml


class FakeKubelet(api_pb2_grpc.PodResourcesListerServicer):
    """The kubelet's PodResources v1 service, served for real over a unix socket."""

    def __init__(self, allocatable: list[str]) -> None:
        self.allocatable = allocatable
        self.pods: dict[tuple[str, str], list[str]] = {}

    def GetAllocatableResources(self, request, context):  # type: ignore[no-untyped-def]
        return api_pb2.AllocatableResourcesResponse(
            devices=[api_pb2.ContainerDevices(resource_name="nvidia.com/gpu", device_ids=self.allocatable)]
        )

    def List(self, request, context):  # type: ignore[no-untyped-def]
        return api_pb2.ListPodResourcesResponse(
            pod_resources=[
                api_pb2.PodResources(
                    name=name,
                    namespace=ns,
                    containers=[
                        api_pb2.ContainerResources(
                            name="main",
                            devices=[api_pb2.ContainerDevices(resource_name="nvidia.com/gpu", device_ids=ids)],
                        )
                    ],
                )
                for (ns, name), ids in self.pods.items()
            ]
        )


class Clock:
    def __init__(self) -> None:
        self.now = 1_796_000_000.0

    def __call__(self) -> float:
        return self.now


MACHINE = machines.hgx_h100()
UUIDS = [g.uuid for g in MACHINE.gpus]


@pytest.fixture
def kubelet(tmp_path: Path) -> Iterator[tuple[FakeKubelet, str]]:
    servicer = FakeKubelet(UUIDS)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    api_pb2_grpc.add_PodResourcesListerServicer_to_server(servicer, server)
    socket = str(tmp_path / "kubelet.sock")
    server.add_insecure_port(f"unix://{socket}")
    server.start()
    yield servicer, socket
    server.stop(None)


@pytest.fixture
def apiserver() -> Iterator[FakeApiServer]:
    with FakeApiServer() as fake:
        fake.put("nodes", node("gpu-1"))
        yield fake


def make_agent(fake: FakeApiServer, socket: str, tmp_path: Path, clock: Clock, nvml=None) -> Agent:  # type: ignore[no-untyped-def]
    sysfs = MACHINE.write_sysfs(tmp_path / "sys")
    return Agent(
        "gpu-1",
        NodeApi(ApiTarget(fake.url, bearer=lambda: "sa-token")),
        lambda: PodResourcesClient(socket),
        nvml or (lambda: fake_pynvml(MACHINE)),
        min_interval_s=10,
        sysfs=sysfs,
        clock=clock,
    )


def patches(fake: FakeApiServer) -> list[dict[str, str]]:
    return [json.loads(body)["metadata"]["annotations"] for method, _, _, body in fake.requests if method == "PATCH"]


def test_the_node_gets_its_topology_and_free_gpus(kubelet, apiserver: FakeApiServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    servicer, socket = kubelet
    servicer.pods[("ml", "train")] = UUIDS[0:2]
    clock = Clock()
    agent = make_agent(apiserver, socket, tmp_path, clock)
    assert agent.step() is True and agent.status.ready
    (written,) = patches(apiserver)
    assert GpuTopology.from_json(written[ANNOTATION_TOPOLOGY]) == discover_topology(
        fake_pynvml(MACHINE), tmp_path / "sys"
    )
    report = FreeReport.from_json(written[ANNOTATION_FREE_GPUS])
    assert report.free == (2, 3, 4, 5, 6, 7) and report.at == clock.now
    _, path, headers, _ = next(r for r in apiserver.requests if r[0] == "PATCH")
    assert path == "/api/v1/nodes/gpu-1"
    assert headers["Content-Type"] == "application/merge-patch+json"
    assert headers["Authorization"] == "Bearer sa-token"


def test_a_second_run_with_no_change_writes_nothing(kubelet, apiserver: FakeApiServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, socket = kubelet
    clock = Clock()
    agent = make_agent(apiserver, socket, tmp_path, clock)
    assert agent.step() is True
    clock.now += 60
    assert agent.step() is False and len(patches(apiserver)) == 1


def test_a_pod_ending_frees_its_gpus_in_the_next_write_and_churn_is_rate_limited(kubelet, apiserver, tmp_path) -> None:  # type: ignore[no-untyped-def]
    servicer, socket = kubelet
    servicer.pods[("ml", "train")] = UUIDS[0:4]
    clock = Clock()
    agent = make_agent(apiserver, socket, tmp_path, clock)
    agent.step()
    for second in range(1, 10):  # pods come and go every second: nothing is written inside the window
        clock.now += 1
        servicer.pods[("ml", f"burst-{second}")] = [UUIDS[4 + second % 4]]
        agent.step()
        del servicer.pods[("ml", f"burst-{second}")]
    assert len(patches(apiserver)) == 1
    del servicer.pods[("ml", "train")]
    clock.now += 1  # 10 s since the first write: the window opens
    assert agent.step() is True
    assert FreeReport.from_json(patches(apiserver)[-1][ANNOTATION_FREE_GPUS]).free == tuple(range(8))


def test_time_sliced_replicas_count_for_their_physical_gpu(kubelet, apiserver, tmp_path) -> None:  # type: ignore[no-untyped-def]
    servicer, socket = kubelet
    servicer.allocatable = [f"{u}::{r}" for u in UUIDS for r in range(4)]
    servicer.pods[("ml", "a")] = [f"{UUIDS[1]}::2"]
    agent = make_agent(apiserver, socket, tmp_path, Clock())
    agent.step()
    assert FreeReport.from_json(patches(apiserver)[0][ANNOTATION_FREE_GPUS]).free == (0, 2, 3, 4, 5, 6, 7)


def test_api_errors_back_off(kubelet, apiserver: FakeApiServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, socket = kubelet
    apiserver.delete("nodes", "gpu-1")  # PATCH answers 404 until the node exists
    clock = Clock()
    agent = make_agent(apiserver, socket, tmp_path, clock)
    assert agent.step() is False
    clock.now += 0.5
    assert agent.step() is False and len([r for r in apiserver.requests if r[0] == "PATCH"]) == 1, (
        "waits out the backoff"
    )
    apiserver.put("nodes", node("gpu-1"))
    clock.now += 1
    assert agent.step() is True


def test_no_nvml_is_one_log_line_and_not_ready(kubelet, apiserver, tmp_path, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    _, socket = kubelet

    def no_driver():  # type: ignore[no-untyped-def]
        raise NvmlUnavailable("NVML could not start (NVML Shared Library Not Found): this needs an NVIDIA driver")

    agent = make_agent(apiserver, socket, tmp_path, Clock(), nvml=no_driver)
    with caplog.at_level(logging.ERROR):
        for _ in range(5):
            assert agent.step() is False
    assert not agent.status.ready and "NVML could not start" in agent.status.reason
    assert len([r for r in caplog.records if "NVML could not start" in r.getMessage()]) == 1
    assert "Traceback" not in caplog.text


def test_no_kubelet_socket_is_not_ready_with_the_reason(apiserver, tmp_path) -> None:  # type: ignore[no-untyped-def]
    agent = make_agent(apiserver, str(tmp_path / "missing.sock"), tmp_path, Clock())
    assert agent.step() is False
    assert not agent.status.ready and agent.status.reason.startswith("kubelet PodResources API unreachable")


def test_metrics_serve_dcgm_named_samples_with_the_holding_pod(kubelet, apiserver, tmp_path) -> None:  # type: ignore[no-untyped-def]
    servicer, socket = kubelet
    servicer.pods[("ml", "train")] = [UUIDS[3]]
    MACHINE.gpus[3].sm_util, MACHINE.gpus[3].used_mib = 87, 40960
    agent = make_agent(apiserver, socket, tmp_path, Clock())
    agent.step()
    server = agent.serve_http("127.0.0.1", 0)
    try:
        port = server.server_address[1]
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        ready = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5).read())
    finally:
        server.shutdown()
        server.server_close()
        agent.stop()
        MACHINE.gpus[3].sm_util, MACHINE.gpus[3].used_mib = 0, 0
    line = next(line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_GPU_UTIL{") and 'gpu="3"' in line)
    assert (
        f'UUID="{UUIDS[3]}"' in line and 'namespace="ml"' in line and 'pod="train"' in line and line.endswith(" 87.0")
    )
    free = next(line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_FB_FREE{") and 'gpu="3"' in line)
    assert free.endswith(" 40599.0")  # 81,559 MiB − 40,960 MiB used
    assert ready["ready"] is True


def test_the_extender_reads_what_the_agent_writes(kubelet, apiserver, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from extender.cluster.state import node_state

    servicer, socket = kubelet
    servicer.pods[("ml", "train")] = UUIDS[0:2]
    make_agent(apiserver, socket, tmp_path, Clock()).step()
    state = node_state(apiserver.objects["nodes"]["gpu-1"])
    assert state.topology is not None and state.topology.link(0, 1).nvlinks == 18
    assert state.free_gpus == (2, 3, 4, 5, 6, 7)


def test_the_extender_can_scrape_agents_directly(kubelet, apiserver, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from extender.cluster.state import node_state
    from extender.model.pods import PodRequest
    from extender.model.readings import TelemetryBoard
    from extender.scoring import ScoringPolicy, evaluate
    from extender.sources.agent_scrape import AgentScrapeTelemetry, AgentTarget

    servicer, socket = kubelet
    servicer.pods[("ml", "train")] = UUIDS[0:2]
    MACHINE.gpus[2].used_mib = 70000  # free by the kubelet, yet 70,000 of 81,559 MiB held
    agent = make_agent(apiserver, socket, tmp_path, Clock())
    agent.step()
    server = agent.serve_http("127.0.0.1", 0)
    try:
        board = TelemetryBoard()
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        scrape = AgentScrapeTelemetry(lambda: [AgentTarget(url, "gpu-1")], board)
        assert scrape.refresh() == 16  # 8 GPUs, keyed by UUID and by index
    finally:
        server.shutdown()
        server.server_close()
        agent.stop()
        MACHINE.gpus[2].used_mib = 0
    node = node_state(apiserver.objects["nodes"]["gpu-1"])
    verdict = evaluate(PodRequest(gpus=2), node, "gpu-1", board, ScoringPolicy(), Clock()())
    assert verdict.gpus == (2, 3) and "GPU 2 is idle but memory held (68 GiB" in verdict.reason


def test_agents_are_found_by_their_pod_label(apiserver: FakeApiServer) -> None:
    from extender.sources.agent_scrape import AgentTarget
    from extender.sources.kube import agent_targets

    apiserver.documents["/api/v1/namespaces/gpu-advisor/pods"] = {
        "kind": "PodList",
        "apiVersion": "v1",
        "items": [
            {
                "metadata": {"name": "a"},
                "spec": {"nodeName": "gpu-7"},
                "status": {"phase": "Running", "podIP": "10.0.0.7"},
            },
            {"metadata": {"name": "b"}, "spec": {"nodeName": "gpu-8"}, "status": {"phase": "Pending"}},
        ],
    }
    cfg = client.Configuration()
    cfg.host = apiserver.url
    # Each agent with the node its pod runs on: what its telemetry is attributed to.
    assert agent_targets(client.CoreV1Api(client.ApiClient(cfg)))() == [
        AgentTarget("http://10.0.0.7:9401/metrics", "gpu-7")
    ]
    _, path, _, _ = next(r for r in apiserver.requests if "namespaces/gpu-advisor/pods" in r[1])
    query = urllib.parse.parse_qs(urllib.parse.urlparse(path).query)
    assert query["labelSelector"] == ["app.kubernetes.io/name=gpu-advisor-agent"]
