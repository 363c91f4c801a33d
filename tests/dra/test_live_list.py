"""explain and snapshot against the live cluster read its DRA objects too (an API server on 127.0.0.1
that serves resource.k8s.io/v1, and one that does not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extender.sources.cluster_choice import one_look
from gpu_advisor.cli import main
from tests.dra.objects import load
from tests.dra.test_views import POD
from tests.fakes.apiserver import FakeApiServer
from tests.kube.test_kube_source import kubeconfig

LISTS = {
    "resourceslices": ["dra-resourceslice.json", "handmade-resourceslice-node-2.json"],
    "resourceclaims": ["dra-resourceclaim-allocated.json"],
    "resourceclaimtemplates": ["dra-resourceclaimtemplate.json", "handmade-resourceclaimtemplate-two-gpus.json"],
}


def serve_cluster(fake: FakeApiServer, dra: bool) -> None:
    for item in load("handmade-nodes.json")["items"]:
        fake.put("nodes", item)
    fake.put("pods", load("dra-pod-bound.json"))
    for plural, names in LISTS.items() if dra else ():
        items = [{k: v for k, v in load(n).items() if k not in ("apiVersion", "kind")} for n in names]
        fake.documents[f"/apis/resource.k8s.io/v1/{plural}"] = {"kind": "List", "items": items}


def test_the_live_cluster_is_read_with_its_slices_and_claims(tmp_path: Path) -> None:
    with FakeApiServer() as fake:
        serve_cluster(fake, dra=True)
        state = one_look("kube", kubeconfig(tmp_path, fake.url)).cluster("kube")
    node = state.node("dra-node-2")
    assert node is not None and (node.gpu_total, node.free_gpus) == (4, (2, 3))
    assert [(p.key, p.request.gpus) for p in node.pods] == [("default/dra-pod", 2)]


def test_explain_against_the_live_cluster_judges_a_claim_for_two_gpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pod.yaml").write_text(POD, encoding="utf-8")
    with FakeApiServer() as fake:
        serve_cluster(fake, dra=True)
        args = ["explain", str(tmp_path / "pod.yaml"), "--cluster", "kube", "--json"]
        assert main([*args, "--kubeconfig", kubeconfig(tmp_path, fake.url)]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [(r["node"], r["gpus"]) for r in answer["ranked"]] == [("dra-node-2", [2, 3]), ("dra-node-1", [0, 1])]


def test_an_api_server_without_dra_is_read_as_before(tmp_path: Path) -> None:
    with FakeApiServer() as fake:
        serve_cluster(fake, dra=False)  # resource.k8s.io/v1 answers 404
        state = one_look("kube", kubeconfig(tmp_path, fake.url)).cluster("kube")
    assert {n.name: n.gpu_total for n in state.nodes()} == {"dra-node-1": 0, "dra-node-2": 0}
