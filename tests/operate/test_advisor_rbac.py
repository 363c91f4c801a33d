"""What the advisor's ServiceAccount may do, as every binding grants it, in both ways of installing it (the
kustomize output and the rendered chart): it binds pods and keeps its claims in Leases of its own
namespace, and writes no Node."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.manifests.rendering import Doc
from tests.manifests.rendering import render as kustomize
from tests.operate.chart import render

WRITES = {"create", "update", "patch", "delete", "deletecollection", "*"}
ADVISOR = ("gpu-advisor", "gpu-advisor")  # the ServiceAccount's (namespace, name)


def granted(docs: list[Doc], account: tuple[str, str]) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """Each rule bound to ``account``: (the namespace it holds in, None for cluster-wide; the rule)."""
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d for d in docs}
    for binding in docs:
        if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        subjects = {
            (s.get("namespace"), s["name"]) for s in binding.get("subjects") or [] if s["kind"] == "ServiceAccount"
        }
        if account not in subjects:
            continue
        where = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
        ref = binding["roleRef"]
        role = roles[(ref["kind"], where if ref["kind"] == "Role" else None, ref["name"])]
        for rule in role["rules"]:
            yield where, rule


@pytest.fixture(params=["kustomize", "chart"])
def installed(request: pytest.FixtureRequest) -> list[Doc]:
    return kustomize() if request.param == "kustomize" else render()


def test_the_advisor_writes_no_node(installed: list[Doc]) -> None:
    for _, rule in granted(installed, ADVISOR):
        on_nodes = {"", "*"} & set(rule.get("apiGroups", [])) and {"nodes", "*"} & set(rule.get("resources", []))
        assert not (on_nodes and WRITES & set(rule["verbs"])), rule


def test_the_advisor_writes_leases_only_in_its_own_namespace(installed: list[Doc]) -> None:
    leases = [(where, rule) for where, rule in granted(installed, ADVISOR) if "leases" in rule.get("resources", [])]
    assert leases == [
        (
            "gpu-advisor",
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "verbs": ["get", "list", "watch", "create", "update", "patch"],
            },
        )
    ]
