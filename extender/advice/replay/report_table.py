"""The sweep as text: unallocated GPU % and frag/total % at 50, 55, ..., 130 % arrived demand, per policy.

Each cell is mean ± sample sd over the seeds; a dash where no seed's run reached that much demand.
Below them, per policy: pods dropped, pods held (waited because every node they fit held them) and
how long those waited, and the seconds a run took.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from extender.advice.replay.metrics import Summary, summarise
from extender.advice.replay.sweep import Curve, RunCurves, Sweep
from extender.advice.replay.waiting import summarise_waits

__all__ = ["TABLE_XS", "format_cell", "format_sweep", "summary_at"]

TABLE_XS = tuple(range(50, 131, 5))
_X_WIDTH = 10


def summary_at(curves: Sequence[Curve], x: int, value: Callable[[float], float] = lambda v: v) -> Summary | None:
    """Mean ± sd over the seeds whose curve has a value at X (None when none has)."""
    values = [round(value(v), 2) for v in (curve[x] for curve in curves) if v is not None]
    return summarise(values) if values else None


def format_cell(summary: Summary | None) -> str:
    """`4.77 ± 0.11`, or a dash."""
    return "—" if summary is None else f"{summary.mean:.2f} ± {summary.sd:.2f}"


def _grid(title: str, sweep: Sweep, cell: Callable[[str, int], Summary | None]) -> list[str]:
    cells = {(p, x): format_cell(cell(p, x)) for p in sweep.policies for x in TABLE_XS}
    widths = {p: max(len(p), *(len(cells[(p, x)]) for x in TABLE_XS)) for p in sweep.policies}
    lines = [title, "arrived %".rjust(_X_WIDTH) + "".join("  " + p.rjust(widths[p]) for p in sweep.policies)]
    for x in TABLE_XS:
        lines.append(str(x).rjust(_X_WIDTH) + "".join("  " + cells[(p, x)].rjust(widths[p]) for p in sweep.policies))
    return lines


def _held(runs: Sequence[RunCurves]) -> str:
    """`` 12.5 pods held (waited mean 210 s, p95 352 s, max 352 s),`` or nothing when none was."""
    waits = summarise_waits([run.waits for run in runs])
    if not waits.held_per_run:
        return ""
    spread = f"mean {waits.mean_s:.0f} s, p95 {waits.p95_s:.0f} s, max {waits.max_s:.0f} s"
    return f" {waits.held_per_run:.1f} pods held (waited {spread}),"


def format_sweep(sweep: Sweep) -> str:
    """Both tables, and per policy the pods dropped and the seconds a run took (means over seeds)."""
    seeds = len(sweep.seeds)
    alloc = {p: [run.alloc for run in sweep.curves(p)] for p in sweep.policies}
    frag = {p: [run.frag for run in sweep.curves(p)] for p in sweep.policies}
    lines = [f"{sweep.trace}: {len(sweep.policies)} policies x {seeds} seed(s), mean ± sd over seeds", ""]
    lines += _grid("Unallocated GPU %", sweep, lambda p, x: summary_at(alloc[p], x, lambda v: 100.0 - v))
    lines += [""]
    lines += _grid("Frag/total % (fragmented GPU as % of all GPU)", sweep, lambda p, x: summary_at(frag[p], x))
    lines += [""]
    for policy in sweep.policies:
        runs = sweep.curves(policy)
        dropped = sum(run.dropped for run in runs) / len(runs)
        seconds = sum(run.seconds for run in runs) / len(runs)
        lines.append(f"{policy}: {dropped:.0f} pods dropped,{_held(runs)} {seconds:.1f} s per run")
    return "\n".join(lines)
