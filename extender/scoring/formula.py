"""The score itself: small pure functions of plain numbers, kept apart from gathering their inputs.

    score = round(10 × Σ weight_c × value_c / Σ weight_c)          (clamped to 0..10)

    set            ½ × placement score / best score any k GPUs of the empty node reach
                   + ½ × share of the set's GPU pairs joined by NVLink      (k = 1: 1)
    fragmentation  share of the node's 2-, 4- and 8-GPU capability that survives the placement
    headroom       per chosen GPU min(1 − SM%/100, free VRAM share), averaged; unknown or stale: 0.5
    numa           1 if the chosen GPUs share a NUMA node, 0 if not, 0.5 if unknown
    packing        binpack: share of the node's GPUs in use afterwards; spread: share left free
    stranding      FGD's level of what the placement strands against the learned mix, / 100
                   (``stranding``; only on nodes that offer GPU sharing, left out elsewhere)

A component a node cannot inform (no topology, MIG, time-slicing) is neutral: 0.5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

__all__ = ["NEUTRAL", "blend", "fragmentation", "node_score", "numa", "packing", "set_value"]

NEUTRAL = 0.5
_ONLY_WHERE_INFORMED = "stranding"


def blend(components: Mapping[str, float], weights: Mapping[str, float], total_weight: float) -> float:
    """The weighted mean of the components in [0, 1]; a component not given counts as neutral, except
    stranding, which is left out where not given (so nodes without GPU sharing score as before)."""
    if _ONLY_WHERE_INFORMED not in components and _ONLY_WHERE_INFORMED in weights:
        total_weight -= weights[_ONLY_WHERE_INFORMED]
        used = [c for c in weights if c != _ONLY_WHERE_INFORMED]
    else:
        used = list(weights)
    if total_weight <= 0:
        return NEUTRAL
    return sum(weights[c] * components.get(c, NEUTRAL) for c in used) / total_weight


def node_score(components: Mapping[str, float], weights: Mapping[str, float], total_weight: float) -> int:
    """The weighted mean of the components, on 0..10 (see :func:`blend`)."""
    return max(0, min(10, round(10 * blend(components, weights, total_weight))))


def set_value(k: int, score: int, best: int, nvlink_share: float) -> float:
    # Relative to this node's best, so a node is judged by the set it hands out, and absolute, so
    # the best set of a PCIe-only node never looks as good as an NVLink set.
    if k == 1:
        return 1.0
    return 0.5 * (score / best if best else 0.0) + 0.5 * nvlink_share


def fragmentation(kept: Iterable[float], leaves_any: bool) -> float:
    """The mean share kept of each set size the node could serve before; an exact fit strands
    nothing (what it uses up is packing's business, not fragmentation's)."""
    shares = list(kept)
    return 1.0 if not leaves_any or not shares else sum(shares) / len(shares)


def numa(numa_nodes: set[int | None]) -> float:
    return NEUTRAL if None in numa_nodes else (1.0 if len(numa_nodes) == 1 else 0.0)


def packing(mode: Literal["binpack", "spread"], used_after: int, total: int) -> float:
    if total <= 0:
        return NEUTRAL
    share = min(1.0, used_after / total)
    return share if mode == "binpack" else 1.0 - share
