"""The real-cluster pace's no-op extender (``benchmarks/real_noop.py``) on kube-scheduler's captured
bodies: it passes the first candidate kube-scheduler sent and posts the Binding it is asked for."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.real_noop import binding_request, filter_reply, first_candidate

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
