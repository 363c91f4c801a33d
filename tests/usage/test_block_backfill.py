"""The benchmark's fast backfill writes the very samples ``history`` does, one file per TSDB block."""

from __future__ import annotations

from pathlib import Path

from tests.usage import block_backfill
from tests.usage.block_backfill import BLOCK_S
from tests.usage.history import history
from tests.usage.test_real_history import _dcgm, _kube


def test_each_file_holds_one_blocks_samples_and_together_they_are_the_whole_history(tmp_path: Path) -> None:
    # 1,440 scrapes every 60 s from 10 h before a block boundary: the first 600 (10 h) in one block's
    # file, the other 840 in the next one's; the infer pod's series turn to 1 at scrape 720, inside the second.
    start, samples, interval = 20 * BLOCK_S - 10 * 3600, 1440, 60
    assert block_backfill._spans(start, samples, interval) == [(0, 600), (600, 1440)]
    families = block_backfill._lines(_kube(), _dcgm(), samples)
    written: list[str] = []
    for k, (lo, hi) in enumerate(block_backfill._spans(start, samples, interval)):
        path = tmp_path / f"{k}.om"
        block_backfill._write(path, families, start, interval, lo, hi)
        lines = path.read_text().splitlines(keepends=True)
        assert lines[-1] == "# EOF\n"
        stamps = {int(line.rsplit(" ", 1)[1]) for line in lines if not line.startswith("#")}
        assert {t // BLOCK_S for t in stamps} == {20 + k - 1}  # every sample inside the file's block
        written += [line for line in lines if not line.startswith("#")]
    expected = [line for line in history(_kube(), _dcgm(), start, samples, interval) if not line.startswith("#")]
    assert sorted(written) == sorted(expected) and len(written) == len(expected)
