"""Which node, GPU and pod a DCGM series is about (the mapping order, table by table), the pod index
that finds exporter pods, and the words for a GPU holding memory."""

from __future__ import annotations

import pytest

from extender.cluster.state import ClusterState, node_state
from extender.model.gpu_use import gpu_use
from extender.model.readings import GpuReading
from extender.model.series_map import Directory, SeriesMiss, SeriesPlace, directory, place_series
from extender.sources.pod_index import PodIndex, directory_source


def pod(
    name: str, node: str, ip: str | None = None, namespace: str = "gpu-operator", gpus: int = 0
) -> dict[str, object]:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"limits": limits}}]},
        "status": {"phase": "Running", "podIP": ip},
    }


CLUSTER = directory(
    ["node-a", "node-b", "node-c"],
    [
        pod("nvidia-dcgm-exporter-57pvc", "node-a", "10.244.1.9"),
        pod("nvidia-dcgm-exporter-x2x2x", "node-b", "fd00::7"),
        pod("train", "node-a", "10.244.1.20", namespace="ml", gpus=1),
    ],
)
GPU0 = {"gpu": "0", "UUID": "GPU-0000"}


@pytest.mark.parametrize(
    ("labels", "node", "via"),
    [
        # 1. node, then kubernetes_node, win over everything else
        ({"node": "node-a", "kubernetes_node": "node-b", "Hostname": "node-c"}, "node-a", "node"),
        ({"kubernetes_node": "node-b", "Hostname": "node-c"}, "node-b", "kubernetes_node"),
        # a node label naming no node of the model is passed over
        ({"node": "elsewhere", "Hostname": "node-c"}, "node-c", "Hostname"),
        # 2. Hostname / hostname naming a Node (a hostNetwork exporter)
        ({"Hostname": "node-c"}, "node-c", "Hostname"),
        ({"hostname": "node-c"}, "node-c", "hostname"),
        # 3. Hostname naming the exporter pod → that pod's spec.nodeName
        ({"Hostname": "nvidia-dcgm-exporter-57pvc", "instance": "10.9.9.9:9400"}, "node-a", "Hostname (exporter pod)"),
        # 4. instance naming a Node (GPU Operator relabeling), with or without a port
        ({"instance": "node-b"}, "node-b", "instance"),
        ({"instance": "node-b:9400"}, "node-b", "instance"),
        # ... or an exporter pod's IP[:port], IPv6 included
        ({"instance": "10.244.1.9:9400"}, "node-a", "instance (exporter pod IP)"),
        ({"instance": "10.244.1.9"}, "node-a", "instance (exporter pod IP)"),
        ({"instance": "[fd00::7]:9400"}, "node-b", "instance (exporter pod IP)"),
    ],
)
def test_the_node_is_found_in_label_order(labels: dict[str, str], node: str, via: str) -> None:
    place = place_series({**GPU0, **labels}, CLUSTER)
    assert isinstance(place, SeriesPlace), place
    assert (place.node, place.via) == (node, via)


@pytest.mark.parametrize(
    ("labels", "uuid", "index", "keys"),
    [
        ({"UUID": "GPU-aa", "gpu": "3", "device": "nvidia5"}, "GPU-aa", 3, ("GPU-aa", "#3")),
        ({"uuid": "GPU-bb"}, "GPU-bb", None, ("GPU-bb",)),  # the old namespace spells it lower-case
        ({"gpu": "2"}, None, 2, ("#2",)),
        ({"device": "nvidia6"}, None, 6, ("#6",)),  # no UUID, no gpu: the device name
    ],
)
def test_the_gpu_is_its_uuid_else_its_index_else_its_device(
    labels: dict[str, str], uuid: str | None, index: int | None, keys: tuple[str, ...]
) -> None:
    place = place_series({"node": "node-a", **labels}, CLUSTER)
    assert isinstance(place, SeriesPlace)
    assert (place.uuid, place.index, place.keys) == (uuid, index, keys)


def test_mig_series_are_readings_of_their_instance() -> None:
    labels = {"Hostname": "node-a", **GPU0, "GPU_I_ID": "2", "GPU_I_PROFILE": "4g.40gb"}
    place = place_series(labels, CLUSTER)
    assert isinstance(place, SeriesPlace) and place.mig == ("2", "4g.40gb") and place.keys == ("#0:mig2",)


@pytest.mark.parametrize(
    ("labels", "holder"),
    [
        # honorLabels: true (or a scrape without target pod labels): the exporter's own labels
        ({"namespace": "ml", "pod": "train", "container": "main"}, "ml/train"),
        # honorLabels: false: the exporter's labels renamed, the target's pod labels beside them
        (
            {"exported_namespace": "ml", "exported_pod": "train", "namespace": "gpu-operator", "pod": "exp"},
            "ml/train",
        ),
        ({"pod_namespace": "ml", "pod_name": "train"}, "ml/train"),  # 1.x names
        # a GPU no pod holds: the only pod label is the scrape target, the exporter itself
        ({"namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-57pvc"}, None),  # as Hostname says
        ({"namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x2x2x"}, None),  # a known non-GPU pod
        ({"namespace": "", "pod": "", "container": ""}, None),
    ],
)
def test_the_pod_holding_the_gpu_is_never_the_exporter(labels: dict[str, str], holder: str | None) -> None:
    place = place_series({"Hostname": "nvidia-dcgm-exporter-57pvc", **GPU0, **labels}, CLUSTER)
    assert isinstance(place, SeriesPlace) and place.pod == holder


@pytest.mark.parametrize(
    ("labels", "reason"),
    [
        ({"Hostname": "nvidia-dcgm-exporter-gone", **GPU0}, "Hostname='nvidia-dcgm-exporter-gone'"),
        ({"instance": "10.0.0.1:9400", **GPU0}, "instance='10.0.0.1:9400'"),
        ({**GPU0}, "no node, Hostname or instance label"),
        ({"node": "node-a"}, "names no GPU"),
    ],
)
def test_a_series_that_places_nowhere_says_why_and_how_to_fix_it(labels: dict[str, str], reason: str) -> None:
    miss = place_series(labels, CLUSTER)
    assert isinstance(miss, SeriesMiss) and reason in miss.reason
    assert "relabel" in miss.fix or "UUID" in miss.fix


def test_the_pod_index_follows_watch_events_for_every_bound_pod() -> None:
    index = PodIndex()
    exporter = {
        **pod("nvidia-dcgm-exporter-57pvc", "node-a", "10.244.1.9"),
        "metadata": {"uid": "u1", "name": "nvidia-dcgm-exporter-57pvc", "namespace": "gpu-operator"},
    }
    index.reset([exporter])
    index.put("ADDED", {**pod("pending", "", None), "metadata": {"uid": "u2", "name": "pending"}})
    state = ClusterState("test")
    state.replace_all([node_state({"metadata": {"name": "node-a"}})])
    where = directory_source(state, index)()
    assert where.pods_by_ip["10.244.1.9"].node == "node-a" and "pending" not in where.pods_by_name
    index.put("DELETED", exporter)
    assert directory_source(state, index)().pods_by_name == {}


def test_without_a_cluster_model_node_labels_are_taken_at_their_word() -> None:
    place = place_series({"Hostname": "dcgm-exporter-6ldbb", **GPU0}, Directory())
    assert isinstance(place, SeriesPlace) and place.node == "dcgm-exporter-6ldbb"
    assert isinstance(place_series({"instance": "10.0.0.1:9400", **GPU0}, Directory()), SeriesMiss)


@pytest.mark.parametrize(
    ("sm", "used", "holder", "exporter_pod", "text"),
    [
        # 88 % SM holding 39 GiB and no known pod: busy, by something unknown — not "leftover"
        (88, 39936, None, None, "GPU 3 is busy (SM 88%, 39 GiB VRAM) held by something we don't know about"),
        # near-zero SM with memory held and no known pod: idle but held, by something unknown
        (0, 62464, None, None, "GPU 3 is idle but memory held (61 GiB, SM 0%) by something we don't know about"),
        # a pod the model places there, or the exporter's attribution, is known
        (2, 8192, "ml/train", None, "GPU 3 is idle but memory held (8 GiB, SM 2%) by ml/train"),
        (88, 39936, None, "ml/serve", "GPU 3 is busy (SM 88%, 39 GiB VRAM) held by ml/serve"),
        (6, 512, None, None, "GPU 3 is busy (SM 6%, 512 MiB VRAM) held by something we don't know about"),
        (None, 512, None, None, "GPU 3 is busy (SM unknown, 512 MiB VRAM) held by something we don't know about"),
        (0, 0, None, None, "GPU 3 has its memory free (SM 0%)"),
    ],
)
def test_a_gpu_holding_memory_is_called_busy_or_idle_by_its_sm_activity_and_unknown_only_without_a_pod(
    sm: float | None, used: float, holder: str | None, exporter_pod: str | None, text: str
) -> None:
    reading = GpuReading(sm_util=sm, memory_used_mib=used, memory_free_mib=1000, at=0.0, pod=exporter_pod)
    assert gpu_use(3, reading, holder).text == text
