"""kube-scheduler's extender verbs on raw bytes: parse the body, judge every candidate node, answer.

Both the ASGI fast lane (``scheduler``) and the documented FastAPI routes call :class:`SchedulerVerbs`,
so there is one implementation. The warm path — a pod shape whose verdicts are remembered, asked about
the same candidates — is answered on the event loop with the very bytes of last time: parse the body
(orjson, in C), look the pod's request up by its content, compare the names. Only a call that must
judge nodes takes the judging lane (a worker thread when it is large).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import orjson
from pydantic import ValidationError

from extender.cluster.dra_view import pod_through_claims
from extender.errors import MalformedInput, validation_problems
from extender.http.advisor import Advisor, pod_key
from extender.http.approvals import chosen_by_filter, chosen_by_prioritize
from extender.http.best_node import best_only, nodes_head
from extender.http.bind_guard import Approval, ApprovalLog, constraints_of, pod_uid
from extender.http.bind_verb import NOT_SYNCED, BindVerb, unsynced
from extender.http.candidates import CandidateLists
from extender.http.offloop import BIG_CALL_NODES, Lane
from extender.http.pod_requests import PodRequests
from extender.http.replies import ReplyFragments, WholeReplies, filter_answer
from extender.http.requests import BadRequest, parse_json
from extender.http.wire import ExtenderArgs, extender_args
from extender.model.pods import PodRequest
from extender.scoring import Verdict
from extender.scoring.ranking_stream import OrderStreams

__all__ = ["NOT_SYNCED", "Answer", "SchedulerVerbs"]

log = logging.getLogger(__name__)

Answer = tuple[int, bytes]  # HTTP status, JSON body
# What is left to do once the answer is sent: count the pick it approved (``_assume``). Run before the
# event loop reads another call, so no later answer misses it; kube-scheduler goes on meanwhile.
Then = Callable[[], None]
# (args, candidate names, sent Nodes, the pod's request)
_Parsed = tuple[ExtenderArgs, list[str], dict[str, dict[str, Any]], PodRequest]
_FITS, _UNRESOLVABLE = attrgetter("fits"), attrgetter("unresolvable")
_FILTER_FAILED: dict[str, Any] = {"Nodes": None, "NodeNames": None, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}}


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def _nothing() -> None:
    pass


def _problem(exc: MalformedInput) -> Answer:
    return int(getattr(exc, "http_status", 400)), json.dumps({"detail": str(exc)}).encode()


class SchedulerVerbs:
    """filter and prioritize: the cluster model's verdicts in kube-scheduler's wire form."""

    def __init__(self, advisor: Advisor, lane: Lane | None = None) -> None:
        self.advisor = advisor
        self.lane = lane or Lane()
        self.fragments = ReplyFragments()
        self.whole = WholeReplies()
        self.pods = PodRequests()
        self.candidates = CandidateLists()
        self.orders = OrderStreams()  # the filter's best node, call after call
        self.approved = ApprovalLog()  # what this replica's answers approved: the bind verb binds only that
        self.binds = BindVerb(advisor, self.approved)
        advisor.standing_listeners.append(self._encode_ahead)
        metrics = advisor.metrics
        # Label children bound once: ``.labels()`` is a lock and a lookup on every call otherwise.
        self._ok = {verb: metrics.requests.labels(verb, "ok") for verb in ("filter", "prioritize")}
        self._bad = {verb: metrics.requests.labels(verb, "bad-request") for verb in ("filter", "prioritize")}
        self._seconds = {verb: metrics.seconds.labels(verb) for verb in ("filter", "prioritize")}
        self._outcomes = [metrics.verdicts.labels(outcome) for outcome in ("pass", "fail", "unresolvable")]

    def _encode_ahead(self, verdicts: list[Verdict]) -> None:
        """The standing shapes' wire fragments, worked out ahead: only where the filter passes every fitting
        node. Passing the best alone, a GPU pod's answer names one node and prioritize is never asked
        about it; the fragments of every node (~7 MiB at 5,000 nodes) would be kept for nothing."""
        if self.advisor.filter_passes == "fitting":
            self.fragments.encode_ahead(verdicts)

    async def filter(self, body: bytes) -> Answer:
        answer, then = await self.filter_then(body)
        then()
        return answer

    async def prioritize(self, body: bytes) -> Answer:
        answer, then = await self.prioritize_then(body)
        then()
        return answer

    async def filter_then(self, body: bytes) -> tuple[Answer, Then]:
        """The filter's answer, and what is left to do once it is sent."""
        started = time.perf_counter()
        try:
            parsed = self._parse(body)
        except MalformedInput as exc:
            self._bad["filter"].inc()
            return _problem(exc), _nothing
        if unsynced(self.advisor):
            self.advisor.metrics.requests.labels("filter", "not-synced").inc()
            return (200, _dumps(_FILTER_FAILED | {"Error": NOT_SYNCED})), _nothing
        try:
            reply, counts, chosen = await self._filter(*parsed)
        except Exception as exc:  # the extender itself failed: say so in Error, as the protocol asks
            log.exception("filter failed")
            self.advisor.metrics.requests.labels("filter", "error").inc()
            return (200, _dumps(_FILTER_FAILED | {"Error": f"gpu-advisor failed: {exc}"})), _nothing
        for counter, n in zip(self._outcomes, counts, strict=True):
            counter.inc(n)
        self._ok["filter"].inc()
        self._seconds["filter"].observe(time.perf_counter() - started)
        return (200, reply), functools.partial(self._assume, parsed[0], parsed[3], chosen, None, reply)

    async def prioritize_then(self, body: bytes) -> tuple[Answer, Then]:
        """The prioritize answer, and what is left to do once it is sent."""
        started = time.perf_counter()
        try:
            parsed = self._parse(body)
        except MalformedInput as exc:
            self._bad["prioritize"].inc()
            return _problem(exc), _nothing
        names = parsed[1]
        try:
            reply, chosen = await self._prioritize(*parsed)
        except Exception:  # fail open and say so: every node the same, so this extender has no say
            log.exception("prioritize failed: answering 0 for every node")
            self.advisor.metrics.requests.labels("prioritize", "error").inc()
            return (200, _dumps([{"Host": name, "Score": 0} for name in names])), _nothing
        self._ok["prioritize"].inc()
        self._seconds["prioritize"].observe(time.perf_counter() - started)
        return (200, reply), functools.partial(self._assume, parsed[0], parsed[3], chosen, names)

    # -- parsing ------------------------------------------------------------------------------------

    def _parse(self, body: bytes) -> _Parsed:
        """The body parsed by orjson (in C; 14 % of a 5,000-name call with ``json``). What orjson refuses
        and ``json`` reads (NaN, integers past 64 bits) still gets ``json``'s answer."""
        if not body:
            raise BadRequest(400, "empty body: expected JSON")
        split = self.candidates.split(body)  # kube-scheduler's own body: its names read once per list
        if split is not None:
            return self._args(split, names_are_strings=True)
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            # Depth is bounded by the parser for the whole body (orjson refuses past 1,024 levels,
            # json's recursion limit is answered 400) and checked in full for the Pod, which is walked
            # (``pod_requests``); a NodeList's thousands of Nodes are only read field by field.
            doc = parse_json(body, max_depth=None)
        return self._args(doc)

    def _args(self, doc: Any, names_are_strings: bool = False) -> _Parsed:
        advisor = self.advisor
        if not isinstance(doc, dict):
            raise BadRequest(400, "body must be a JSON object with Pod and NodeNames or Nodes")
        names_raw = doc.get("NodeNames", doc.get("nodeNames", doc.get("nodenames")))
        if isinstance(names_raw, list) and len(names_raw) > advisor.max_candidates:
            raise BadRequest(413, f"{len(names_raw)} node names is over the limit of {advisor.max_candidates}")
        try:
            args = extender_args(doc, names_are_strings)
        except ValidationError as exc:
            raise BadRequest(400, f"not an ExtenderArgs body: {validation_problems(exc)}") from None
        if args.node_names is None and args.nodes is None:
            raise BadRequest(400, "not an ExtenderArgs body: neither NodeNames nor Nodes is set")
        names = args.candidate_names()
        if len(names) > advisor.max_candidates:
            raise BadRequest(413, f"{len(names)} nodes is over the limit of {advisor.max_candidates}")
        sent = (
            {}
            if args.node_names is not None or args.nodes is None
            else {str((item.get("metadata") or {}).get("name", "")): item for item in args.nodes.items}
        )
        return args, names, sent, self.pods.request(pod_through_claims(args.pod, advisor.state.dra))

    # -- answering ----------------------------------------------------------------------------------

    def _version(self, args: ExtenderArgs, pod: PodRequest) -> float | None:
        """Count the pod into the learned mix; its verdicts' version, if remembered (nodeCacheCapable)."""
        self.advisor.learn(pod, pod_key(args.pod))
        return self.advisor.verdicts_version(pod, args.pod) if args.node_names is not None else None

    async def _filter(
        self, args: ExtenderArgs, names: list[str], sent: dict[str, dict[str, Any]], pod: PodRequest
    ) -> tuple[bytes, Counts, str | None]:
        approvals = self.advisor.approvals
        if approvals is not None:  # placed again: what was assumed of it no longer holds
            approvals.claims.forget(args.pod)
            approvals.claims.sweep()
        version = self._version(args, pod)
        kind = f"filter-{self.advisor.filter_passes}"  # the replies of one mode only
        last = self.whole.reuse(kind, pod, names, version)
        if last is not None:
            self.advisor.heard(pod, pod_key(args.pod), last.counts[0] > 0, args.pod)  # a waiting pod is heard again
            return last.reply, last.counts, last.chosen

        def judge() -> tuple[bytes, Counts, str | None]:
            verdicts = self.advisor.judge(pod, names, sent, False, pod_key(args.pod), args.pod)  # no scores
            best = self._best(args, pod, verdicts)
            if best is not None:  # kube-scheduler skips scoring and binds the one node passed
                reply, counts = best[0], best[2]
            elif args.node_names is not None:
                reply, counts = self.fragments.filter_reply(pod, verdicts)
            else:
                passed, failed, unresolvable = self.fragments.filter_parts(pod, verdicts)
                head = nodes_head(args, {v.node for v in verdicts if v.fits})
                reply = filter_answer(head, failed, unresolvable).encode()
                counts = (len(passed), len(failed), len(unresolvable))
            # One node left: kube-scheduler skips prioritize and binds it.
            if approvals is None:
                chosen = None
            else:
                chosen = best[1] if best is not None else chosen_by_filter(verdicts) if counts[0] == 1 else None
            self.whole.keep(kind, pod, names, version, reply, *counts, chosen=chosen)
            return reply, counts, chosen

        return await self.lane.run_timed(("filter", pod), judge, big=len(names) > BIG_CALL_NODES)

    def _best(self, args: ExtenderArgs, pod: PodRequest, verdicts: list[Verdict]) -> tuple[bytes, str, Counts] | None:
        """The answer passing the best node alone, that node, and the verdicts' outcomes (``best_node``);
        None: every fitting node."""
        if not pod.wants_gpu or self.advisor.filter_passes != "best":
            return None
        planned = self.advisor.planned(args.pod) if self.advisor.planned is not None else ()
        read = self.orders.read(pod, verdicts)
        best = best_only(args, verdicts, planned, lambda _: read.order)
        if best is None:
            return None
        if read.order is None:  # an applied plan's node, where the advisor has no order
            return (*best, _outcomes(verdicts))
        fits = read.order.passing
        return (*best, (fits, len(verdicts) - fits - read.unresolvable, read.unresolvable))

    def _assume(
        self,
        args: ExtenderArgs,
        pod: PodRequest,
        chosen: str | None,
        candidates: list[str] | None = None,
        filter_reply: bytes | None = None,
    ) -> None:
        """kube-scheduler binds the pod on ``chosen``: count it there until the watch shows where it went;
        and the bind verb may bind it on any node this answer passed."""
        approvals = self.advisor.approvals
        if approvals is None:
            return
        spec = constraints_of(args.pod.get("spec"))
        self.approved.keep(pod_uid(args.pod), Approval(spec, self.advisor.clock(), chosen, candidates, filter_reply))
        if chosen is None or not (pod.wants_gpu or pod.cpu_milli or pod.memory_mib):
            return
        try:
            approvals.claims.assume(args.pod, chosen)
        except Exception:  # the answer is sent; the watch still shows the binding (the bind verb re-checks)
            log.exception("counting %s on %s failed", pod_key(args.pod), chosen)

    async def _prioritize(
        self, args: ExtenderArgs, names: list[str], sent: dict[str, dict[str, Any]], pod: PodRequest
    ) -> tuple[bytes, str | None]:
        version = self._version(args, pod)
        last = self.whole.reuse("prioritize", pod, names, version)
        if last is not None:
            return last.reply, last.chosen
        approvals = self.advisor.approvals

        def judge() -> tuple[bytes, str | None]:
            verdicts = self.advisor.judge(pod, names, sent, pod=args.pod)
            reply = self.fragments.priorities(pod, verdicts).encode()
            chosen = chosen_by_prioritize(verdicts) if approvals is not None else None
            self.whole.keep("prioritize", pod, names, version, reply, chosen=chosen)
            return reply, chosen

        return await self.lane.run_timed(("prioritize", pod), judge, big=len(names) > BIG_CALL_NODES)

    async def bind_then(self, body: bytes) -> tuple[Answer, Then]:
        return await self.bind(body), _nothing

    async def bind(self, body: bytes) -> Answer:
        return await self.binds.bind(body)


Counts = tuple[int, ...]


def _outcomes(verdicts: list[Verdict]) -> Counts:
    """How many of the candidates fit, failed, failed unresolvably (the verdicts counter's outcomes)."""
    fits, unresolvable = sum(map(_FITS, verdicts)), sum(map(_UNRESOLVABLE, verdicts))
    return fits, len(verdicts) - fits - unresolvable, unresolvable
