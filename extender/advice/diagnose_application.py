"""diagnose's last step, for a pod that runs (or could): is its GPU starved? SM cycling 0 ↔ high is
CPU-bound (an input pipeline), flat low is I/O-bound or waiting."""

from __future__ import annotations

from itertools import pairwise

from extender.model.readings import TelemetryBoard

__all__ = ["IDLE_SM", "application_step", "sm_pattern"]

IDLE_SM = 10.0  # percent


def sm_pattern(history: tuple[float, ...]) -> str | None:
    """'cycling', 'flat-low', 'busy' or None (too few samples)."""
    if len(history) < 4:
        return None
    high, low = max(history), min(history)
    swings = sum(1 for a, b in pairwise(history) if abs(a - b) >= 40)
    if high >= 60 and low <= IDLE_SM and swings >= 2:
        return "cycling"
    if high < 20:
        return "flat-low"
    return "busy"


def application_step(key: str, telemetry: TelemetryBoard | None, node: str) -> tuple[bool, str, tuple[str, ...]]:
    """(whether the application explains it, the finding, the evidence: SM history per GPU)."""
    readings = telemetry.of_pod(key) if telemetry is not None else []
    if not readings:
        return False, f"running on {node}; no GPU telemetry attributed to the pod to judge it", ()
    evidence = []
    patterns = []
    for where, reading in readings:
        pattern = sm_pattern(reading.sm_history)
        patterns.append(pattern)
        history = ", ".join(f"{x:.0f}" for x in reading.sm_history[-8:])
        evidence.append(f"{where}: SM {pattern or 'unknown'} [{history}]")
    if "cycling" in patterns:
        return (
            True,
            "SM cycles between idle and busy: the job is CPU-bound (input pipeline, "
            "data loading); add loader workers or CPU, prefetch to the GPU",
            tuple(evidence),
        )
    if patterns and all(p == "flat-low" for p in patterns):
        return (
            True,
            "SM stays low: the job is I/O-bound or waiting (storage, network, a lock); profile its input path",
            tuple(evidence),
        )
    return False, "the GPUs are busy: the application uses them", tuple(evidence)
