"""The performance page's table is drawn from wire.csv, not typed in."""

from __future__ import annotations

from pathlib import Path

from benchmarks.wire_table import fleets_markdown, read_wire_csv, wire_markdown

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


def test_each_fleet_gets_its_own_table_and_the_fleets_file_its_start_up_and_memory(tmp_path: Path) -> None:
    csv = tmp_path / "wire.csv"
    csv.write_text(
        "fleet," + HEADER.replace("\n", "") + "\n"
        "synthetic,False,500,filter,1,4000,4400,1.1,0.9,1.3,3.5\n"
        "mixed,False,500,filter,1,2000,2400,1.2,1.1,1.3,3.0\n"
    )
    table = wire_markdown(read_wire_csv(csv))
    assert table.index("**synthetic fleet**") < table.index("**mixed fleet**")
    assert "| 500 | filter | 1 | 2,000 | 2,400 | 1.20× (1.10–1.30) | not run |" in table
    fleets = tmp_path / "wire-fleets.csv"
    fleets.write_text(
        "fleet,nodes,startup_s,rss_ready_mib,rss_after_refresh_runs_mib,load1\nmixed,5000,3.86,123.4,140.2,3.1\n"
    )
    assert "| mixed | 5,000 | 3.9 s | 123 MiB | 140 MiB |" in fleets_markdown(fleets)
    assert "not in this run's files" in fleets_markdown(tmp_path / "none.csv")
