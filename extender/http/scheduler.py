"""kube-scheduler's extender verbs: parse its body, judge every candidate node, map to the reply.

Bodies are read raw so every malformed request gets a 400/413 with a message (never a 500), and a
reply is joined from each verdict's fragments, encoded once (``replies``): at 5,000 candidate nodes
the encoder is on the hot path.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import orjson
from fastapi import APIRouter, Request, Response
from pydantic import ValidationError

from extender.errors import validation_problems
from extender.http.advisor import Advisor
from extender.http.docs import EXTENDER_DOCS
from extender.http.offloop import BIG_CALL_NODES, Lane
from extender.http.replies import ReplyFragments, WholeReplies
from extender.http.requests import MAX_DEPTH, BadRequest, json_reply, parse_json, problem_for, read_body
from extender.http.shapes import check_shape
from extender.http.wire import ExtenderArgs, extender_args
from extender.model.pods import PodRequest, pod_request
from extender.scoring import Verdict

__all__ = ["build_router"]

log = logging.getLogger(__name__)
MAX_POD_VALUES = 200_000  # a Pod is at most 1.5 MiB (etcd's object limit)


_Parsed = tuple[ExtenderArgs, list[str], dict[str, dict[str, Any]]]  # (args, candidate names, sent Nodes)


async def _body_json(request: Request, limit: int) -> Any:
    """The body parsed by orjson (in C; 14 % of a 5,000-name call with ``json``). What orjson refuses
    and ``json`` reads (NaN, integers past 64 bits) still gets ``json``'s answer."""
    body = await read_body(request, limit)
    if not body:
        raise BadRequest(400, "empty body: expected JSON")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    # Depth is bounded by the parser for the whole body (orjson refuses past 1,024 levels, json's
    # recursion limit is answered 400) and checked in full for the Pod, which is walked; a NodeList's
    # thousands of Nodes are only read field by field.
    return parse_json(body, max_depth=None)


async def _extender_args(request: Request, advisor: Advisor) -> _Parsed:
    doc = await _body_json(request, advisor.max_body_bytes)
    if not isinstance(doc, dict):
        raise BadRequest(400, "body must be a JSON object with Pod and NodeNames or Nodes")
    check_shape(doc.get("Pod", doc.get("pod")), MAX_DEPTH, MAX_POD_VALUES)
    names_raw = doc.get("NodeNames", doc.get("nodeNames", doc.get("nodenames")))
    if isinstance(names_raw, list) and len(names_raw) > advisor.max_candidates:
        raise BadRequest(413, f"{len(names_raw)} node names is over the limit of {advisor.max_candidates}")
    try:
        args = extender_args(doc)
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
    return args, names, sent


def _request_of(args: ExtenderArgs) -> PodRequest:
    try:
        return pod_request(args.pod)
    except Exception as exc:  # PodSpecError, or a value the parser did not foresee (a null container)
        meta = args.pod.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        # The API server already admitted this pod: a bad gpu-advisor knob must not strand it.
        log.warning(
            "pod %s/%s: %s; judging its GPU count only (fail open)", meta.get("namespace"), meta.get("name"), exc
        )
        try:
            spec_only = {"spec": args.pod.get("spec") or {}}
            return pod_request(spec_only)
        except Exception:
            return PodRequest()


async def _parsed(request: Request, advisor: Advisor, verb: str) -> _Parsed | Response:
    """The parsed body, or the 400/413 reply to a bad one (counted)."""
    try:
        return await _extender_args(request, advisor)
    except BadRequest as exc:
        advisor.metrics.requests.labels(verb, "bad-request").inc()
        return problem_for(exc)


def build_router(advisor: Advisor, lane: Lane | None = None) -> APIRouter:
    router = APIRouter()
    lane = lane or Lane()
    metrics = advisor.metrics
    replies = _Replies(advisor)
    # Label children bound once: ``.labels()`` is a lock and a lookup on every call otherwise.
    ok = {verb: metrics.requests.labels(verb, "ok") for verb in ("filter", "prioritize")}
    seconds = {verb: metrics.seconds.labels(verb) for verb in ("filter", "prioritize")}
    outcomes = [metrics.verdicts.labels(outcome) for outcome in ("pass", "fail", "unresolvable")]

    @router.post("/scheduler/filter", tags=["scheduler extender"], **EXTENDER_DOCS)
    async def scheduler_filter(request: Request) -> Response:
        started = time.perf_counter()
        found = await _parsed(request, advisor, "filter")
        if isinstance(found, Response):
            return found
        try:
            # A large call is judged in a worker thread: health and metrics answer meanwhile.
            reply, counts = await lane.run(lambda: replies.filter(*found), big=len(found[1]) > BIG_CALL_NODES)
        except Exception as exc:  # the extender itself failed: say so in Error, as the protocol asks
            log.exception("filter failed")
            metrics.requests.labels("filter", "error").inc()
            return json_reply(_FILTER_FAILED | {"Error": f"gpu-advisor failed: {exc}"})
        for counter, n in zip(outcomes, counts, strict=True):
            counter.inc(n)
        ok["filter"].inc()
        seconds["filter"].observe(time.perf_counter() - started)
        return Response(reply, media_type="application/json")

    @router.post("/scheduler/prioritize", tags=["scheduler extender"], **EXTENDER_DOCS)
    async def scheduler_prioritize(request: Request) -> Response:
        started = time.perf_counter()
        found = await _parsed(request, advisor, "prioritize")
        if isinstance(found, Response):
            return found
        try:
            reply = await lane.run(lambda: replies.prioritize(*found), big=len(found[1]) > BIG_CALL_NODES)
        except Exception:  # fail open and say so: every node the same, so this extender has no say
            log.exception("prioritize failed: answering 0 for every node")
            metrics.requests.labels("prioritize", "error").inc()
            return json_reply([{"Host": name, "Score": 0} for name in found[1]])
        ok["prioritize"].inc()
        seconds["prioritize"].observe(time.perf_counter() - started)
        return Response(reply, media_type="application/json")

    return router


class _Replies:
    """The encoded replies: the very bytes of last time while the pod shape's verdicts keep their
    version and the candidates are the same names (nodeCacheCapable), else joined from fragments."""

    def __init__(self, advisor: Advisor) -> None:
        self.advisor = advisor
        self.fragments = ReplyFragments()
        self.whole = WholeReplies()

    def filter(self, args: ExtenderArgs, names: list[str], sent: dict[str, dict[str, Any]]) -> tuple[bytes, Counts]:
        pod = _request_of(args)
        version = self.advisor.verdicts_version(pod) if args.node_names is not None else None
        last = self.whole.reuse("filter", pod, names, version)
        if last is not None:
            return last.reply, last.counts
        verdicts = self.advisor.judge(pod, names, sent)
        passed, failed, unresolvable = self.fragments.filter_parts(pod, verdicts)
        text = f'{_passed_head(args, verdicts, passed)},"FailedNodes":{{{",".join(failed)}}},'
        text += f'"FailedAndUnresolvableNodes":{{{",".join(unresolvable)}}},"Error":""}}'
        reply, counts = text.encode(), (len(passed), len(failed), len(unresolvable))
        self.whole.keep("filter", pod, names, version, reply, *counts)
        return reply, counts

    def prioritize(self, args: ExtenderArgs, names: list[str], sent: dict[str, dict[str, Any]]) -> bytes:
        pod = _request_of(args)
        version = self.advisor.verdicts_version(pod) if args.node_names is not None else None
        last = self.whole.reuse("prioritize", pod, names, version)
        if last is not None:
            return last.reply
        reply = self.fragments.priorities(pod, self.advisor.judge(pod, names, sent)).encode()
        self.whole.keep("prioritize", pod, names, version, reply)
        return reply


Counts = tuple[int, ...]


_FILTER_FAILED: dict[str, Any] = {"Nodes": None, "NodeNames": None, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}}


def _passed_head(args: ExtenderArgs, verdicts: list[Verdict], passed: list[str]) -> str:
    """The reply's opening: the nodes that pass, as names or (nodeCacheCapable: false) as Node objects."""
    if args.node_names is not None:
        return '{"Nodes":null,"NodeNames":[' + ",".join(passed) + "]"
    # nodeCacheCapable: false reads only Nodes: names alone would silently filter every node.
    keep = {v.node for v in verdicts if v.fits}
    items = [
        item
        for item in (args.nodes.items if args.nodes else [])
        if str((item.get("metadata") or {}).get("name", "")) in keep
    ]
    return '{"Nodes":' + json.dumps({"metadata": {}, "items": items}, separators=(",", ":")) + ',"NodeNames":null'
