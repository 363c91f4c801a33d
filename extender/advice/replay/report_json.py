"""The `--json` document of a sweep, exactly as the contract reads it:

    {"trace": "...", "policies": {"<name>": {"seeds": {"42": {"alloc_pct": {"0": v, ..., "130": v}}, ...},
                                            "unallocated_at_100": {"mean": m, "sd": s}}}}

`alloc_pct` is binned as the published results are (`metrics`); a bin no event fell near is null,
and so are mean and sd when no seed reached 100 % arrived.
"""

from __future__ import annotations

from typing import Any

from extender.advice.replay.metrics import unallocated_at
from extender.advice.replay.sweep import Curve, Sweep

__all__ = ["sweep_json", "unallocated_json"]


def unallocated_json(curves: list[Curve], x: int = 100) -> dict[str, float | None]:
    """{"mean", "sd"} of unallocated GPU % at X over seeds (null when no seed has a value there)."""
    try:
        summary = unallocated_at(curves, x)
    except ValueError:
        return {"mean": None, "sd": None}
    return {"mean": summary.mean, "sd": summary.sd}


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
        }
    return {"trace": sweep.trace, "policies": policies}
