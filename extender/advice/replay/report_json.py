"""The `--json` document of a sweep, exactly as the contract reads it:

    {"trace": "...", "policies": {"<name>": {"seeds": {"42": {"alloc_pct": {"0": v, ..., "130": v}}, ...},
                                            "unallocated_at_100": {"mean": m, "sd": s},
                                            "pods": {"dropped": d, "held": h,
                                                     "wait_s": {"mean": a, "p95": b, "max": c}}}}}

`alloc_pct` is binned as the published results are (`metrics`); a bin no event fell near is null,
and so are mean and sd when no seed reached 100 % arrived. `pods`: per run (mean over the seeds) the
pods dropped and the pods held (every node they fit held them, so they waited), and the seconds those
waited, all seeds' held pods together (0 when none was held); for a policy with moves (``NAME+defragB``)
also the moves made and the GPUs given back (whole GPUs that moves left idle), per run.
"""

from __future__ import annotations

from typing import Any

from extender.advice.replay.metrics import unallocated_at
from extender.advice.replay.moves import split_defrag
from extender.advice.replay.specs import MILLI
from extender.advice.replay.sweep import Curve, RunCurves, Sweep
from extender.advice.replay.waiting import summarise_waits

__all__ = ["sweep_json", "unallocated_json"]


def unallocated_json(curves: list[Curve], x: int = 100) -> dict[str, float | None]:
    """{"mean", "sd"} of unallocated GPU % at X over seeds (null when no seed has a value there)."""
    try:
        summary = unallocated_at(curves, x)
    except ValueError:
        return {"mean": None, "sd": None}
    return {"mean": summary.mean, "sd": summary.sd}


def _pods(runs: list[RunCurves]) -> dict[str, Any]:
    waits = summarise_waits([run.waits for run in runs])
    out: dict[str, Any] = {
        "dropped": sum(run.dropped for run in runs) / len(runs),
        "held": waits.held_per_run,
        "wait_s": {"mean": waits.mean_s, "p95": waits.p95_s, "max": waits.max_s},
    }
    if split_defrag(runs[0].policy)[1] > 0:  # a policy with moves: how many, and the GPUs they gave back
        out["moves"] = sum(run.moves for run in runs) / len(runs)
        out["gpus_given_back"] = sum(run.given_back for run in runs) / len(runs) / MILLI
    return out


def sweep_json(sweep: Sweep) -> dict[str, Any]:
    """The contract's document for a sweep; policies and seeds in the order they were asked for."""
    policies: dict[str, Any] = {}
    for policy in sweep.policies:
        runs = sweep.curves(policy)
        policies[policy] = {
            "seeds": {
                str(run.seed): {"alloc_pct": {str(x): value for x, value in enumerate(run.alloc)}} for run in runs
            },
            "unallocated_at_100": unallocated_json([run.alloc for run in runs]),
            "pods": _pods(runs),
        }
    return {"trace": sweep.trace, "policies": policies}
