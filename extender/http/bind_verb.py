"""kube-scheduler's bind verb on raw bytes: parse ExtenderBindingArgs, refuse what kube-scheduler would not
bind (``bind_guard``), then bind through the API server (``extender.sources.kube_binder``)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping

from pydantic import ValidationError

from extender.cluster.claims import Binding
from extender.errors import validation_problems
from extender.http.advisor import Advisor
from extender.http.approvals import refusal
from extender.http.bind_guard import ApprovalLog, Refusal, constraints_refusal
from extender.http.requests import BadRequest, parse_json
from extender.http.wire import ExtenderBindingArgs

__all__ = ["NOT_SYNCED", "BindVerb", "unsynced"]

log = logging.getLogger(__name__)

Answer = tuple[int, bytes]  # HTTP status, JSON body

# Fail closed: a replica that has not yet heard every bound pod could approve a GPU another pod holds.
NOT_SYNCED = "gpu-advisor has not synced the cluster from the API server yet; the pod waits and is retried"


def unsynced(advisor: Advisor) -> bool:
    """A live source (one that keeps health) whose first list of every object has not finished."""
    return advisor.state.source_health is not None and not advisor.state.ready


class BindVerb:
    """``/scheduler/bind``: ``{"Error": ""}`` when bound, else why not; counted by outcome and reason."""

    def __init__(self, advisor: Advisor, approved: ApprovalLog) -> None:
        self.advisor, self.approved = advisor, approved
        self._ok = advisor.metrics.requests.labels("bind", "ok")
        self._bindings = {o: advisor.metrics.bindings.labels(o) for o in ("bound", "refused", "failed")}

    async def bind(self, body: bytes) -> Answer:
        """kube-scheduler's bind: re-check the room as every replica has promised it, then bind
        (``extender.sources.kube_binder``); ``{"Error": ""}`` when bound, else why not."""
        metrics = self.advisor.metrics
        try:
            doc = parse_json(body)
            args = ExtenderBindingArgs.model_validate(doc)
        except BadRequest as exc:
            metrics.requests.labels("bind", "bad-request").inc()
            return exc.http_status, json.dumps({"detail": str(exc)}).encode()
        except ValidationError as exc:
            metrics.requests.labels("bind", "bad-request").inc()
            return 400, json.dumps({"detail": f"not an ExtenderBindingArgs body: {validation_problems(exc)}"}).encode()
        binding = Binding(args.pod_name, args.pod_namespace, args.pod_uid, args.node)
        try:
            guarded = await self._guard(binding)
            if isinstance(guarded, Refusal):
                metrics.bind_refusals.labels(guarded.reason).inc()
            why = guarded.message if isinstance(guarded, Refusal) else guarded or await self._bind(binding)
        except Exception as exc:  # fail closed, and say so: kube-scheduler places the pod again
            log.exception("bind failed")
            guarded, why = None, f"gpu-advisor failed: {exc}"
        refused = isinstance(guarded, Refusal) or "no longer has room" in why
        outcome = "bound" if not why else "refused" if refused else "failed"
        self._bindings[outcome].inc()
        self._ok.inc()
        if why:
            log.info("bind %s/%s to %s refused: %s", binding.namespace, binding.name, binding.node, why)
        return 200, json.dumps({"Error": why}, separators=(",", ":")).encode()

    async def _guard(self, binding: Binding) -> Refusal | str | None:
        """Why kube-scheduler would not make this binding (``bind_guard``); a plain string when the
        advisor cannot bind at all; None: on to the binder."""
        advisor = self.advisor
        if unsynced(advisor):
            return NOT_SYNCED
        approvals = advisor.approvals
        if approvals is None or approvals.binder is None:
            return f"gpu-advisor serves {advisor.state.source}: it has no API server to bind through"
        approval = self.approved.get(binding.uid, advisor.clock())
        if approval is not None:
            spec = approval.spec
        else:  # never approved here: read the pod, to say which rule it breaks
            read = await asyncio.to_thread(approvals.binder.read_pod, binding)
            if isinstance(read, str):
                return Refusal("pod-unknown", read)
            found = read.get("spec")
            spec = found if isinstance(found, Mapping) else {}
        node = advisor.state.node(binding.node)
        refused = constraints_refusal(spec, binding.node, node, advisor.bind_schedulers)
        if refused is None and (approval is None or not approval.covers(binding.node)):
            refused = Refusal(
                "not-approved",
                f"no filter or prioritize answer of this replica passed {binding.namespace}/{binding.name} on "
                f"{binding.node} in the last {self.approved.window_s:.0f} s; placed again",
            )
        if refused is not None:
            refused = Refusal(refused.reason, f"refused to bind {binding.namespace}/{binding.name}: {refused.message}")
        return refused

    async def _bind(self, binding: Binding) -> str:
        advisor = self.advisor
        assert advisor.approvals is not None and advisor.approvals.binder is not None  # checked by _guard
        return await advisor.approvals.binder.bind_on_loop(binding, lambda pod, node: refusal(advisor, pod, node))
