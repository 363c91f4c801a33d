"""What `gpu-advisor replay` prints: the tables' arithmetic, the published comparison, the progress bar."""

from __future__ import annotations

import io

from extender.advice.replay.openb import PublishedRun
from extender.advice.replay.progress import ProgressBar, ProgressLog, progress_line
from extender.advice.replay.published import compare_published
from extender.advice.replay.report_json import sweep_json
from extender.advice.replay.report_table import format_sweep
from extender.advice.replay.sweep import RunCurves, Sweep


def _curve(at: dict[int, float]) -> tuple[float | None, ...]:
    return tuple(at.get(x) for x in range(131))


def _sweep() -> Sweep:
    """FGD on two seeds: alloc 95.0 / 95.5 % and frag 4.0 / 5.0 % at X = 50..100; nothing beyond 100."""
    xs = range(50, 101)
    runs = {
        ("FGD", 42): RunCurves("FGD", 42, _curve(dict.fromkeys(xs, 95.0)), _curve(dict.fromkeys(xs, 4.0)), 10, 2.0),
        ("FGD", 43): RunCurves("FGD", 43, _curve(dict.fromkeys(xs, 95.5)), _curve(dict.fromkeys(xs, 5.0)), 20, 4.0),
    }
    return Sweep("default", ("FGD",), (42, 43), runs)


def test_a_cell_is_the_mean_and_sample_sd_over_seeds_and_a_dash_past_the_runs() -> None:
    lines = format_sweep(_sweep()).splitlines()
    unallocated = lines[lines.index("Unallocated GPU %") + 2 :][:17]
    # every 5 % from 50 to 130: 17 rows
    assert [row.split()[0] for row in unallocated] == [str(x) for x in range(50, 131, 5)]
    # unallocated 100 - 95.0 = 5.0 and 100 - 95.5 = 4.5: mean 4.75, sd √((0.25² + 0.25²) / 1) = 0.35
    assert unallocated[0].split() == ["50", "4.75", "±", "0.35"]
    assert unallocated[10].split() == ["100", "4.75", "±", "0.35"]
    assert unallocated[11].split() == ["105", "—"]
    frag = lines[lines.index("Frag/total % (fragmented GPU as % of all GPU)") + 2 :][:17]
    # frag 4.0 and 5.0: mean 4.5, sd √((0.5² + 0.5²) / 1) = 0.71
    assert frag[0].split() == ["50", "4.50", "±", "0.71"]
    # dropped (10 + 20) / 2 = 15, seconds (2 + 4) / 2 = 3
    assert lines[-1] == "FGD: 15 pods dropped, 3.0 s per run"


def _held_sweep() -> Sweep:
    """The advisor on two seeds: 3 pods held on seed 42 (waited 100, 200, 352 s), 1 on 43 (352 s)."""
    curve = _curve(dict.fromkeys(range(50, 131), 96.0))
    runs = {
        ("advisor", 42): RunCurves("advisor", 42, curve, curve, 5, 20.0, (100.0, 200.0, 352.0)),
        ("advisor", 43): RunCurves("advisor", 43, curve, curve, 7, 22.0, (352.0,)),
    }
    return Sweep("default", ("advisor",), (42, 43), runs)


def test_held_pods_and_their_waits_are_counted_beside_the_pods_dropped() -> None:
    # held (3 + 1) / 2 = 2.0 per run; waits pooled 100, 200, 352, 352: mean 1004 / 4 = 251, p95 the
    # ⌈0.95 × 4⌉ = 4th sorted = 352, max 352; dropped (5 + 7) / 2 = 6; seconds (20 + 22) / 2 = 21
    line = format_sweep(_held_sweep()).splitlines()[-1]
    assert line == "advisor: 6 pods dropped, 2.0 pods held (waited mean 251 s, p95 352 s, max 352 s), 21.0 s per run"
    pods = sweep_json(_held_sweep())["policies"]["advisor"]["pods"]
    assert pods == {"dropped": 6.0, "held": 2.0, "wait_s": {"mean": 251.0, "p95": 352.0, "max": 352.0}}


def test_the_json_document_of_a_hand_made_sweep() -> None:
    doc = sweep_json(_sweep())
    fgd = doc["policies"]["FGD"]
    assert fgd["seeds"]["42"]["alloc_pct"]["100"] == 95.0
    assert fgd["seeds"]["43"]["alloc_pct"]["101"] is None
    assert fgd["unallocated_at_100"]["mean"] == 4.75
    assert round(fgd["unallocated_at_100"]["sd"], 4) == 0.3536


def test_the_published_figure_stands_beside_the_replayed_one_with_the_difference() -> None:
    published = [
        PublishedRun("default", "06-FGD", 42, (95.25,) * 131),
        PublishedRun("default", "06-FGD", 43, (95.25,) * 131),
        PublishedRun("default", "06-FGD", 44, (90.0,) * 131),  # a seed the replay did not run: left out
    ]
    lines = compare_published(_sweep(), published).splitlines()
    # replayed 4.75 ± 0.35; published over seeds 42 and 43: 100 - 95.25 = 4.75 ± 0.00; difference 0.00
    assert lines[-1].split() == ["FGD", "4.75", "±", "0.35", "4.75", "±", "0.00", "+0.00", "2"]


def test_a_policy_the_paper_did_not_run_says_so() -> None:
    sweep = _sweep()
    renamed = Sweep(sweep.trace, ("advisor",), sweep.seeds, {("advisor", s): r for (_, s), r in sweep.runs.items()})
    assert compare_published(renamed, []).splitlines()[-1].split()[-2:] == ["not", "published"]


def test_the_progress_line_shows_runs_done_time_and_what_is_left() -> None:
    # 3 of 8 runs in 42 s: 24 × 3 // 8 = 9 marks; 42 / 3 × 5 = 70 s left
    assert progress_line(3, 8, 42.0, "FGD seed 44") == (
        "[#########---------------] 3/8 runs  0m42s, about 1m10s left  (FGD seed 44)"
    )
    assert progress_line(8, 8, 125.0) == "[########################] 8/8 runs  2m05s"


def test_the_bar_redraws_in_place_and_ends_its_line() -> None:
    stream = io.StringIO()
    ticks = iter([0.0, 0.0, 10.0, 20.0])
    bar = ProgressBar(2, stream, clock=lambda: next(ticks))
    for run in _sweep().runs.values():
        bar.update(run)
    bar.close()
    drawn = stream.getvalue()
    assert drawn.count("\r") == 3 and drawn.endswith("\n")
    assert "1/2 runs  0m10s, about 0m10s left  (FGD seed 42)" in drawn
    assert drawn.rstrip().endswith("2/2 runs  0m20s  (FGD seed 43)")


def test_the_log_writes_a_whole_line_per_finished_run() -> None:
    stream = io.StringIO()
    ticks = iter([0.0, 42.0, 125.0])
    log = ProgressLog(12, stream, clock=lambda: next(ticks))
    log.step("default FGD seed 44")
    log.step("multigpu50 BestFit seed 42")
    log.close()
    assert (
        stream.getvalue() == " 1/12 runs  0m42s  default FGD seed 44\n 2/12 runs  2m05s  multigpu50 BestFit seed 42\n"
    )
