"""The real-cluster pace's no-op extender (``benchmarks/real_noop.py``) on kube-scheduler's captured
bodies: it passes the first candidate kube-scheduler sent and posts the Binding it is asked for."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.real_noop import CALLS_LINE, NoopExtender, binding_request, filter_reply, first_candidate
from benchmarks.real_pace import _connections
from extender.sources.api_writes import ApiWrites

KUBE = Path(__file__).resolve().parent.parent / "data" / "kube"


def test_the_filter_passes_the_first_name_kube_scheduler_sent() -> None:
    body = (KUBE / "extender-filter-cache.json").read_bytes()
    compact = json.dumps(json.loads(body), separators=(",", ":")).encode()  # as Go's encoder writes it
    first = json.loads(body)["NodeNames"][0]
    assert first_candidate(compact) == first
    answer = json.loads(filter_reply(first))
    assert answer == {
        "Nodes": None,
        "NodeNames": [first],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }


def test_a_call_without_names_passes_nothing_and_says_so() -> None:
    assert first_candidate(b'{"Pod":{},"Nodes":{"items":[]},"NodeNames":null}') is None
    assert first_candidate(b'{"Pod":{},"NodeNames":[]}') is None
    assert json.loads(filter_reply(None))["Error"] == "no names"


def test_the_bind_verb_posts_the_binding_of_the_pod_it_names() -> None:
    path, raw = binding_request((KUBE / "extender-bind.json").read_bytes())
    assert path == "/api/v1/namespaces/default/pods/gpu-pod-cache/binding"
    assert json.loads(raw) == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "gpu-pod-cache", "namespace": "default", "uid": "8b458808-d5fa-4624-a204-3eb5bab333f7"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "gpu-node-1"},
    }


def test_as_it_stops_it_says_how_many_calls_came_on_how_many_connections(capsys: pytest.CaptureFixture[str]) -> None:
    app = NoopExtender(ApiWrites("127.0.0.1", 1, None, None), {})
    sent: list[dict[str, Any]] = []

    async def call(scope: dict[str, Any], messages: list[dict[str, Any]]) -> None:
        async def receive() -> dict[str, Any]:
            return messages.pop(0)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app(scope, receive, send)

    body = (KUBE / "extender-filter-cache.json").read_bytes()
    request = {"type": "http.request", "body": body, "more_body": False}
    for port in (50001, 50001, 50002):  # three calls, two of them on one kept-alive connection
        scope = {"type": "http", "path": "/scheduler/filter", "client": ("127.0.0.1", port)}
        asyncio.run(call(scope, [dict(request)]))
    lifespan = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    asyncio.run(call({"type": "lifespan"}, lifespan))
    line = capsys.readouterr().out.strip()
    assert line == f"{CALLS_LINE} 3 connections 2"
    assert _connections(f"INFO: shutting down\n{line}\n") == (3, 2)
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [200, 200, 200]
