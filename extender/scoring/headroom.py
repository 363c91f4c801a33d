"""Gathering, part two: how busy the chosen GPUs are now, from live telemetry.

Unknown or stale readings are neutral (0.5) and say so, as scheduler-plugins do, instead of failing.
"""

from __future__ import annotations

from extender.cluster.state import NodeState, format_time
from extender.model.gpu_use import gpu_use
from extender.model.readings import TelemetryBoard
from extender.scoring.policy import ScoringPolicy

__all__ = ["headroom"]


def headroom(
    node: NodeState, gpus: tuple[int, ...], telemetry: TelemetryBoard | None, policy: ScoringPolicy, now: float
) -> tuple[float, str, float, tuple[int, ...]]:
    """(value in [0, 1], a short note, until when this holds, the GPUs among them free by allocation
    whose VRAM is held all the same: ``held``). Unknown or stale readings are neutral."""
    forever = float("inf")
    if telemetry is None or node.topology is None or not gpus:
        return 0.5, "no telemetry", forever, ()
    values: list[float] = []
    notes: list[str] = []
    held: list[int] = []
    stale: list[float] = []
    valid_until = forever
    holders = node.holders
    for g in gpus:
        gpu = node.topology.gpu(g)
        reading = telemetry.reading(node.name, gpu)
        if reading is None:
            continue
        if telemetry.is_stale(reading, now):
            stale.append(telemetry.age(reading, now) or 0.0)
            valid_until = min(valid_until, now + 1.0)  # the age in the note moves on
            continue
        if reading.at is not None:
            valid_until = min(valid_until, reading.at + telemetry.max_age_s)
        parts = []
        if reading.sm_util is not None:
            parts.append(1.0 - min(100.0, max(0.0, reading.sm_util)) / 100.0)
        total = reading.memory_total_mib or gpu.memory_mib or node.gpu_memory_mib
        if reading.memory_used_mib is not None and total:
            used_share = min(1.0, reading.memory_used_mib / total)
            parts.append(1.0 - used_share)
            if used_share >= policy.orphan_memory_share and g not in holders and node.sharing == "whole GPU":
                notes.append(gpu_use(g, reading, None).text)  # free by allocation, yet in use
                held.append(g)
        if parts:
            values.append(min(parts))
    if not values:
        if stale:
            return 0.5, f"telemetry stale ({max(stale):.0f} s)", valid_until, ()
        seen = [t for t in (telemetry.last_seen(node.name, node.topology.gpu(g)) for g in gpus) if t is not None]
        if seen:
            return 0.5, f"no telemetry since {format_time(max(seen))}", valid_until, ()
        return 0.5, "no telemetry for these GPUs", valid_until, ()
    value = sum(values) / len(values)
    note = "; ".join(notes) if notes else f"live headroom {value:.0%}"
    if stale:
        note += f"; {len(stale)} GPU readings stale ({max(stale):.0f} s)"
    return value, note, valid_until, tuple(held)
