"""The performance page's table is drawn from wire.csv, not typed in."""

from __future__ import annotations

from pathlib import Path

from benchmarks.wire_table import read_wire_csv, wire_markdown

HEADER = "refresh,names,verb,connections,advisor_rps,noop_rps,ratio,ratio_min,ratio_max,load1\n"


def test_quiet_and_refreshing_turns_share_one_line(tmp_path: Path) -> None:
    csv = tmp_path / "wire.csv"
    # ratio = no-op req/s ÷ advisor req/s: 4,400 / 4,000 = 1.10
    csv.write_text(
        HEADER + "False,500,filter,1,4000,4400,1.1,0.9,1.3,3.5\nTrue,500,filter,1,3000,3600,1.2,1.0,1.5,4.0\n"
    )
    table = wire_markdown(read_wire_csv(csv))
    assert "| 500 | filter | 1 | 4,000 | 4,400 | 1.10× (0.90–1.30) | 1.20× (1.00–1.50) |" in table
    assert "Load average during the run: 3.5–4.0." in table


def test_the_committed_run_is_the_one_the_site_shows() -> None:
    rows = read_wire_csv()
    assert {(r.names, r.refreshing) for r in rows} >= {(500, False), (5000, True)}
