"""Memory held is not availability: a GPU free by allocation whose VRAM something holds anyway.

The kubelet counts such a GPU free (no pod holds it) and NVIDIA's device plugin hands it out like any
other, yet a leftover process or something outside Kubernetes keeps its memory: a pod given it gets
what is left, and at best shares the GPU with a stranger. Which GPUs are *held* is read by ``headroom``
with the policy's ``orphan_memory_share`` (the GPU's VRAM in use at or above that share, and no pod the
cluster model knows holds it; fresh readings only). A set that holds one:

- is refused when the pod declares, or is inferred to need (its model's weights), more memory per GPU
  than such a GPU has left; the reason names the GPU and the memory;
- otherwise ranks below every set that holds none: ``HELD`` is taken off its stranding level, so no
  blend and no clique term (which adds 1000 to a level of 0–100) lifts it above a clean set;
- where the advisor assumes the ideal placement it is steered: the set is chosen again without the
  held GPUs (``plan``'s ``avoid``), and kept if one fits. NVIDIA's device plugin picks by its own
  best-effort policy, which the advisor only predicts: there it cannot steer, and the reason says so.
"""

from __future__ import annotations

from collections.abc import Callable

from extender.cluster.state import NodeState
from extender.model.gpu_use import gpu_use
from extender.model.needs import MIB_PER_GB, fit_on, memory_need
from extender.model.readings import TelemetryBoard
from extender.placement import Placer
from extender.scoring.live import Headroom
from extender.scoring.plan import Plan, gib, plan
from extender.scoring.shape import AVOIDING, PlanKey, keep

__all__ = ["HELD", "UNSTEERED", "held_refusal", "ranked_below", "steer"]

# Taken off the stranding level of a set that holds a memory-held GPU (levels run 0–100, the clique
# term adds 1000): it then ranks below every set that holds none, whatever else it scores.
HELD = 10_000.0
UNSTEERED = (
    "NVIDIA's device plugin picks the set by its own best-effort policy: the advisor predicts it, cannot steer it"
)


def held_refusal(
    node: NodeState, key: PlanKey, gpus: tuple[int, ...], held: tuple[int, ...], board: TelemetryBoard
) -> str | None:
    """Why this set cannot take the pod (a held GPU has less memory left than the pod needs); None
    when the pod says nothing of its memory, or what it needs fits what each held GPU has left."""
    need = memory_need(key.request)
    topo = node.topology
    if need is None or topo is None:
        return None
    for g in held:
        gpu = topo.gpu(g)
        reading = board.reading(node.name, gpu)
        if reading is None or reading.memory_used_mib is None:
            continue
        total = reading.memory_total_mib or gpu.memory_mib or node.gpu_memory_mib
        if not total:
            continue
        left = max(0, round(total - reading.memory_used_mib))
        if fit_on(need, left).fits:
            continue
        if need.declared:
            wants = f"pod declares {gib(need.per_gpu_mib)} per GPU"
        else:
            model = key.request.model
            assert model is not None and need.weights_mib is not None  # an inferred need has both
            wants = f"{model.short_name()} {model.precision} weights ≈ {need.weights_mib / MIB_PER_GB:.0f} GB/GPU"
        use = gpu_use(g, reading, None).text
        return f"set {'-'.join(map(str, gpus))}: {use}, {gib(left)} left; {wants}{_why_this_set(key, len(gpus))}"
    return None


def ranked_below(key: PlanKey, k: int) -> str:
    """The note on a set that holds a memory-held GPU and still fits."""
    return f"ranked below every node whose set holds no memory-held GPU{_why_this_set(key, k)}"


def _why_this_set(key: PlanKey, k: int) -> str:
    if key.policy.placement == "nvidia-best-effort":
        return f" ({UNSTEERED})"
    return f" (no {k} free GPUs here avoid it)"


def steer(
    node: NodeState, key: PlanKey, found: Plan, room: Headroom, placer: Placer, room_of: Callable[[Plan], Headroom]
) -> tuple[Plan, Headroom, tuple[int, ...]] | None:
    """Under the ideal placement, the set chosen again without the held GPUs (and without any the new
    set turns out to hold, until none is left or no set fits): (its plan, its headroom, the GPUs it
    steers around); None when no set avoids them. Plans are kept on the node state by what they avoid."""
    if key.policy.placement != "ideal" or found.gpus is None or not room[3]:
        return None
    avoid = frozenset(room[3])
    while True:
        memo_key = (AVOIDING, key, avoid)
        alt: Plan | None = node.memo.get(memo_key)
        if alt is None:
            alt = plan(node, key.request, key.policy, placer, avoid)
            keep(node, memo_key, alt)
        if not alt.fits or alt.gpus is None:
            return None
        alt_room = room_of(alt)
        if not alt_room[3]:
            return alt, alt_room, tuple(sorted(avoid))
        avoid |= frozenset(alt_room[3])
