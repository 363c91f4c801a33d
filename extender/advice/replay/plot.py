"""The sweep as a PNG: unallocated GPU % against arrived demand (75-130 %), one curve per policy.

Each curve is the mean over seeds with a band of ± one sd, as the paper's Fig. 9a draws it.
matplotlib is imported here only, with the file-only Agg backend, so nothing else pays for it.
"""

from __future__ import annotations

from pathlib import Path

from extender.advice.replay.report_table import summary_at
from extender.advice.replay.sweep import Sweep

__all__ = ["PLOT_XS", "write_plot"]

PLOT_XS = tuple(range(75, 131))


def write_plot(sweep: Sweep, path: Path) -> None:
    """Draw the curves and save them as PNG at `path` (OSError if it cannot be written)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(8, 5), dpi=120)
    try:
        for policy in sweep.policies:
            curves = [run.alloc for run in sweep.curves(policy)]
            points = [(x, s) for x in PLOT_XS if (s := summary_at(curves, x, lambda v: 100.0 - v)) is not None]
            if not points:
                continue
            xs = [x for x, _ in points]
            means = [s.mean for _, s in points]
            (line,) = axes.plot(xs, means, label=policy, linewidth=1.6)
            low = [s.mean - s.sd for _, s in points]
            high = [s.mean + s.sd for _, s in points]
            axes.fill_between(xs, low, high, color=line.get_color(), alpha=0.18, linewidth=0)
        axes.set_xlim(PLOT_XS[0], PLOT_XS[-1])
        axes.set_xlabel("Arrived GPU demand (% of cluster GPU capacity)")
        axes.set_ylabel("Unallocated GPU (%)")
        seeds = len(sweep.seeds)
        axes.set_title(f"{sweep.trace}: mean ± sd over {seeds} seed{'' if seeds == 1 else 's'}")
        axes.grid(True, alpha=0.3)
        axes.legend(loc="upper right", fontsize="small")
        figure.tight_layout()
        figure.savefig(path, format="png")
    finally:
        pyplot.close(figure)
