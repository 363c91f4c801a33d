"""The advice and its arithmetic, one workload at a time, from per-GPU statistics (no Prometheus)."""

from __future__ import annotations

import pytest

from extender.advice.rightsize import Advice, GpuSeries, Owner, recommend, rightsize, table, workloads

H100 = ("NVIDIA H100 80GB HBM3", 81559.0)
T4 = ("Tesla-T4", 15360.0)
GIB = 1024.0


def _gpu(
    pod: str = "ml/p",
    sm: tuple[float, float, float, float] = (50, 60, 70, 50),
    vram_gib: float = 10,
    hours: float = 100,
    first: float = 0,
    card: tuple[str, float] = H100,
    gpu: str = "#0",
    mig: bool = False,
) -> GpuSeries:
    p50, p95, peak, mean = sm
    return GpuSeries(
        pod, "n", gpu, card[0], card[1], p50, p95, peak, mean, vram_gib * GIB, vram_gib * GIB,
        first, first + hours * 3600, hours, mig,
    )  # fmt: skip


def _owner(pod: str) -> Owner:
    return Owner("ml", "Deployment", "app")


def _advise(*series: GpuSeries, latency_sensitive: bool = False, window_h: float = 168) -> Advice:
    (usage,) = workloads(series, _owner, {s.pod: latency_sensitive for s in series})
    return recommend(usage, window_h)


@pytest.mark.parametrize(
    ("series", "summary", "freed"),
    [
        # every GPU at SM p95 < 1 % and max < 5 %: all it holds is freed
        ([_gpu(sm=(0, 0.5, 4, 0.1), gpu=f"#{i}") for i in range(2)], "idle: scale to zero or delete", 2),
        # SM max 6 % on one GPU: not idle; demand 0.05 GPU → 1 of 2
        ([_gpu(sm=(0, 0.5, 6, 0.1), gpu="#0"), _gpu(sm=(0, 0.5, 4, 0.1), gpu="#1")], "2 → 1 GPU", 1),
        # demand (70 + 70 + 10 + 10) % = 1.6 GPUs ÷ 0.8 = 2 → 2 of 4
        (
            [_gpu(sm=(60, 70, 80, 60), gpu="#0"), _gpu(sm=(60, 70, 80, 60), gpu="#1")]
            + [_gpu(sm=(5, 10, 20, 5), gpu=f"#{i}") for i in (2, 3)],
            "4 → 2 GPUs",
            2,
        ),
        # SM demand 4 × 15 % = 0.6 → 1 GPU, but VRAM 4 × 30 GiB × 1.2 = 144 GiB ÷ 79.6 GiB → 2
        ([_gpu(sm=(10, 15, 20, 10), vram_gib=30, gpu=f"#{i}") for i in range(4)], "4 → 2 GPUs", 2),
        # demand 2 × 85 % = 1.7 ÷ 0.8 → 3 ≥ 2: keep
        ([_gpu(sm=(80, 85, 95, 80), gpu=f"#{i}") for i in range(2)], "keep", 0),
        # one GPU: 20 GiB × 1.2 = 24 GB > 20 GB → 3g.40gb; SM 30 % ÷ 80 % = 0.375 ≤ 3/7
        ([_gpu(sm=(10, 30, 90, 15), vram_gib=20)], "MIG 3g.40gb", 1 - 3 / 7),
        # 8 GiB × 1.2 = 9.6 GB ≤ 10 GB; SM 10 % ÷ 80 % = 0.125 ≤ 1/7
        ([_gpu(sm=(5, 10, 40, 6), vram_gib=8)], "MIG 1g.10gb", 1 - 1 / 7),
        # SM p95 60 % ÷ 80 % = 0.75 > 4/7: no slice but the whole GPU; keep
        ([_gpu(sm=(40, 60, 90, 45), vram_gib=8)], "keep", 0),
        # a T4 has no MIG: 3 GiB × 1.2 ÷ 15 GiB = 0.24 → time-slicing; frees 1 − max(0.24, 0.2)
        ([_gpu(sm=(10, 20, 50, 12), vram_gib=3, card=T4)], "time-slicing, --gpu-memory-utilization 0.24", 0.76),
        # 8 GiB × 1.2 ÷ 15 = 0.64 of a T4: more than half, keep
        ([_gpu(sm=(10, 20, 50, 12), vram_gib=8, card=T4)], "keep", 0),
        # already on MIG: no whole-GPU advice
        ([_gpu(sm=(10, 20, 30, 12), mig=True, gpu="#0:mig1")], "keep", 0),
    ],
)
def test_the_advice_follows_the_numbers(series: list[GpuSeries], summary: str, freed: float) -> None:
    advice = _advise(*series)
    assert advice.summary == summary
    assert advice.gpus_freed == pytest.approx(freed, abs=1e-6)
    assert advice.gpu_hours_freed == pytest.approx(freed * 100, abs=1e-4)  # 100 h observed


def test_a_latency_sensitive_workload_is_sent_to_mps_never_time_slicing() -> None:
    advice = _advise(_gpu(sm=(10, 20, 50, 12), vram_gib=3, card=T4), latency_sensitive=True)
    assert advice.summary == "MPS, --gpu-memory-utilization 0.24" and advice.action == "mps"
    assert advice.risk is not None and "shared faults" in advice.risk
    plain = _advise(_gpu(sm=(10, 20, 50, 12), vram_gib=3, card=T4))
    assert plain.risk is not None and "no memory isolation" in plain.risk


def test_replicas_in_turn_count_their_hours_once_and_replicas_side_by_side_each() -> None:
    # two pods one after the other (0-50 h, 50-100 h) and a third beside them (0-100 h)
    series = [
        _gpu(pod="ml/a", hours=50, sm=(0, 0, 0, 0)),
        _gpu(pod="ml/b", hours=50, first=50 * 3600, sm=(0, 0, 0, 0)),
        _gpu(pod="ml/c", hours=100, sm=(50, 60, 70, 50)),
    ]
    (usage,) = workloads(series, _owner)
    assert usage.hours_observed == 100  # the union of 0-50, 50-100, 0-100
    assert usage.gpu_hours_held == 200  # 50 + 50 + 100
    assert usage.gpus_held == 2  # 200 ÷ 100
    assert usage.gpu_hours_used == 50  # 100 h × 50 %
    assert usage.gpu_hours_idle == 150
    assert usage.sm_demand_gpus == pytest.approx(0.6)  # (0 × 50 + 0 × 50 + 60 % × 100) ÷ 100 h


@pytest.mark.parametrize(("hours", "confidence"), [(72, "high"), (71.9, "medium"), (24, "medium"), (23, "low")])
def test_confidence_grows_with_the_hours_of_data(hours: float, confidence: str) -> None:
    advice = _advise(_gpu(hours=hours))
    assert advice.confidence == confidence
    assert advice.coverage == pytest.approx(hours / 168)
    assert f"{hours:.1f} h observed of the 168 h window" in advice.evidence[-1]


def test_the_report_filters_sorts_and_totals() -> None:
    def owner(pod: str) -> Owner:
        namespace, _, name = pod.partition("/")
        return Owner(namespace, "Pod", name)

    series = [
        _gpu(pod="ml/busy", sm=(80, 90, 99, 80)),  # 100 h × 20 % = 20 idle GPU-hours
        _gpu(pod="ml/idle", sm=(0, 0, 0, 0)),  # 100 idle
        _gpu(pod="web/two", sm=(80, 90, 99, 80), gpu="#0"),
        _gpu(pod="web/two", sm=(80, 90, 99, 80), gpu="#1"),  # 2 × 100 h × 20 % = 40
    ]
    report = rightsize(series, owner, 168, "test")
    assert [str(a.usage.owner) for a in report.advice] == ["ml/Pod/idle", "web/Pod/two", "ml/Pod/busy"]
    assert (report.gpu_hours_held, report.gpu_hours_idle, report.gpus_freed) == (400, 160, 1)
    only = rightsize(series, owner, 168, "test", namespace="ml", min_gpus=1)
    assert [a.usage.owner.name for a in only.advice] == ["idle", "busy"]
    assert [a.usage.owner.name for a in rightsize(series, owner, 168, "test", min_gpus=1.5).advice] == ["two"]
    text = table(report)
    assert text.splitlines()[1].split()[:2] == ["ml/Pod/idle", "1.0"]
    assert text.endswith(
        "3 workloads over 168 h (test): 160.0 of 400.0 GPU-hours held idle; the advice frees 1.00 GPUs"
    )
    assert report.to_dict()["totals"] == {"workloads": 3, "gpu_hours_held": 400, "gpu_hours_idle": 160, "gpus_freed": 1}
