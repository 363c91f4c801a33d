"""A pod anyone may create must not freeze the live model: the poison annotation of the review
(``gpu-advisor.io/gpu-memory: <400 nines>Gi``), by list and by watch, through the real kubernetes
client and an HTTP-level fake API server."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from extender.model.pods import ANNOTATION_GPU_MEMORY, ANNOTATION_INTERCONNECT
from tests.containment.live import POISON, annotated, eventually, free, live_source, metric
from tests.fakes.apiserver import FakeApiServer, node, pod

INVALID = "gpu_advisor_invalid_objects"


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    with FakeApiServer() as server:
        server.put("nodes", node("gpu-a", gpus=8))
        server.put("nodes", node("gpu-b", gpus=8))
        yield server


def test_a_poison_annotation_present_at_the_first_list_still_lets_the_model_sync(fake: FakeApiServer) -> None:
    fake.put("pods", annotated(pod("poison", "gpu-a", 8), **{ANNOTATION_GPU_MEMORY: POISON}))
    source, registry = live_source(fake)
    source.start()
    try:
        assert source.state.wait_ready(8), "one bad pod must not keep the model from ever becoming ready"
        # The pod runs on 8 GPUs whatever its annotation says: 8 allocatable − 8 held = 0 free.
        assert free(source, "gpu-a") == 0
        assert metric(registry, INVALID, kind="Pod", reason="annotation") == 1
        # The model is live: a later pod is applied.
        fake.put("pods", pod("later", "gpu-b", 3))
        eventually(lambda: free(source, "gpu-b") == 8 - 3)
        assert fake.list_count["pods"] == 1, "no re-listing: the list went through"
    finally:
        source.stop()


def test_a_poison_annotation_arriving_by_watch_is_applied_once_and_the_watch_moves_on(
    fake: FakeApiServer, caplog: pytest.LogCaptureFixture
) -> None:
    source, registry = live_source(fake)
    source.start()
    try:
        assert source.state.wait_ready(8)
        with caplog.at_level(logging.WARNING, logger="extender.sources.invalid"):
            fake.put("pods", annotated(pod("poison", "gpu-a", 8), **{ANNOTATION_GPU_MEMORY: POISON}))
            eventually(lambda: free(source, "gpu-a") == 0)
            fake.put("pods", pod("later", "gpu-b", 2))
            eventually(lambda: free(source, "gpu-b") == 8 - 2)
            # The same pod changes again (still poisoned): still counted once, logged once.
            fake.put("pods", annotated(pod("poison", "gpu-a", 8), **{ANNOTATION_GPU_MEMORY: POISON, "x": "y"}))
            fake.put("pods", pod("last", "gpu-b", 1))
            eventually(lambda: free(source, "gpu-b") == 8 - 2 - 1)
        assert metric(registry, INVALID, kind="Pod", reason="annotation") == 1
        reports = [r.getMessage() for r in caplog.records if "ml/poison" in r.getMessage()]
        assert len(reports) == 1 and "gpu-memory" in reports[0] and "ignored" in reports[0]
        assert fake.list_count["pods"] == 1, "the watch did not fail and re-list"
        assert source.health.degradations(source.clock())[-1].unready is False, "counted, not unready"
    finally:
        source.stop()


def test_an_unknown_interconnect_value_keeps_the_pods_gpus_held(fake: FakeApiServer) -> None:
    fake.put("pods", annotated(pod("train", "gpu-a", 8), **{ANNOTATION_INTERCONNECT: "infiniband-please"}))
    source, registry = live_source(fake)
    source.start()
    try:
        assert source.state.wait_ready(8)
        # Before: the pod was dropped and gpu-a looked 8 of 8 free.
        assert free(source, "gpu-a") == 0
        assert metric(registry, INVALID, kind="Pod", reason="annotation") == 1
    finally:
        source.stop()


def test_a_fixed_or_deleted_pod_stops_counting(fake: FakeApiServer) -> None:
    fake.put("pods", annotated(pod("poison", "gpu-a", 4), **{ANNOTATION_GPU_MEMORY: POISON}))
    source, registry = live_source(fake)
    source.start()
    try:
        assert source.state.wait_ready(8)
        fake.put("pods", annotated(pod("poison", "gpu-a", 4), **{ANNOTATION_GPU_MEMORY: "40Gi"}))
        eventually(lambda: metric(registry, INVALID, kind="Pod", reason="annotation") is None)
        node_a = source.state.node("gpu-a")
        assert node_a is not None and node_a.pods[0].request.gpu_memory_mib == 40 * 1024
        fake.delete("pods", "ml/poison")
        eventually(lambda: free(source, "gpu-a") == 8)
    finally:
        source.stop()


@pytest.mark.parametrize("count", ["NaN", "inf", "1e400", "-1", "0.5"])
def test_a_bound_pod_whose_gpu_count_cannot_be_read_holds_its_whole_node(fake: FakeApiServer, count: str) -> None:
    """The API server never lets such a count through; if one arrives anyway, nothing on its node
    is taken as free that the pod might hold."""
    fake.put("pods", pod("odd", "gpu-a", 1))
    fake.objects["pods"]["ml/odd"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = count
    source, registry = live_source(fake)
    source.start()
    try:
        assert source.state.wait_ready(8)
        node_a = source.state.node("gpu-a")
        assert node_a is not None and free(source, "gpu-a") == 0 and node_a.pods[0].holds_all
        assert metric(registry, INVALID, kind="Pod", reason="gpu-count") == 1
        assert free(source, "gpu-b") == 8
    finally:
        source.stop()


def test_an_unreadable_gpu_record_is_counted_and_logged_once_and_the_pod_still_holds_its_gpu(
    fake: FakeApiServer, caplog: pytest.LogCaptureFixture
) -> None:
    record = {"hami.io/vgpu-devices-allocated": "GPU-0;NVIDIA;4096;30\n"}  # ';' where HAMi writes ','
    source, registry = live_source(fake)
    source.start()
    try:
        assert source.state.wait_ready(8)
        with caplog.at_level(logging.WARNING, logger="extender.sources.invalid"):
            fake.put("pods", annotated(pod("shared", "gpu-a", 1), **record))
            eventually(lambda: free(source, "gpu-a") == 8 - 1)
            fake.put("pods", annotated(pod("shared", "gpu-a", 1), **record, x="y"))  # changed, still unreadable
            fake.put("pods", pod("last", "gpu-b", 1))
            eventually(lambda: free(source, "gpu-b") == 8 - 1)
        assert metric(registry, INVALID, kind="Pod", reason="assignment") == 1
        reports = [r.getMessage() for r in caplog.records if "ml/shared" in r.getMessage()]
        assert len(reports) == 1 and "hami.io/vgpu-devices-allocated" in reports[0] and "predicted" in reports[0]
        assert "\n" not in reports[0]
    finally:
        source.stop()
