"""A Prometheus stand-in on 127.0.0.1 answering ``/api/v1/query`` from DCGM exporter exposition lines.

It understands the queries the Prometheus source sends: ``m``, ``timestamp(m)``, ``last_over_time(m[d])``,
``avg_over_time(m[d])`` (the value itself: one sample), ``max_over_time(timestamp(m)[d:r])`` and
``vector(1)``. Series listed in ``ended`` have stopped: only the lookback queries still see them.
(The real thing runs in tests/telemetry.)"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)\{(.*)\}\s*(\S+)?\s*$")
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def parse_exposition(text: str, default_value: float | None = None) -> list[tuple[dict[str, str], float]]:
    """Exposition lines → (labels with __name__, value). Lines without a value take ``default_value``."""
    series = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        name, body, value = m.groups()
        labels = {"__name__": name, **dict(_LABEL.findall(body))}
        if value is None:
            if default_value is None:
                continue
            series.append((labels, default_value))
        else:
            series.append((labels, float(value)))
    return series


class FakePrometheus:
    def __init__(
        self,
        series: list[tuple[dict[str, str], float]],
        sampled_at: float | None = None,
        history: list[tuple[dict[str, str], list[float]]] | None = None,
        ended: list[dict[str, str]] | None = None,
    ) -> None:
        self.series = series
        self.ended = ended or []
        self.history = history or []  # range-query answers: (labels with __name__, values oldest first)
        self.sampled_at = sampled_at if sampled_at is not None else time.time()
        self.queries: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakePrometheus:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, query: str) -> dict[str, Any]:
        self.queries.append(query)
        now = time.time()
        if query == "vector(1)":
            return {
                "status": "success",
                "data": {"resultType": "vector", "result": [{"metric": {}, "value": [now, "1"]}]},
            }
        forms = {
            r"timestamp\((\w+)\)": ("stamp", False),
            r"max_over_time\(timestamp\((\w+)\)\[\w+:\w+\]\)": ("stamp", True),
            r"(?:last|avg)_over_time\((\w+)\[\w+\]\)": ("value", True),
        }
        name, what, lookback = query, "value", False
        for pattern, (kind, back) in forms.items():
            m = re.fullmatch(pattern, query)
            if m:
                name, what, lookback = m.group(1), kind, back
        result = []
        for labels, value in self.series:
            if labels["__name__"] != name or (labels in self.ended and not lookback):
                continue
            shown = dict(labels)
            if name != query:
                shown.pop("__name__")  # functions drop the metric name, as Prometheus does
            result.append({"metric": shown, "value": [now, str(self.sampled_at if what == "stamp" else value)]})
        return {"status": "success", "data": {"resultType": "vector", "result": result}}

    def answer_range(self, query: str, start: float, step: float) -> dict[str, Any]:
        self.queries.append(query)
        m = re.fullmatch(r"(\w+)\{(.*)\}", query)
        name, selector = (m.group(1), dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))) if m else (query, {})
        result = [
            {
                "metric": {k: v for k, v in labels.items() if k != "__name__"},
                "values": [[start + i * step, str(v)] for i, v in enumerate(values)],
            }
            for labels, values in self.history
            if labels["__name__"] == name and all(labels.get(k) == v for k, v in selector.items())
        ]
        return {"status": "success", "data": {"resultType": "matrix", "result": result}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parsed = urllib.parse.urlparse(self.path)
                params = dict(urllib.parse.parse_qsl(parsed.query))
                query = params.get("query", "")
                if parsed.path == "/api/v1/query_range":
                    doc = fake.answer_range(query, float(params["start"]), float(params["step"]))
                else:
                    doc = fake.answer(query)
                body = json.dumps(doc).encode()
                self.send_response(200 if parsed.path in ("/api/v1/query", "/api/v1/query_range") else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler
