"""``gpu-advisor defrag --apply``: a plan's moves made in order through the Eviction API, each after its
intent is written (``extender.cluster.defrag_intents``), with the credentials of whoever runs it.

A move is ``POST /api/v1/namespaces/{ns}/pods/{name}/eviction`` (policy/v1 Eviction, on the pod's uid, so
a pod made since under the same name is not the one evicted). The API server refuses one that a
PodDisruptionBudget forbids now with 429: that move is not made, and neither is any after it, since each
later move was planned on the cluster after the ones before. Its intent is withdrawn again, so the owner's
next pods are not sent anywhere for a move that never happened.

The intent goes first: an evicted pod's replacement can be placed within a second, and every replica
must already know where it goes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from kubernetes.client.exceptions import ApiException

from extender.advice.defrag import Applied, Move
from extender.cluster.defrag_intents import ANNOTATION_NODES, INTENT_TTL_S, Owner, intent_lease, intent_name
from extender.sources.claims_writer import Send
from extender.sources.kube import api_error_message

__all__ = ["IntentWriter", "apply_moves", "evict", "operator_send"]

_JSON, _MERGE_PATCH = "application/json", "application/merge-patch+json"


def evict(send: Send, namespace: str, name: str, uid: str | None) -> str:
    """Evict one pod; "" when the API server took it, else why not (one line)."""
    meta = {"name": name, "namespace": namespace}
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": meta}
    if uid:
        body["deleteOptions"] = {"preconditions": {"uid": uid}}
    try:
        send("POST", f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(name)}/eviction", body, _JSON)
    except ApiException as exc:
        if exc.status == 429:
            return f"a PodDisruptionBudget forbids it now ({api_error_message(exc)})"
        if exc.status == 404:
            return "the pod is gone (the plan was made on a cluster that has changed: ask for a new one)"
        if exc.status == 409:
            return f"another pod has its name now ({api_error_message(exc)})"
        return api_error_message(exc)
    except Exception as exc:  # the API server unreachable: said, and nothing after it is tried
        return f"the API server did not answer ({type(exc).__name__}: {exc})"
    return ""


class IntentWriter:
    """Each owner's intent Lease in the claims namespace: created on its first move of a plan (a Lease left
    by an earlier plan is replaced, so its start is this plan's), its node list grown on each later one."""

    def __init__(self, namespace: str, send: Send, ttl_s: int = INTENT_TTL_S) -> None:
        self.namespace, self.send, self.ttl_s = namespace, send, ttl_s
        self.nodes: dict[str, list[str]] = {}  # owner uid → the nodes written so far by this plan

    def _path(self, name: str = "") -> str:
        base = f"/apis/coordination.k8s.io/v1/namespaces/{quote(self.namespace)}/leases"
        return f"{base}/{quote(name)}" if name else base

    def add(self, owner: Owner, node: str) -> None:
        """Send ``owner``'s next pod to ``node`` too (after the nodes of its earlier moves)."""
        nodes = [*self.nodes.get(owner.uid, []), node]
        if owner.uid in self.nodes:
            self._patch(owner, nodes)
        else:
            lease = intent_lease(self.namespace, owner, nodes, self.ttl_s)
            try:
                self.send("POST", self._path(), lease, _JSON)
            except ApiException as exc:
                if exc.status != 409:
                    raise
                self.send("DELETE", self._path(intent_name(owner.uid)), None, _JSON)
                self.send("POST", self._path(), lease, _JSON)
        self.nodes[owner.uid] = nodes

    def withdraw(self, owner: Owner) -> None:
        """Take back the node :meth:`add` wrote last for ``owner`` (its move was not made)."""
        nodes = self.nodes.get(owner.uid, [])[:-1]
        if nodes:
            self._patch(owner, nodes)
            self.nodes[owner.uid] = nodes
        else:
            self.send("DELETE", self._path(intent_name(owner.uid)), None, _JSON)
            self.nodes.pop(owner.uid, None)

    def _patch(self, owner: Owner, nodes: Sequence[str]) -> None:
        patch = {"metadata": {"annotations": {ANNOTATION_NODES: ",".join(nodes)}}}
        self.send("PATCH", self._path(intent_name(owner.uid)), patch, _MERGE_PATCH)


def apply_moves(
    moves: Sequence[Move],
    pods: Mapping[str, Mapping[str, Any]],
    owner_of: Callable[[Mapping[str, Any]], Owner | None],
    intents: IntentWriter,
    send: Send,
    said: Callable[[str], None],
) -> Applied:
    """Make ``moves`` in order (``pods``: each moved pod's object, by ``namespace/name``); stop at the first
    that is not made, and say each as it goes."""
    done: list[str] = []
    for move in moves:
        pod = pods.get(move.pod) or {}
        owner = owner_of(pod)
        if owner is None:
            return Applied(
                evicted=done, stopped_at=move.pod, why="no controller uid: its replacement could not be sent"
            )
        try:
            intents.add(owner, move.target)
        except Exception as exc:  # nothing evicted for this move: the Lease could not be written
            why = f"its intent could not be written in {intents.namespace}: {api_error_message(exc)}"
            return Applied(evicted=done, stopped_at=move.pod, why=why)
        namespace, name = move.pod.split("/", 1)
        why = evict(send, namespace, name, str((pod.get("metadata") or {}).get("uid") or "") or None)
        if why:
            _withdrawn(intents, owner, said)
            return Applied(evicted=done, stopped_at=move.pod, why=why)
        done.append(move.pod)
        said(f"evicted {move.pod} from {move.source}; {owner.label}'s next pod goes to {move.target}")
    return Applied(evicted=done, stopped_at=None, why="")


def _withdrawn(intents: IntentWriter, owner: Owner, said: Callable[[str], None]) -> None:
    try:
        intents.withdraw(owner)
    except Exception as exc:  # it ends by itself at its expiry
        said(f"its intent stays until it expires ({api_error_message(exc)})")


def operator_send(kubeconfig: str | None) -> Send:
    """Requests to the API server with the kubeconfig's credentials (never a pod's ServiceAccount: the
    advisor's own may not evict)."""
    from kubernetes import config

    api_client = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]

    def send(method: str, path: str, body: Any, content_type: str) -> bytes:
        headers = {"Accept": _JSON, "Content-Type": content_type}
        _, url, headers, _, _ = api_client.param_serialize(
            method, path, header_params=headers, auth_settings=["BearerToken"]
        )
        raw = None if body is None else json.dumps(body).encode()
        resp = api_client.rest_client.pool_manager.request(method, url, body=raw, headers=headers, timeout=10.0)
        if not 200 <= resp.status < 300:
            raise ApiException(status=resp.status, reason=resp.reason, body=resp.data.decode(errors="replace"))
        data: bytes = resp.data
        return data

    return send
