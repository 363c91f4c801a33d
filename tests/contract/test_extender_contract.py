"""Every body kube-scheduler v1.36 really sent gets a 200 and a reply it can read, in both cache modes.

Golden replies live in tests/golden/; regenerate them with ``UPDATE_GOLDEN=1 pytest tests/contract``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from extender.http.wire import ExtenderArgs, ExtenderFilterResult, HostPriority
from tests.conftest import fixture_files

GOLDEN = Path(__file__).parents[1] / "golden"
EXTENDER_BODIES = [p for p in fixture_files("kube") if p.name.startswith(("extender-filter", "extender-prioritize"))]
SIMULATED = ["dgx1-v100-a", "dgx1-v100-b", "hgx-h100-a", "l40s-a", "a100-mig-a", "t4-ts-a"]


def check_golden(name: str, reply: object) -> None:
    path = GOLDEN / name
    text = json.dumps(reply, indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"no golden file {path.name}: run with UPDATE_GOLDEN=1 once and review it"
    assert json.loads(path.read_text()) == json.loads(text)


def test_all_four_captured_extender_bodies_are_here() -> None:
    assert {p.name for p in EXTENDER_BODIES} >= {
        "extender-filter-cache.json",
        "extender-filter-nocache.json",
        "extender-prioritize-cache.json",
        "extender-prioritize-nocache.json",
    }


@pytest.mark.parametrize("path", EXTENDER_BODIES, ids=lambda p: p.name)
def test_captured_bodies_parse_with_pascal_case_keys(path: Path) -> None:
    doc = json.loads(path.read_text())
    args = ExtenderArgs.model_validate(doc)
    assert args.pod["metadata"]["name"].startswith("gpu-pod")
    if "nocache" in path.name:
        assert args.node_names is None and args.nodes is not None and len(args.nodes.items) == 2
    else:
        assert args.node_names == ["gpu-node-1", "gpu-node-2"] and args.nodes is None


def test_lowercase_keys_are_accepted_too() -> None:
    args = ExtenderArgs.model_validate({"pod": {"metadata": {}}, "nodeNames": ["a"]})
    assert args.node_names == ["a"]


@pytest.mark.parametrize("path", EXTENDER_BODIES, ids=lambda p: p.name)
def test_captured_bodies_get_a_200_and_a_well_formed_reply(api: TestClient, path: Path) -> None:
    body = json.loads(path.read_text())
    verb = "filter" if "filter" in path.name else "prioritize"
    reply = api.post(f"/scheduler/{verb}", content=path.read_bytes(), headers={"Content-Type": "application/json"})
    assert reply.status_code == 200
    doc = reply.json()
    if verb == "filter":
        result = ExtenderFilterResult.model_validate(doc)
        assert set(doc) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
        assert result.Error == ""
        if "nocache" in path.name:
            # nodeCacheCapable: false reads Nodes only: the very Node object sent, not just its name; the
            # advisor judges these two from the objects and passes its best (``best_node``).
            assert result.NodeNames is None and result.Nodes is not None
            [passed] = result.Nodes["items"]
            assert passed in body["Nodes"]["items"]
        else:
            assert result.Nodes is None and result.NodeNames == body["NodeNames"]
    else:
        priorities = [HostPriority.model_validate(h) for h in doc]
        assert [h.Host for h in priorities] == ["gpu-node-1", "gpu-node-2"]
        assert all(set(h) == {"Host", "Score"} for h in doc)
    check_golden(path.name.replace(".json", ".reply.json"), doc)


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_the_captured_pod_against_the_simulated_cluster_matches_its_golden_reply(api: TestClient, verb: str) -> None:
    body = json.loads((Path(__file__).parents[1] / "data/kube/extender-filter-cache.json").read_text())
    body["NodeNames"] = SIMULATED
    reply = api.post(f"/scheduler/{verb}", json=body)
    assert reply.status_code == 200
    check_golden(f"simulated-{verb}-1gpu.reply.json", reply.json())


def test_the_one_node_the_filter_passes_is_the_one_prioritize_ranks_alone_at_the_top(api: TestClient) -> None:
    """kube-scheduler binds the one node a filter passes without scoring; with every fitting node passed,
    it would bind prioritize's top (the printed weight outweighs its score plugins): the same node."""
    body = json.loads((Path(__file__).parents[1] / "data/kube/extender-filter-cache.json").read_text())
    body["NodeNames"] = SIMULATED
    [passed] = api.post("/scheduler/filter", json=body).json()["NodeNames"]
    scores = {h["Host"]: h["Score"] for h in api.post("/scheduler/prioritize", json=body).json()}
    assert [host for host, score in scores.items() if score == max(scores.values())] == [passed]


def _verdicts_counted(client: TestClient) -> dict[str, float]:
    text = client.get("/metrics").text
    counted = {}
    for line in text.splitlines():
        if line.startswith("gpu_advisor_filter_verdicts_total{"):
            outcome = line.split('verdict="')[1].split('"')[0]
            counted[outcome] = float(line.rsplit(" ", 1)[1])
    return counted


def test_the_filter_passing_its_best_node_counts_every_verdict_as_passing_every_fitting_node_does(
    advisor: Advisor, fitting_api: TestClient
) -> None:
    """The verdicts counter reads the same outcomes whichever node the filter passes: what passing every
    fitting node shows of the same call (passed, failed, failed unresolvably), each call of three."""
    body = json.loads((Path(__file__).parents[1] / "data/kube/extender-filter-cache.json").read_text())
    body["NodeNames"] = [*SIMULATED, "a-node-nobody-made"]
    fitting = fitting_api.post("/scheduler/filter", json=body).json()
    passed, failed = len(fitting["NodeNames"]), len(fitting["FailedNodes"])
    unresolvable = len(fitting["FailedAndUnresolvableNodes"])
    assert passed > 1 and failed + unresolvable > 0  # the call has outcomes of more than one kind
    advisor.filter_passes = "best"  # the same served app, now as shipped
    before = _verdicts_counted(fitting_api)
    for _ in range(3):
        assert len(fitting_api.post("/scheduler/filter", json=body).json()["NodeNames"]) == 1
    after = _verdicts_counted(fitting_api)
    grown = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in ("pass", "fail", "unresolvable")}
    assert grown == {"pass": 3 * passed, "fail": 3 * failed, "unresolvable": 3 * unresolvable}
