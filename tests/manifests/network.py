"""Who may reach whom under the rendered NetworkPolicies, by the rules of networking.k8s.io/v1.

A pod selected by a policy with policyType Ingress accepts only what some rule of such a policy
allows; a pod no policy selects accepts everything. A peer with only podSelector means pods of the
policy's own namespace; with only namespaceSelector, every pod of those namespaces; with both, pods
matching both. A rule without `from` admits any source; without `ports`, any port. Ports are compared
by name (as the manifests name them) or number. A pod on the host network has its node's address: no
pod selector matches it, only an ipBlock holding that address. The kubelet's probes, from the pod's own
node, are always allowed and are not modelled here.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

Doc = dict[str, Any]


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict[str, str]
    namespace_labels: dict[str, str] = field(default_factory=dict)
    host_ip: str | None = None  # set: a pod on the host network, calling from this address

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
    if "ipBlock" in peer:
        assert set(peer) == {"ipBlock"}, f"an ipBlock stands alone in a peer: {peer}"
        if source.host_ip is None:
            return False  # a pod's own address: ipBlocks are meant for addresses outside the cluster
        address = ipaddress.ip_address(source.host_ip)
        excepted = any(address in ipaddress.ip_network(c) for c in peer["ipBlock"].get("except", []))
        return address in ipaddress.ip_network(peer["ipBlock"]["cidr"]) and not excepted
    assert set(peer) <= {"podSelector", "namespaceSelector"}, f"only selectors and ipBlocks are modelled: {peer}"
    if source.host_ip is not None:
        return False  # host-network traffic carries the node's address: no pod selector matches it
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
