"""The plot of benchmarks/wire.py: advisor and no-op requests/s by candidate count, per verb and connection
count, warm and while telemetry refreshes (run by wire.py, not on its own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

VERBS = ("filter", "prioritize")


def plot(rows: list[dict[str, Any]], path: Path, fleet: str = "synthetic") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    for ax, (verb, connections) in zip(axes.flat, [(v, c) for v in VERBS for c in (1, 8)], strict=True):
        for refresh, style in ((False, "-"), (True, "--")):
            sel = [r for r in rows if r["verb"] == verb and r["connections"] == connections and r["refresh"] == refresh]
            xs = [r["names"] for r in sel]
            tag = " (telemetry refreshes)" if refresh else ""
            ax.plot(xs, [r["advisor_rps"] for r in sel], "o" + style, color="tab:blue", label="advisor" + tag)
            ax.plot(xs, [r["noop_rps"] for r in sel], "s" + style, color="tab:gray", label="no-op" + tag)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"/scheduler/{verb}, {connections} connection{'s' if connections > 1 else ''}")
        ax.set_xlabel("candidate node names")
        ax.set_ylabel("requests/s")
        ax.grid(True, which="both", alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"gpu-advisor over loopback (wrk) vs a no-op answering the same bytes: {fleet} fleet")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
