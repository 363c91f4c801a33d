"""MkDocs hooks: the performance page's figures come from the benchmark's own output files.

`<!-- include: wire-table -->` in a page becomes the table of benchmarks/results/wire.csv, and the plot
benchmarks/results/wire.png is published beside the pages as `wire.png`, so the numbers on the site are
always those of the last committed run. The page links the plots where they are committed
(`../benchmarks/results/wire.png`), so it reads the same on its own; the site links its copies.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# MkDocs loads this file by path, so the repository root (holding benchmarks/) is not on sys.path.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.wire_table import WIRE_CSV, fleets_markdown, read_wire_csv, wire_markdown  # noqa: E402

MARKER = "<!-- include: wire-table -->"
FLEETS = "<!-- include: wire-fleets -->"


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, "wire.png", abs_src_path=str(WIRE_CSV.with_name("wire.png"))))
    mixed = WIRE_CSV.with_name("wire-mixed.png")
    if mixed.is_file():
        files.append(File.generated(config, "wire-mixed.png", abs_src_path=str(mixed)))
    return files


RESULTS_LINK = "](../benchmarks/results/"  # a plot as the page links it, outside the site's own files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = markdown.replace(RESULTS_LINK, "](")  # the copies on_files publishes beside the pages
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, wire_markdown(read_wire_csv()))
    if FLEETS in markdown:
        markdown = markdown.replace(FLEETS, fleets_markdown())
    return markdown
