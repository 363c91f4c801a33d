"""What a workload should ask for instead, with the numbers it rests on.

In order, the first that applies:

1. **idle** — every GPU's SM p95 under 1 % and max under 5 %: scale to zero or delete; frees all it holds.
2. **fewer whole GPUs** — it needs ``max(⌈SM demand ÷ 80 %⌉, ⌈concurrent peak VRAM × 1.2 ÷ GPU memory⌉)``
   GPUs (at least 1) and holds more: "4 → 1 GPU".
3. **a MIG profile** — a pod holds one whole GPU of a MIG-capable product: the smallest profile whose
   memory holds peak VRAM × 1.2 and whose share of the SMs holds SM p95 ÷ 80 % (not the whole GPU).
4. **time-slicing** (or **MPS** when latency-sensitive: never time-slicing) — a pod holds one whole GPU
   at SM p95 under 50 % and peak VRAM × 1.2 under half its memory: share it, capping the engine at
   ``--gpu-memory-utilization`` = peak × 1.2 ÷ GPU memory (vLLM), rounded up to 0.01.
5. **keep**.

Confidence: high from 72 h of data, medium from 24 h, low below; the share of the window observed is
stated beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from extender.advice.rightsize.usage import WorkloadUsage
from extender.model.mig_profiles import MigProfile, mig_product_for

__all__ = ["Advice", "RightsizePolicy", "recommend"]

RISKS = {
    "idle": "whoever still uses it loses it: check with the owner before deleting",
    "fewer-gpus": "a rarer peak than the window saw would run slower or out of memory",
    "mig": "no NVLink or peer-to-peer between MIG instances; SM bursts above the slice are capped; "
    "the node must be MIG-partitioned",
    "time-slicing": "no memory isolation: a neighbour's allocation can fault it; compute is shared",
    "mps": "shared faults: one MPS client's fatal error takes down every client on the GPU",
    "keep": None,
}


@dataclass(frozen=True)
class RightsizePolicy:
    target_sm_percent: float = 80.0  # SM p95 a right-sized GPU (or slice) runs at
    vram_margin: float = 1.2  # headroom over the peak VRAM seen
    idle_sm_p95: float = 1.0
    idle_sm_max: float = 5.0
    share_sm_p95: float = 50.0
    high_hours: float = 72.0
    medium_hours: float = 24.0


@dataclass(frozen=True)
class Advice:
    usage: WorkloadUsage
    action: str  # idle | fewer-gpus | mig | time-slicing | mps | keep
    summary: str  # "4 → 1 GPU", "MIG 3g.40gb", …
    evidence: tuple[str, ...]
    gpus_freed: float
    confidence: str
    coverage: float  # share of the window observed
    risk: str | None
    mig_profile: str | None = None
    gpu_memory_utilization: float | None = None

    @property
    def gpu_hours_freed(self) -> float:
        return self.gpus_freed * self.usage.hours_observed

    def to_dict(self) -> dict[str, Any]:
        u = self.usage
        return {
            "workload": {"namespace": u.owner.namespace, "kind": u.owner.kind, "name": u.owner.name},
            "pods": list(u.pods),
            "product": u.product,
            "gpus_requested": round(u.gpus_held, 2),
            "gpus_used": round(u.gpus_used, 3),
            "sm_percent": {"p50": round(u.sm_p50, 2), "p95": round(u.sm_p95, 2), "max": round(u.sm_max, 2)},
            "vram_mib": {"p95": _round(u.vram_p95_mib), "peak": _round(u.vram_peak_mib)},
            "hours_observed": round(u.hours_observed, 3),
            "gpu_hours_held": round(u.gpu_hours_held, 3),
            "gpu_hours_idle": round(u.gpu_hours_idle, 3),
            "recommendation": {
                "action": self.action,
                "summary": self.summary,
                "evidence": list(self.evidence),
                "gpus_freed": round(self.gpus_freed, 3),
                "gpu_hours_freed": round(self.gpu_hours_freed, 3),
                "confidence": self.confidence,
                "share_of_window_observed": round(self.coverage, 3),
                "risk": self.risk,
                "mig_profile": self.mig_profile,
                "gpu_memory_utilization": self.gpu_memory_utilization,
            },
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _gib(mib: float | None) -> str:
    return "?" if mib is None else f"{mib / 1024:.1f} GiB"


def _gpus(n: float) -> str:
    return f"{n:g} GPU" if n == 1 else f"{n:g} GPUs"


def _needed(u: WorkloadUsage, p: RightsizePolicy) -> int:
    by_sm = math.ceil(round(u.sm_demand_gpus * 100 / p.target_sm_percent, 6))
    total = u.memory_total_mib
    concurrent_vram = sum((s.vram_peak_mib or 0) * s.hours for s in u.series) / u.hours_observed
    by_vram = math.ceil(round(concurrent_vram * p.vram_margin / total, 6)) if total else 0
    return max(1, by_sm, by_vram)


def _mig_profile(u: WorkloadUsage, p: RightsizePolicy) -> tuple[MigProfile, int] | None:
    total = u.memory_total_mib
    product = mig_product_for(u.product, total / 1024 if total else None)
    if product is None or u.vram_peak_mib is None:
        return None
    slices = max(profile.slices for profile in product.profiles)
    need_gb = u.vram_peak_mib * p.vram_margin / 1024
    need_share = u.sm_p95 / p.target_sm_percent
    fits = [
        f for f in product.profiles if f.slices < slices and f.memory_gb >= need_gb and f.slices / slices >= need_share
    ]
    best = min(fits, key=lambda f: (f.slices, f.memory_gb), default=None)
    return (best, slices) if best else None


def _confidence(u: WorkloadUsage, p: RightsizePolicy) -> str:
    if u.hours_observed >= p.high_hours:
        return "high"
    return "medium" if u.hours_observed >= p.medium_hours else "low"


def _pods_of_one_gpu(u: WorkloadUsage) -> bool:
    per_pod: dict[str, int] = {}
    for s in u.series:
        per_pod[s.pod] = per_pod.get(s.pod, 0) + 1
    return not u.on_mig and max(per_pod.values()) == 1 and round(u.gpus_held) >= 1


def _action(u: WorkloadUsage, p: RightsizePolicy) -> _Action:
    """(action, summary, GPUs freed, evidence beyond the common figures, extra fields)."""
    held = round(u.gpus_held, 2)
    if all(s.sm_p95 < p.idle_sm_p95 and s.sm_max < p.idle_sm_max for s in u.series):
        why = f"SM p95 {u.sm_p95:.1f} % and max {u.sm_max:.1f} % on every GPU (idle: p95 < {p.idle_sm_p95:g} %)"
        return "idle", "idle: scale to zero or delete", held, [why], {}
    needed = _needed(u, p)
    if not u.on_mig and needed < round(u.gpus_held):
        why = (
            f"needs {needed}: SM demand {u.sm_demand_gpus:.2f} GPUs at p95 ÷ {p.target_sm_percent:g} % target, "
            f"peak VRAM {_gib(u.vram_peak_mib)} × {p.vram_margin:g} margin"
        )
        return "fewer-gpus", f"{round(u.gpus_held)} → {_gpus(needed)}", held - needed, [why], {}
    if not _pods_of_one_gpu(u):
        return "keep", "keep", 0.0, [f"needs the {_gpus(round(u.gpus_held))} it holds"], {}
    return _one_gpu_action(u, p)


_Action = tuple[str, str, float, list[str], dict[str, Any]]


def _one_gpu_action(u: WorkloadUsage, p: RightsizePolicy) -> _Action:
    """A MIG slice, else sharing the GPU, else keep: for pods that each hold one whole GPU."""
    replicas = round(u.gpus_held)
    mig = _mig_profile(u, p)
    if mig is not None:
        profile, slices = mig
        why = (
            f"{profile.name}: {profile.memory_gb:g} GB ≥ peak {_gib(u.vram_peak_mib)} × {p.vram_margin:g}; "
            f"{profile.slices}/{slices} of the SMs ≥ SM p95 {u.sm_p95:.1f} % ÷ {p.target_sm_percent:g} %"
        )
        freed = replicas * (1 - profile.slices / slices)
        return "mig", f"MIG {profile.name}", freed, [why], {"mig_profile": profile.name}
    total = u.memory_total_mib
    if total and u.vram_peak_mib is not None and u.sm_p95 < p.share_sm_p95:
        share = math.ceil(round(u.vram_peak_mib * p.vram_margin / total * 100, 6)) / 100
        if share <= 0.5:
            action = "mps" if u.latency_sensitive else "time-slicing"
            why = (
                f"SM p95 {u.sm_p95:.1f} % < {p.share_sm_p95:g} %; peak {_gib(u.vram_peak_mib)} × {p.vram_margin:g} "
                f"= {share:.2f} of {_gib(total)}"
            )
            if action == "mps":
                why += "; latency-sensitive: MPS, not time-slicing"
            freed = replicas * (1 - max(share, u.sm_p95 / 100))
            summary = f"{'MPS' if action == 'mps' else 'time-slicing'}, --gpu-memory-utilization {share:.2f}"
            return action, summary, freed, [why], {"gpu_memory_utilization": share}
    return "keep", "keep", 0.0, [f"SM p95 {u.sm_p95:.1f} % and peak VRAM {_gib(u.vram_peak_mib)} need the GPU"], {}


def recommend(u: WorkloadUsage, window_hours: float, policy: RightsizePolicy | None = None) -> Advice:
    p = policy or RightsizePolicy()
    action, summary, freed, why, extra = _action(u, p)
    coverage = min(1.0, u.hours_observed / window_hours) if window_hours > 0 else 0.0
    common = (
        f"holds {u.gpus_held:.2f} GPUs, uses {u.gpus_used:.2f} (mean SM); "
        f"SM p50/p95/max {u.sm_p50:.1f}/{u.sm_p95:.1f}/{u.sm_max:.1f} %; "
        f"VRAM p95/peak {_gib(u.vram_p95_mib)}/{_gib(u.vram_peak_mib)}",
        f"{u.hours_observed:.1f} h observed of the {window_hours:g} h window ({coverage:.0%}); "
        f"{u.gpu_hours_idle:.1f} of {u.gpu_hours_held:.1f} GPU-hours held idle",
    )
    return Advice(
        u, action, summary, (*why, *common), max(0.0, freed), _confidence(u, p), coverage, RISKS[action], **extra
    )
