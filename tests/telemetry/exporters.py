"""DCGM exporters on 127.0.0.1 that replay real exporter pages.

Each page keeps the real lines verbatim (fields the advisor ignores included) and adds the fields a
test needs, one line per GPU, with the very label sets the real page carries. A field's value is a
number, or a sequence the exporter steps through one scrape at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.fakes.prometheus import parse_exposition

Value = float | Sequence[float]


def label_sets(page: str, drop: Sequence[str] = ()) -> list[dict[str, str]]:
    """The distinct label sets (one per GPU or MIG instance) of a page, in order; ``drop`` removes labels
    a Prometheus server added to a scraped copy (instance, job, node)."""
    found: list[dict[str, str]] = []
    for labels, _ in parse_exposition(page, default_value=0.0):
        kept = {k: v for k, v in labels.items() if k != "__name__" and k not in drop}
        if kept not in found:
            found.append(kept)
    return found


def _render(name: str, labels: Mapping[str, str], value: float) -> str:
    body = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{name}{{{body}}} {value:g}"


@dataclass
class ExporterPage:
    """A real page (its valued lines verbatim) plus added fields: {field: [value per label set]}."""

    real: Path
    fields: Mapping[str, Sequence[Value]] = field(default_factory=dict)
    drop: Sequence[str] = ()
    extra_sets: Sequence[Mapping[str, str]] = ()  # more GPUs, written as the exporter writes them

    def sets(self) -> list[dict[str, str]]:
        return label_sets(self.real.read_text(), self.drop) + [dict(s) for s in self.extra_sets]

    def render(self, scrape: int = 0) -> str:
        """The page as the exporter serves it on its ``scrape``-th scrape."""
        text = self.real.read_text()
        # Valued lines verbatim (a page copied from a Prometheus server has none: its lines lost their values).
        lines = [
            line for line in text.splitlines() if line and not line.startswith("#") and line.rstrip()[-1].isdigit()
        ]
        for name, values in self.fields.items():
            lines.append(f"# TYPE {name} gauge")
            for labels, value in zip(self.sets(), values, strict=True):
                now = value if isinstance(value, float | int) else value[scrape % len(value)]
                lines.append(_render(name, labels, float(now)))
        return "\n".join(lines) + "\n"

    def series_named(self, names: Collection[str]) -> int:
        """How many series of the page carry one of ``names``."""
        return sum(1 for labels, _ in parse_exposition(self.render()) if labels["__name__"] in names)


class Exporter:
    """One exporter's /metrics on 127.0.0.1; :meth:`kill` stops it as a crashed pod would."""

    def __init__(self, page: ExporterPage) -> None:
        self.page = page
        self.scrapes = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.alive = True

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    def kill(self) -> None:
        if self.alive:
            self.alive = False
            self._server.shutdown()
            self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                with exporter._lock:
                    body = exporter.page.render(exporter.scrapes).encode()
                    exporter.scrapes += 1
                self.send_response(200 if self.path == "/metrics" else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler
