"""Backfill a month of 30 s scrapes in minutes: one OpenMetrics file per TSDB block, converted in parallel.

``promtool tsdb create-blocks-from openmetrics`` maps the whole input and parses all of it once per
block it writes (``--max-block-duration=72h`` gives 54 h blocks: 14 passes over a 30-day file), one
block after the other. Here each file holds exactly one block's time range, so every line is parsed
once, and files are converted ``jobs`` at a time while the next one is written. A series that holds one
value over a stretch (most of a benchmark's) is written with one ``str.join`` over the timestamps
instead of a Python step per line.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.rightsize.history import Gpu, _label_text
from tests.usage.history import Series

__all__ = ["BLOCK_S", "backfill_blocks"]

# promtool's block for --max-block-duration=72h: the largest of 2 h × 3^k not over it (2, 6, 18, 54 h).
BLOCK_S = 54 * 3600
_DCGM = ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE")


@dataclass(frozen=True)
class _Line:
    head: str  # name{labels}
    cycle: tuple[float, ...]  # the value at scrape i is cycle[i % len(cycle)] from ``on``, 0 before
    first: int = 0
    end: int = 0
    on: int = 0
    off: int = 0  # 0 again from this scrape (0: never)


def _lines(kube: Sequence[Series], gpus: Sequence[Gpu], samples: int) -> dict[str, list[_Line]]:
    """Every series by metric name (an OpenMetrics family is written in one piece)."""
    out: dict[str, list[_Line]] = {}
    for name in _DCGM:
        for gpu in gpus:
            if name == "DCGM_FI_PROF_SM_ACTIVE":
                cycle = gpu.sm_cycle
            elif name == "DCGM_FI_DEV_FB_USED":
                cycle = gpu.vram_cycle
            else:
                cycle = tuple(gpu.total_mib - used for used in gpu.vram_cycle)
            end = gpu.first + (gpu.samples or samples - gpu.first)
            out.setdefault(name, []).append(_Line(f"{name}{{{_label_text(gpu.labels)}}}", cycle, gpu.first, end))
    for s in sorted(kube, key=lambda s: s.name):
        end = samples if s.until is None else s.until
        line = _Line(f"{s.name}{{{_label_text(s.labels)}}}", (s.value,), s.first, end, s.on, s.off or 0)
        out.setdefault(s.name, []).append(line)
    return out


def _text(line: _Line, stamps: Sequence[str], lo: int, hi: int) -> Iterator[str]:
    """Scrapes ``lo``..``hi`` of one series (``stamps[i - lo]`` is scrape i's time)."""
    a, b = max(lo, line.first), min(hi, line.end)
    if len(line.cycle) != 1:
        for i in range(a, b):
            value = line.cycle[i % len(line.cycle)] if i >= line.on else 0
            yield f"{line.head} {value:g} {stamps[i - lo]}\n"
        return
    off = line.off or b
    stretches = ((a, min(b, line.on), 0.0), (max(a, line.on), min(b, off), line.cycle[0]), (max(a, off), b, 0.0))
    for x, y, value in stretches:
        if x < y:
            head = f"{line.head} {value:g} "
            yield head + ("\n" + head).join(stamps[x - lo : y - lo]) + "\n"


def _write(path: Path, families: dict[str, list[_Line]], start: int, interval_s: int, lo: int, hi: int) -> None:
    stamps = [str(start + i * interval_s) for i in range(lo, hi)]
    with path.open("w") as out:
        for name, lines in families.items():
            out.write(f"# TYPE {name} gauge\n")
            for line in lines:
                out.writelines(_text(line, stamps, lo, hi))
        out.write("# EOF\n")


def _spans(start: int, samples: int, interval_s: int) -> list[tuple[int, int]]:
    """Scrape index ranges, one per block (blocks start at multiples of BLOCK_S since the epoch)."""
    spans, lo = [], 0
    while lo < samples:
        block_end = (start + lo * interval_s) // BLOCK_S * BLOCK_S + BLOCK_S
        hi = min(samples, -(-(block_end - start) // interval_s))
        spans.append((lo, hi))
        lo = hi
    return spans


def backfill_blocks(
    promtool: str,
    kube: Sequence[Series],
    gpus: Sequence[Gpu],
    start: int,
    samples: int,
    interval_s: int,
    workdir: Path,
    jobs: int = 0,
) -> Path:
    """The same history as ``tests.usage.history.history`` in TSDB blocks under ``workdir/data``."""
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    families = _lines(kube, gpus, samples)
    running: list[tuple[subprocess.Popen[bytes], Path]] = []

    def wait_one() -> None:
        proc, path = running.pop(0)
        _, err = proc.communicate()
        path.unlink()
        if proc.returncode:
            raise RuntimeError(f"promtool failed on {path.name}: {err.decode(errors='replace')[-2000:]}")

    for k, (lo, hi) in enumerate(_spans(start, samples, interval_s)):
        path = workdir / f"block-{k:03d}.om"
        _write(path, families, start, interval_s, lo, hi)
        while len(running) >= (jobs or os.cpu_count() or 1):
            wait_one()
        cmd = [promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=72h", str(path), str(data)]
        running.append((subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), path))
    while running:
        wait_one()
    return data
