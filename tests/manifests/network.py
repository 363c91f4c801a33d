"""Who may reach whom under the rendered NetworkPolicies, by the rules of networking.k8s.io/v1.

A pod selected by a policy with policyType Ingress accepts only what some rule of such a policy
allows; a pod no policy selects accepts everything. A peer with only podSelector means pods of the
policy's own namespace; with only namespaceSelector, every pod of those namespaces; with both, pods
matching both. A rule without `from` admits any source; without `ports`, any port. Ports are compared
by name (as the manifests name them) or number. The kubelet's probes, from the pod's own node, are
always allowed and are not modelled here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Doc = dict[str, Any]


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict[str, str]
    namespace_labels: dict[str, str] = field(default_factory=dict)

    def namespace_labelled(self) -> dict[str, str]:
        # The API server labels every namespace with its own name.
        return {**self.namespace_labels, "kubernetes.io/metadata.name": self.namespace}


def matches(selector: Doc, labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, f"only matchLabels is modelled: {selector}"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def ingress_policies(docs: list[Doc], target: Pod) -> list[Doc]:
    return [
        d
        for d in docs
        if d["kind"] == "NetworkPolicy"
        and d["metadata"]["namespace"] == target.namespace
        and "Ingress" in d["spec"]["policyTypes"]
        and matches(d["spec"]["podSelector"], target.labels)
    ]


def _peer_admits(peer: Doc, policy_namespace: str, source: Pod) -> bool:
    assert set(peer) <= {"podSelector", "namespaceSelector"}, f"only selectors are modelled: {peer}"
    if "namespaceSelector" in peer:
        namespace_ok = matches(peer["namespaceSelector"], source.namespace_labelled())
    else:
        namespace_ok = source.namespace == policy_namespace
    return namespace_ok and matches(peer.get("podSelector", {}), source.labels)


def allowed(docs: list[Doc], source: Pod, target: Pod, port: str) -> bool:
    policies = ingress_policies(docs, target)
    if not policies:
        return True
    for policy in policies:
        for rule in policy["spec"].get("ingress", []):
            ports = rule.get("ports")
            if ports is not None and not any(
                p.get("port") == port and p.get("protocol", "TCP") == "TCP" for p in ports
            ):
                continue
            peers = rule.get("from")
            if peers is None or any(_peer_admits(peer, policy["metadata"]["namespace"], source) for peer in peers):
                return True
    return False
