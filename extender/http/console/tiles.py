"""One GPU as the console draws it: a tile with a state, its live readings and who holds it.

The state separates *allocated* from *used*, the distinction the console exists for: a GPU the
kubelet has handed out but whose SMs sit idle is ``allocated`` (not ``busy``), and a GPU free by the
kubelet's count whose memory is held anyway (a leftover process) is ``memory-held``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from extender.cluster.state import NodeState
from extender.model.readings import GpuReading, TelemetryBoard

__all__ = ["BUSY_SM_PCT", "HELD_MEMORY_SHARE", "TileState", "gpu_tiles", "tile_state"]

TileState = Literal["free", "allocated", "busy", "memory-held", "unhealthy"]
BUSY_SM_PCT = 10.0  # diagnose's idle line: below it an allocated GPU is counted as idle
HELD_MEMORY_SHARE = 0.1  # a free GPU with more of its VRAM in use than this is held by something


def tile_state(allocated: bool, reading: GpuReading | None, stale: bool, total_mib: float | None) -> TileState:
    """Unhealthy when its telemetry stopped; otherwise allocation first, then what the reading says."""
    if reading is not None and stale:
        return "unhealthy"
    sm = reading.sm_util if reading is not None else None
    used = reading.memory_used_mib if reading is not None else None
    if allocated:
        return "busy" if sm is not None and sm >= BUSY_SM_PCT else "allocated"
    if used is not None and total_mib and used / total_mib > HELD_MEMORY_SHARE:
        return "memory-held"
    return "free"


def _allocated(node: NodeState) -> set[int]:
    topo = node.topology
    if topo is None or node.free_gpus is None:
        return set()
    return set(topo.indices) - set(node.free_gpus)


def _whole_readings(node: NodeState, board: TelemetryBoard | None) -> Mapping[int, GpuReading]:
    if board is None:
        return {}
    return {int(key[1:]): r for key, r in board.of_node(node.name) if ":" not in key}


def gpu_tiles(node: NodeState, board: TelemetryBoard | None, now: float) -> list[dict[str, Any]]:
    """Every physical GPU of a node with a known topology, in index order."""
    topo = node.topology
    if topo is None:
        return []
    allocated, readings = _allocated(node), _whole_readings(node, board)
    tiles = []
    for gpu in topo.gpus:
        reading = readings.get(gpu.index)
        stale = board is not None and reading is not None and board.is_stale(reading, now)
        total = (reading.memory_total_mib if reading else None) or gpu.memory_mib or node.gpu_memory_mib
        tiles.append(
            {
                "index": gpu.index,
                "state": tile_state(gpu.index in allocated, reading, stale, total),
                "sm_pct": None if reading is None or reading.sm_util is None else round(reading.sm_util, 1),
                "vram_used_mib": None if reading is None else reading.memory_used_mib,
                "vram_total_mib": total,
                "numa": gpu.numa_node,
                "mig": [m.profile for m in gpu.mig] if gpu.mig else [],
                "pod": (reading.pod if reading else None) or node.holders.get(gpu.index),
            }
        )
    return tiles
