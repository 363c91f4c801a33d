"""What the advisor's ServiceAccount may do, as every binding grants it, in both ways of installing it (the
kustomize output and the rendered chart): it binds pods and keeps its claims in Leases of its own
namespace, and writes no Node."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
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


SECURITY_PAGE = Path(__file__).resolve().parents[2] / "docs" / "install" / "security.md"
LISTED = re.compile(r"--as=system:serviceaccount:gpu-advisor:([a-z-]+) \| grep[^\n]*\n(.*?)\n```", re.S)


def listed_in_the_docs() -> dict[str, dict[tuple[str, tuple[str, ...]], set[str]]]:
    """Each ServiceAccount's ``kubectl auth can-i --list`` rows on the security page: (resource, names) → verbs."""
    found: dict[str, dict[tuple[str, tuple[str, ...]], set[str]]] = {}
    for account, table in LISTED.findall(SECURITY_PAGE.read_text()):
        rows = found.setdefault(account, {})
        for line in table.splitlines()[1:]:  # the header first
            resource, _urls, names, verbs = re.findall(r"\[[^\]]*\]|\S+", line)[:4]
            key = (resource, tuple(names.strip("[]").split()))
            rows.setdefault(key, set()).update(verbs.strip("[]").split())
    return found


def as_listed(docs: list[Doc], account: tuple[str, str]) -> dict[tuple[str, tuple[str, ...]], set[str]]:
    """The rules bound to ``account``, as kubectl lists them: one row per resource (``name.group``) and names."""
    rows: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for _, rule in granted(docs, account):
        for group in rule.get("apiGroups", [""]):
            for resource in rule.get("resources", []):
                key = (f"{resource}.{group}" if group else resource, tuple(rule.get("resourceNames", [])))
                rows.setdefault(key, set()).update(rule["verbs"])
    return rows


@pytest.mark.parametrize("account", ["gpu-advisor", "gpu-advisor-agent", "gpu-advisor-certs"])
def test_the_security_page_lists_what_each_service_account_may_do(installed: list[Doc], account: str) -> None:
    assert listed_in_the_docs()[account] == as_listed(installed, ("gpu-advisor", account))


def test_the_binder_is_granted_only_where_the_bind_verb_is_on() -> None:
    def binds(docs: list[Doc]) -> bool:
        return any(rule.get("resources") == ["pods/binding"] for _, rule in granted(docs, ADVISOR))

    assert binds(render())
    assert not binds(render({"scheduler": {"managedResources": True}}))
