"""AMD Device Metrics Exporter series become readings the way DCGM exporter series do."""

from __future__ import annotations

import pytest

from extender.model.dcgm import field_of, reading_from_fields
from extender.model.series_map import directory
from extender.model.series_readings import Sample, readings_from_samples

CLUSTER = directory(
    ["mi300x-a"],
    [
        {
            "metadata": {"name": "rocm-serve", "namespace": "serving"},
            "spec": {"nodeName": "mi300x-a", "containers": [{"resources": {"limits": {"amd.com/gpu": "2"}}}]},
        }
    ],
)
# Labels as the exporter writes them (gpu_id: amd-smi's index; hostname: the node).
GPU3 = {"gpu_id": "3", "gpu_uuid": "5eff74a1-0000-1000-8003-3c9a2b7d1e03", "hostname": "mi300x-a"}


@pytest.mark.parametrize(
    ("series", "kind"),
    [("gpu_gfx_activity", "gfx_activity"), ("gpu_used_vram", "fb_used"), ("gpu_free_vram", "fb_free")],
)
def test_each_exporter_series_reads_as_a_field(series: str, kind: str) -> None:
    assert field_of(series) == kind


def test_gfx_activity_is_the_sm_activity_only_where_dcgm_says_nothing() -> None:
    assert reading_from_fields({"gfx_activity": 40}, at=0.0).sm_source == "gpu_gfx_activity"
    assert reading_from_fields({"gfx_activity": 40, "gpu_util": 100}, at=0.0).sm_source == "DCGM_FI_DEV_GPU_UTIL"


def test_an_mi300x_gpus_series_give_its_activity_vram_and_holder() -> None:
    samples = [
        Sample("gpu_gfx_activity", {**GPU3, "pod": "rocm-serve", "namespace": "serving"}, 87.0, 10.0),
        Sample("gpu_used_vram", GPU3, 150_000.0, 10.0),
        Sample("gpu_free_vram", GPU3, 46_592.0, 10.0),
    ]
    tally = readings_from_samples(samples, CLUSTER, 0.0)
    reading = tally.readings["mi300x-a", "#3"]
    # used 150000 + free 46592 = 196592 MB, the MI300X's 192 GB of HBM3 as amd-smi counts it.
    assert (reading.sm_util, reading.memory_used_mib, reading.memory_total_mib) == (87.0, 150_000.0, 196_592.0)
    assert reading.pod == "serving/rocm-serve" and tally.census.matched == 3
    assert ("mi300x-a", "5eff74a1-0000-1000-8003-3c9a2b7d1e03") in tally.readings, "also found by its UUID"


def test_a_series_for_an_unknown_host_is_counted_as_unmatched_not_used() -> None:
    tally = readings_from_samples([Sample("gpu_used_vram", {**GPU3, "hostname": "elsewhere"}, 1.0, 0.0)], CLUSTER, 0.0)
    assert tally.readings == {} and tally.census.unmatched == 1
