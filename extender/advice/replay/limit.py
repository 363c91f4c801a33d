"""How far each policy is from a bound on the same arrivals: the `--limit FILE` of `gpu-advisor replay`.

A bound is what no placement of those pods can beat, worked out elsewhere (an offline optimum, an LP
bound): unallocated GPU % at 100 % arrived demand, seed by seed. The file is JSON:

    {"trace": "default", "seeds": {"42": 3.09, "43": 3.09, "44": 3.12, "50": 3.08}}

``trace`` is optional; when given it must name the replayed trace (the pod file's name without
``openb_pod_list_``), so a bound is never read against other pods. Per seed the distance is the
policy's unallocated % at 100 % (two decimals, as the table shows it) minus the bound, and a policy's
distance is the mean over the seeds that have both; seeds without a bound are left out and named.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extender.advice.replay.openb import ReplayInputError
from extender.advice.replay.sweep import Sweep

__all__ = [
    "Distance",
    "Limit",
    "check_limit",
    "distances",
    "format_distances",
    "limit_json",
    "load_limit",
    "parse_limit",
]

_AT = 100  # % arrived demand the bound is stated at


@dataclass(frozen=True, slots=True)
class Limit:
    """A bound on unallocated GPU % at 100 % arrived, by seed, for one trace (None: not stated)."""

    trace: str | None
    seeds: Mapping[int, float]


@dataclass(frozen=True, slots=True)
class Distance:
    """One policy against the bound: unallocated % minus the bound per seed, and their mean (None:
    no seed with a bound reached 100 % arrived)."""

    seeds: Mapping[int, float]
    mean: float | None


def parse_limit(document: Any, source: str) -> Limit:
    """A bound document, checked: every problem is a `ReplayInputError` naming ``source``."""
    if not isinstance(document, dict):
        raise ReplayInputError(f'{source}: expected a JSON object with "seeds"')
    unknown = sorted(set(document) - {"trace", "seeds"})
    if unknown:
        raise ReplayInputError(f'{source}: unknown key(s) {", ".join(unknown)}; expected "trace" and "seeds"')
    trace = document.get("trace")
    if trace is not None and (not isinstance(trace, str) or not trace):
        raise ReplayInputError(f'{source}: "trace" must be a trace name such as "default"')
    seeds = document.get("seeds")
    if not isinstance(seeds, dict) or not seeds:
        raise ReplayInputError(f'{source}: "seeds" must map seeds to unallocated GPU %, e.g. {{"42": 3.09}}')
    bounds: dict[int, float] = {}
    for seed, value in seeds.items():
        if not seed.isdigit():
            raise ReplayInputError(f"{source}: seed {seed!r} is not a whole number")
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 100.0:
            raise ReplayInputError(f"{source}: seed {seed}: {value!r} is not a percentage (0 to 100)")
        bounds[int(seed)] = float(value)
    return Limit(trace, bounds)


def load_limit(path: Path) -> Limit:
    """Read and check a bound file."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ReplayInputError(f"--limit: {path}: cannot read ({exc.strerror or exc})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReplayInputError(f"--limit: {path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    return parse_limit(document, f"--limit: {path}")


def check_limit(limit: Limit, trace: str, seeds: list[int], source: str) -> None:
    """Refuse, before any run, a bound for other pods or one that shares no seed with the sweep."""
    if limit.trace is not None and limit.trace != trace:
        raise ReplayInputError(f"{source}: the bound is for trace {limit.trace!r}, the pods are {trace!r}")
    if not set(seeds) & set(limit.seeds):
        have = ", ".join(str(s) for s in sorted(limit.seeds))
        raise ReplayInputError(f"{source}: no bound for any replayed seed (the file has seeds {have})")


def distances(sweep: Sweep, limit: Limit) -> dict[str, Distance]:
    """Each policy's distance to the bound, seed by seed and on average."""
    out: dict[str, Distance] = {}
    for policy in sweep.policies:
        per_seed: dict[int, float] = {}
        for run in sweep.curves(policy):
            allocated = run.alloc[_AT] if len(run.alloc) > _AT else None
            if run.seed in limit.seeds and allocated is not None:
                per_seed[run.seed] = round(round(100.0 - allocated, 2) - limit.seeds[run.seed], 2)
        out[policy] = Distance(per_seed, statistics.fmean(per_seed.values()) if per_seed else None)
    return out


def _bounded(sweep: Sweep, limit: Limit) -> list[int]:
    return [seed for seed in sweep.seeds if seed in limit.seeds]


def format_distances(sweep: Sweep, limit: Limit) -> str:
    """Lines for the report: the bound's mean over the seeds it shares with the sweep, each policy's
    mean unallocated % and distance over those seeds, and the seeds left out."""
    shared = _bounded(sweep, limit)
    bound = statistics.fmean(limit.seeds[s] for s in shared)
    lines = [f"Distance to the limit at {_AT} % arrived (seeds {', '.join(map(str, shared))}; limit {bound:.2f} %)"]
    width = max(len(p) for p in sweep.policies)
    for policy, distance in distances(sweep, limit).items():
        if distance.mean is None:
            lines.append(f"{policy.rjust(width)}  —")
            continue
        unallocated = statistics.fmean(limit.seeds[s] + d for s, d in distance.seeds.items())
        away = f"{distance.mean:+.2f} points from the limit"
        lines.append(f"{policy.rjust(width)}  {unallocated:.2f} % unallocated, {away}")
    left_out = [s for s in sweep.seeds if s not in limit.seeds]
    if left_out:
        lines.append(f"no bound for seed(s) {', '.join(map(str, left_out))}: left out of the distance")
    return "\n".join(lines)


def limit_json(sweep: Sweep, limit: Limit) -> dict[str, Any]:
    """The `--json` document's additions: ``limit`` (the bound as read) and, per policy,
    ``distance_to_limit`` ({"seeds": {"42": d, ...}, "mean": m}; m null when no seed has both)."""
    per_policy = {
        policy: {
            "seeds": {str(seed): d for seed, d in distance.seeds.items()},
            "mean": distance.mean,
        }
        for policy, distance in distances(sweep, limit).items()
    }
    bound = {"trace": limit.trace, "seeds": {str(seed): v for seed, v in sorted(limit.seeds.items())}}
    return {"limit": bound, "distance_to_limit": per_policy}
