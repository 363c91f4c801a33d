"""kube-scheduler's ``bind`` verb: the advisor binds, and first makes sure nobody took the room.

kube-scheduler counts no annotation share, no HAMi memory, no per-GPU anything, so its own cache cannot
stop two pods from being bound onto one GPU's milli; only the advisor can. With ``bindVerb`` in the
printed profile every binding of the profile's pods passes here, and a binding is written only after
it has been re-checked against the freshest view there is, under a lock the API server keeps:

1. The node as this replica's watch has it, plus every placement any replica has approved and the
   watch does not show yet: this replica's own (``KubeModel.assumed``) and the claims in the node's
   claims Lease (``extender.cluster.claim_leases``; and, for one release, the Node annotation replicas
   before the Lease wrote).
2. Does the pod still fit there? If not, the binding is refused with the reason; kube-scheduler forgets
   its assumption and places the pod again, from a view that now holds what took the room.
3. Write this pod's claim into the node's Lease (in the advisor's own namespace: no Node is written) with
   a merge patch that carries the Lease's resourceVersion, or create the Lease: a second binder (another
   replica) that read the claims before this write gets 409 Conflict (or AlreadyExists), reads them
   again, and sees this claim in step 1. That is the optimistic lock per node; the claim lives 30 s, long
   after the binding has reached every watch.
4. ``POST pods/<name>/binding``, as kube-scheduler's DefaultBinder would; for a share in the Alibaba
   convention the Binding carries the GPU it was given (``alibabacloud.com/gpu-index``), which the API
   server writes onto the pod in the same update.

Cost: one PATCH (a POST for a node's first claim) and one POST per pod, a few hundred bytes each (a GET
as well after a conflict, or when the pod was never seen).
Whole GPUs on a node that shares none are counted by kube-scheduler itself: they are only bound (one POST).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from kubernetes.client.exceptions import ApiException

from extender.cluster.claim_leases import ClaimLease, read_lease
from extender.cluster.claims import Binding, Claim, assignment, claim_object, counted, node_annotation, write_claims
from extender.cluster.dra_view import pod_through_claims
from extender.cluster.shares import ALIBABA_INDEX
from extender.cluster.state import NodeState
from extender.model.pods import PodSpecError, pod_request
from extender.sources.api_writes import ApiWrites, WriteFailed
from extender.sources.claims_writer import ClaimsWriter, Stale
from extender.sources.kube_model import KubeModel

__all__ = ["KubeBinder", "binding_body", "binding_path"]

log = logging.getLogger(__name__)

# Why a pod may not go to a node it was placed on: None when it fits (the advisor's filter, no reserve).
Check = Callable[[Mapping[str, Any], NodeState], str | None]
_ATTEMPTS = 8  # conflicts in a row before giving up (each means another binder wrote the node's claims first)
_TIMEOUT_S = 5.0
_CREDENTIALS_S = 10.0  # how long the credentials read for a write are used again
_HEARD_S = 5.0  # a binding reaches every replica's watch within milliseconds; past this it is heard


class KubeBinder:
    def __init__(self, api: Any, model: KubeModel, claims_namespace: str = "gpu-advisor") -> None:
        self.api = api  # kubernetes.client.CoreV1Api
        self.model = model
        self.leases = ClaimsWriter(claims_namespace, self._write)  # the namespace the watch lists them in
        # The binding of a pod kube-scheduler counts itself, posted on the event loop (``api_writes``).
        self.writes = ApiWrites.of(api.api_client.configuration)
        self._locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
        self._base: tuple[float, str, dict[str, str]] | None = None  # (when read, server URL, headers)

    def bind(self, binding: Binding, check: Check) -> str:
        """Bind the pod; "" when bound, else why not (kube-scheduler then places it again)."""
        pod = self._pod(binding)
        if isinstance(pod, str):
            return pod
        bound_to = (pod.get("spec") or {}).get("nodeName")
        if bound_to:
            return "" if bound_to == binding.node else f"pod {binding.namespace}/{binding.name} is bound to {bound_to}"
        with self._locks[binding.node]:
            if not self._counted_by_scheduler(pod, binding.node):
                why, pod = self._claim(binding, pod, check)
                if why:
                    return why
            try:
                self._write("POST", binding_path(binding), binding_body(binding, _notes_of(pod)), "application/json")
            except ApiException as exc:
                return f"{_bind_failed(binding)}: {exc.status} {exc.reason}"
            except Exception as exc:  # the API server unreachable: kube-scheduler retries the pod
                return f"{_bind_failed(binding)}: {exc}"
        return ""  # the node's claim counts it on every replica until the watch shows it bound

    async def bind_on_loop(self, binding: Binding, check: Check) -> str:
        """As :meth:`bind`; a pod this replica approved that kube-scheduler counts itself (whole GPUs on a
        node that shares none: only the Binding to post) is bound without leaving the event loop."""
        claim = self.model.assumed.get(binding.uid)
        if self.writes is None or claim is None or not self._counted_by_scheduler(claim.pod, binding.node):
            return await asyncio.to_thread(self.bind, binding, check)
        path = binding_path(binding)
        headers = self._prepared(path, "application/json")[1]
        raw = json.dumps(binding_body(binding, {}), separators=(",", ":")).encode()
        try:
            status, reason, _ = await self.writes.send("POST", path, raw, headers, _TIMEOUT_S)
        except (WriteFailed, TimeoutError) as exc:  # kube-scheduler retries the pod
            return f"{_bind_failed(binding)}: {str(exc) or f'no answer within {_TIMEOUT_S:.0f} s'}"
        return "" if 200 <= status < 300 else f"{_bind_failed(binding)}: {status} {reason}"

    async def aclose(self) -> None:
        if self.writes is not None:
            await self.writes.aclose()

    def _write(self, method: str, path: str, body: Any, content_type: str) -> bytes:
        """One write through the client's connection pool and credentials, without its per-call argument
        validation and models (on every binding that was a third of the bind verb's CPU); the answer's
        bytes, or :class:`ApiException` for an error status."""
        url, headers = self._prepared(path, content_type)
        # The body as bytes: http.client then sends it in one segment with the headers (as text, the
        # client's own path sends it apart, and Nagle's algorithm with delayed ACKs held each for 40 ms).
        raw = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        resp = self.api.api_client.rest_client.pool_manager.request(
            method, url, body=raw, headers=headers, timeout=_TIMEOUT_S, preload_content=True
        )
        data: bytes = resp.data
        if not 200 <= resp.status < 300:
            raise ApiException(status=resp.status, reason=resp.reason, body=data.decode(errors="replace"))
        return data

    def _prepared(self, path: str, content_type: str) -> tuple[str, dict[str, str]]:
        """The URL and headers, credentials included. The client reads its credentials again on every call
        (a kubeconfig's whole file, and the environment's proxies: a fifth of a binding's CPU); here at most
        every few seconds, still well within any token's life."""
        now = time.monotonic()
        if self._base is None or now - self._base[0] > _CREDENTIALS_S:
            headers = {"Accept": "application/json"}
            _, url, headers, _, _ = self.api.api_client.param_serialize(
                "GET", "/", header_params=headers, auth_settings=["BearerToken"]
            )
            self._base = (now, url.removesuffix("/"), headers)
        return self._base[1] + path, {**self._base[2], "Content-Type": content_type}

    def _counted_by_scheduler(self, pod: Mapping[str, Any], node: str) -> bool:
        """Whole GPUs (and MIG, AMD, CPU, memory) on a node that shares none: kube-scheduler's own cache
        counts every one of them, so it cannot over-commit them and nothing needs claiming; the binding
        is all that is left (one request, as its DefaultBinder makes)."""
        state = self.model.state.node(node)
        if state is None or state.shares is not None:
            return False
        try:
            request = pod_request(pod_through_claims(pod, self.model.state.dra))
        except PodSpecError:
            return False
        return request.share is None

    def _pod(self, binding: Binding) -> Mapping[str, Any] | str:
        """The Pod object: as this replica assumed it, or from the API server."""
        claim = self.model.assumed.get(binding.uid)
        if claim is not None:
            return {**claim.pod, "spec": {**claim.pod["spec"], "nodeName": ""}}
        return self.read_pod(binding)

    def read_pod(self, binding: Binding) -> Mapping[str, Any] | str:
        """The Pod object from the API server; why not, when it cannot be read or is another pod now."""
        try:
            resp = self.api.read_namespaced_pod(
                binding.name, binding.namespace, _preload_content=False, _request_timeout=_TIMEOUT_S
            )
            pod: dict[str, Any] = json.loads(resp.data)
        except ApiException as exc:
            if exc.status == 404:
                return f"pod {binding.namespace}/{binding.name} does not exist"
            return f"reading pod {binding.namespace}/{binding.name} failed: {exc.status} {exc.reason}"
        except Exception as exc:
            return f"reading pod {binding.namespace}/{binding.name} failed: {exc}"
        uid = (pod.get("metadata") or {}).get("uid")
        if binding.uid and uid and uid != binding.uid:
            return f"pod {binding.namespace}/{binding.name} is another pod now (uid {uid}, not {binding.uid})"
        return pod

    def _claim(self, binding: Binding, pod: Mapping[str, Any], check: Check) -> tuple[str, Mapping[str, Any]]:
        """Write the pod's claim into its node's claims Lease under the Lease's resourceVersion, and the GPUs it
        is given onto the pod; (why not, if it does not fit or a write failed; the pod as bound)."""
        node: Mapping[str, Any] | None = self.model.nodes.get(binding.node)
        lease: ClaimLease | None = self.model.leases.get(binding.node)
        for _ in range(_ATTEMPTS):
            if node is None:
                read = self._read_node(binding.node)
                if isinstance(read, str):
                    return (read, pod)
                node = read
            state, claims = self._state(binding, node, lease)
            if state is None:
                return (f"node {binding.node} is not in the advisor's model", pod)
            why = check(pod, state)
            if why:
                return (f"node {binding.node} no longer has room for {binding.namespace}/{binding.name}: {why}", pod)
            given = _annotated(pod, self._notes(pod, state))
            mine = Claim(binding.uid, binding.node, claim_object(given, binding.node), self.model.clock())
            uid = str((node.get("metadata") or {}).get("uid") or "")
            try:
                written = self.leases.write(binding.node, uid, write_claims([*claims, mine]), lease)
            except Stale:  # another binder wrote the node's claims first: read them again, with its claim
                read_again = self._read_lease(binding.node)
                if isinstance(read_again, str):
                    return (read_again, pod)
                lease = read_again
                continue
            except ApiException as exc:
                return (f"claiming {binding.node} for {binding.name} failed: {exc.status} {exc.reason}", pod)
            except Exception as exc:
                return (f"claiming {binding.node} for {binding.name} failed: {exc}", pod)
            self.model.set_lease("MODIFIED", written)  # our own view holds the claim at once
            return "", given
        return (f"node {binding.node}: {_ATTEMPTS} conflicting writes in a row; placed again", pod)

    def _read_lease(self, node: str) -> ClaimLease | str | None:
        """The node's claims Lease as the API server has it (None: none), applied to the model; or why not."""
        try:
            found = self.leases.read(node)
        except ApiException as exc:
            return f"reading the claims of {node} failed: {exc.status} {exc.reason}"
        except Exception as exc:
            return f"reading the claims of {node} failed: {exc}"
        if found is None:
            return None
        self.model.set_lease("MODIFIED", found)
        return read_lease(found)

    def _notes(self, pod: Mapping[str, Any], state: NodeState) -> dict[str, str]:
        try:
            request = pod_request(pod_through_claims(pod, self.model.state.dra))
        except PodSpecError:
            return {}
        return assignment(request, state.shares)

    def _read_node(self, name: str) -> dict[str, Any] | str:
        try:
            resp = self.api.read_node(name, _preload_content=False, _request_timeout=_TIMEOUT_S)
        except ApiException as exc:
            return f"reading node {name} failed: {exc.status} {exc.reason}"
        except Exception as exc:
            return f"reading node {name} failed: {exc}"
        found: dict[str, Any] = json.loads(resp.data)
        self.model.set_node("MODIFIED", found)
        return self.model.nodes.get(name) or found

    def _state(
        self, binding: Binding, node: Mapping[str, Any], lease: ClaimLease | None
    ) -> tuple[NodeState | None, list[Claim]]:
        """The node with everything approved onto it but this pod; the live claims of ``lease`` (and of the
        Node's annotation, from replicas before the Lease) but this pod's."""
        with self.model.lock:
            self.model.forget({"metadata": {"uid": binding.uid}})
            if binding.node not in self.model.nodes:
                return None, []
            written = (lease.claims if lease is not None else None, node_annotation(node))
            now = self.model.clock()
            live = counted(binding.node, written, (), {}, now)
            # Kept while a replica may not have heard the binding yet: every claim younger than a few
            # seconds, and any of a pod this replica has not seen bound (until it lapses).
            others = [
                c for c in live if c.uid != binding.uid and (c.uid not in self.model.pods or now - c.at < _HEARD_S)
            ]
            return self.model.node_state(binding.node, node, written=written), others


def _annotated(pod: Mapping[str, Any], notes: Mapping[str, str]) -> Mapping[str, Any]:
    if not notes:
        return pod
    meta = dict(pod.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), **notes}
    return {**pod, "metadata": meta}


def _notes_of(pod: Mapping[str, Any]) -> dict[str, str]:
    """The GPU record ``_claim`` gave the pod, if any."""
    notes = (pod.get("metadata") or {}).get("annotations") or {}
    return {ALIBABA_INDEX: notes[ALIBABA_INDEX]} if ALIBABA_INDEX in notes else {}


def binding_path(binding: Binding) -> str:
    return f"/api/v1/namespaces/{quote(binding.namespace)}/pods/{quote(binding.name)}/binding"


def _bind_failed(binding: Binding) -> str:
    return f"binding {binding.namespace}/{binding.name} to {binding.node} failed"


def binding_body(binding: Binding, notes: Mapping[str, str]) -> dict[str, Any]:
    """The Binding the bind verb posts (``notes``: annotations the API server copies onto the pod)."""
    # The API server copies a Binding's annotations onto the pod as it binds it: the GPU record and the
    # binding are one write, and no reader ever sees the pod bound without its record.
    meta: dict[str, Any] = {"name": binding.name, "namespace": binding.namespace}
    if binding.uid:
        meta["uid"] = binding.uid  # a pod of that name created anew since is not this one: refused
    if notes:
        meta["annotations"] = dict(notes)
    target = {"apiVersion": "v1", "kind": "Node", "name": binding.node}
    return {"apiVersion": "v1", "kind": "Binding", "metadata": meta, "target": target}
