"""The extender's HTTP edge: parse kube-scheduler's body, judge every candidate node, map to the reply.

Bodies are read raw so every malformed request gets a 400/413 with a message (never a 500), and a
reply is built as plain JSON: at 5,000 candidate nodes the encoder is on the hot path.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from pydantic import BaseModel, Field, ValidationError

from extender.cluster import ClusterState, NodeState, node_state
from extender.dryrun import Advise, DryRunAnswer, DryRunError, dry_run
from extender.pods import PodRequest, PodSpecError, pod_request
from extender.scoring import ScoringPolicy, Verdict, VerdictMemo, judge_all
from extender.telemetry import TelemetryBoard
from extender.wire import ExtenderArgs

__all__ = ["Advisor", "BadRequest", "build_dryrun_router", "build_router", "read_manifest"]

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024 * 1024  # a nocache NodeList of 5,000 nodes with managedFields fits
MAX_CANDIDATES = 20_000  # four times Kubernetes' largest supported cluster


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "gpu_advisor_extender_requests",
            "Extender calls by verb and outcome",
            ["verb", "outcome"],
            registry=registry,
        )
        self.seconds = Histogram(
            "gpu_advisor_extender_seconds",
            "Server time per extender call",
            ["verb"],
            registry=registry,
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0),
        )
        self.verdicts = Counter(
            "gpu_advisor_filter_verdicts", "Filter verdicts per node", ["verdict"], registry=registry
        )
        self.nodes = Gauge("gpu_advisor_nodes", "Nodes in the advisor's cluster model", registry=registry)
        self.ready = Gauge("gpu_advisor_ready", "1 once the cluster model has synced", registry=registry)


@dataclass
class Advisor:
    """What the HTTP edges need: the cluster model, live telemetry, the policy, a clock, metrics."""

    state: ClusterState
    telemetry: TelemetryBoard | None
    policy: ScoringPolicy
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    clock: Callable[[], float] = time.time
    max_body_bytes: int = MAX_BODY_BYTES
    max_candidates: int = MAX_CANDIDATES
    metrics: Metrics = field(init=False)
    _sent_nodes: dict[tuple[str, str], NodeState] = field(default_factory=dict, init=False)

    # Admission findings for the dry-run; wired in by the app (the webhook's rules).
    advise: Advise | None = None

    def __post_init__(self) -> None:
        self.metrics = Metrics(self.registry)
        self._memo_for: ClusterState | None = None
        self._memo = VerdictMemo()

    def _verdict_memo(self) -> VerdictMemo:
        """The memo that follows this advisor's current ClusterState (renewed if the state is swapped)."""
        if self._memo_for is not self.state:
            self._memo = VerdictMemo()
            self.state.subscribe(self._memo.forget)
            self._memo_for = self.state
        return self._memo

    def node_for(self, name: str, sent: dict[str, Any] | None) -> NodeState | None:
        """Our model of a node; for a node we have not synced, what its sent object says (nocache)."""
        known = self.state.node(name)
        if known is not None or sent is None:
            return known
        key = (name, str((sent.get("metadata") or {}).get("resourceVersion", "")))
        cached = self._sent_nodes.get(key)
        if cached is None:
            if len(self._sent_nodes) > 50_000:
                self._sent_nodes.clear()
            cached = self._sent_nodes[key] = node_state(sent)
        return cached

    def judge(self, request: PodRequest, names: list[str], sent: dict[str, dict[str, Any]]) -> list[Verdict]:
        if sent:
            # nocache: nodes we have not synced are judged from the objects sent; no shared memo, as
            # those objects are not followed.
            found = {name: self.node_for(name, item) for name, item in sent.items()}
            nodes = {name: node for name, node in found.items() if node is not None}
            return judge_all(request, names, nodes, self.telemetry, self.policy, self.clock())
        return judge_all(
            request,
            names,
            self.state.nodes_by_name(),
            self.telemetry,
            self.policy,
            self.clock(),
            memo=self._verdict_memo(),
        )


async def read_json(request: Request, limit: int) -> Any:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadRequest(413, f"body of {int(declared)} bytes is over the {limit}-byte limit")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BadRequest(413, f"body is over the {limit}-byte limit")
    if not body:
        raise BadRequest(400, "empty body: expected JSON")
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(400, f"body is not JSON: {exc}") from None


def _problem(status: int, message: str) -> Response:
    return Response(json.dumps({"detail": message}), status_code=status, media_type="application/json")


def _json(doc: Any) -> Response:
    return Response(json.dumps(doc, separators=(",", ":")), media_type="application/json")


async def _extender_args(
    request: Request, advisor: Advisor
) -> tuple[ExtenderArgs, list[str], dict[str, dict[str, Any]]]:
    doc = await read_json(request, advisor.max_body_bytes)
    if not isinstance(doc, dict):
        raise BadRequest(400, "body must be a JSON object with Pod and NodeNames or Nodes")
    names_raw = doc.get("NodeNames", doc.get("nodeNames", doc.get("nodenames")))
    if isinstance(names_raw, list) and len(names_raw) > advisor.max_candidates:
        raise BadRequest(413, f"{len(names_raw)} node names is over the limit of {advisor.max_candidates}")
    try:
        args = ExtenderArgs.model_validate(doc)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:5])
        raise BadRequest(400, f"not an ExtenderArgs body: {problems}") from None
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
    except PodSpecError as exc:
        meta = args.pod.get("metadata") or {}
        # The API server already admitted this pod: a bad gpu-advisor knob must not strand it.
        log.warning(
            "pod %s/%s: %s; judging its GPU count only (fail open)", meta.get("namespace"), meta.get("name"), exc
        )
        try:
            spec_only = {"spec": args.pod.get("spec") or {}}
            return pod_request(spec_only)
        except PodSpecError:
            return PodRequest()


def build_router(advisor: Advisor) -> APIRouter:
    router = APIRouter()
    metrics = advisor.metrics

    @router.post("/scheduler/filter", tags=["scheduler extender"])
    async def scheduler_filter(request: Request) -> Response:
        started = time.perf_counter()
        try:
            args, names, sent = await _extender_args(request, advisor)
        except BadRequest as exc:
            metrics.requests.labels("filter", "bad-request").inc()
            return _problem(exc.status, exc.message)
        try:
            verdicts = advisor.judge(_request_of(args), names, sent)
        except Exception as exc:  # the extender itself failed: say so in Error, as the protocol asks
            log.exception("filter failed")
            metrics.requests.labels("filter", "error").inc()
            return _json(
                {
                    "Nodes": None,
                    "NodeNames": None,
                    "FailedNodes": {},
                    "FailedAndUnresolvableNodes": {},
                    "Error": f"gpu-advisor failed: {exc}",
                }
            )
        passed: list[str] = []
        failed: list[str] = []
        unresolvable: list[str] = []
        for v in verdicts:
            if v.fits:
                passed.append(v.node_json)
            else:
                (unresolvable if v.unresolvable else failed).append(f"{v.node_json}:{v.reason_json}")
        metrics.verdicts.labels("pass").inc(len(passed))
        metrics.verdicts.labels("fail").inc(len(failed))
        metrics.verdicts.labels("unresolvable").inc(len(unresolvable))
        # Joined from each verdict's pre-quoted JSON: at 5,000 nodes encoding is otherwise the hot spot.
        if args.node_names is not None:
            head = '{"Nodes":null,"NodeNames":[' + ",".join(passed) + "]"
        else:
            # nodeCacheCapable: false reads only Nodes: names alone would silently filter every node.
            keep = {v.node for v in verdicts if v.fits}
            items = [
                item
                for item in (args.nodes.items if args.nodes else [])
                if str((item.get("metadata") or {}).get("name", "")) in keep
            ]
            nodes_json = json.dumps({"metadata": {}, "items": items}, separators=(",", ":"))
            head = '{"Nodes":' + nodes_json + ',"NodeNames":null'
        text = (
            f'{head},"FailedNodes":{{{",".join(failed)}}},'
            f'"FailedAndUnresolvableNodes":{{{",".join(unresolvable)}}},"Error":""}}'
        )
        metrics.requests.labels("filter", "ok").inc()
        metrics.seconds.labels("filter").observe(time.perf_counter() - started)
        return Response(text, media_type="application/json")

    @router.post("/scheduler/prioritize", tags=["scheduler extender"])
    async def scheduler_prioritize(request: Request) -> Response:
        started = time.perf_counter()
        try:
            args, names, sent = await _extender_args(request, advisor)
        except BadRequest as exc:
            metrics.requests.labels("prioritize", "bad-request").inc()
            return _problem(exc.status, exc.message)
        try:
            verdicts = advisor.judge(_request_of(args), names, sent)
            # Joined from each verdict's pre-made entry: at 5,000 nodes encoding is otherwise the hot spot.
            text = "[" + ",".join([v.priority_json for v in verdicts]) + "]"
        except Exception:  # fail open and say so: every node the same, so this extender has no say
            log.exception("prioritize failed: answering 0 for every node")
            metrics.requests.labels("prioritize", "error").inc()
            return _json([{"Host": name, "Score": 0} for name in names])
        metrics.requests.labels("prioritize", "ok").inc()
        metrics.seconds.labels("prioritize").observe(time.perf_counter() - started)
        return Response(text, media_type="application/json")

    return router


# -- dry-run and inventory ------------------------------------------------------------------------


class NodeSummary(BaseModel):
    name: str
    product: str | None
    gpus: int = Field(description="nvidia.com/gpu allocatable (time-sliced: replicas)")
    gpus_free: int = Field(description="by the tighter of allocation counts and the agent's last report")
    free_gpus: list[int] | None = Field(description="free physical GPUs (None: topology unknown)")
    mig_profiles: list[str]
    time_sliced: bool
    nvlink_islands: list[list[int]] | None
    numa_groups: dict[str, list[int]] | None
    fingerprint: str | None
    telemetry_age_s: float | None = Field(description="age of the newest GPU reading (None: none)")
    pods: list[str]


class NodeDetail(NodeSummary):
    topology: dict[str, Any] | None = Field(description="the topology JSON document")
    assumed: dict[str, list[int]] = Field(description="pods bound after the last free-GPU report → predicted GPUs")


def _summary(node: NodeState, telemetry: TelemetryBoard | None, now: float) -> dict[str, Any]:
    topo = node.topology
    age = telemetry.node_age(node.name, now) if telemetry is not None else None
    return {
        "name": node.name,
        "product": node.product,
        "gpus": node.gpu_total,
        "gpus_free": node.free_now,
        "free_gpus": list(node.free_gpus) if node.free_gpus is not None else None,
        "mig_profiles": node.mig_profiles(),
        "time_sliced": node.time_sliced,
        "nvlink_islands": topo.nvlink_islands() if topo else None,
        "numa_groups": {str(k): v for k, v in topo.numa_groups().items()} if topo else None,
        "fingerprint": topo.fingerprint if topo else None,
        "telemetry_age_s": None if age is None else round(age, 1),
        "pods": [p.key for p in node.pods],
    }


def read_manifest(body: bytes) -> Any:
    """JSON or YAML (YAML is a superset); a parse error names its line."""
    import yaml

    if not body.strip():
        raise BadRequest(400, "empty body: expected a Pod or workload manifest (JSON or YAML)")
    try:
        return yaml.safe_load(body)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise BadRequest(400, f"manifest is not valid JSON or YAML: {where}{exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise BadRequest(400, f"manifest is not valid JSON or YAML: {exc}") from None


_DRY_RUN_BODY = {
    "description": "A Pod or workload manifest, or {manifest, snapshot} to judge against a snapshot instead of "
    "the live state. JSON or YAML.",
    "required": True,
    "content": {
        "application/json": {"schema": {"type": "object"}},
        "application/yaml": {"schema": {"type": "object"}},
    },
}


def build_dryrun_router(advisor: Advisor) -> APIRouter:
    router = APIRouter(prefix="/v1")

    @router.post(
        "/dry-run",
        tags=["dry-run"],
        response_model=DryRunAnswer,
        openapi_extra={"requestBody": _DRY_RUN_BODY},
        responses={400: {"description": "unreadable body (names the line)"}, 422: {"description": "not judgeable"}},
    )
    async def dry_run_route(request: Request) -> Response:
        from extender.snapshot import SnapshotError, parse_snapshot

        try:
            body = bytearray()
            async for chunk in request.stream():
                body += chunk
                if len(body) > advisor.max_body_bytes:
                    raise BadRequest(413, f"body is over the {advisor.max_body_bytes}-byte limit")
            doc = read_manifest(bytes(body))
        except BadRequest as exc:
            return _problem(exc.status, exc.message)
        manifest, nodes, telemetry = doc, advisor.state.nodes_by_name(), advisor.telemetry
        memo: VerdictMemo | None = advisor._verdict_memo()
        if isinstance(doc, dict) and "manifest" in doc:
            manifest = doc["manifest"]
            if doc.get("snapshot") is not None:
                try:
                    snap = parse_snapshot(doc["snapshot"])
                except SnapshotError as exc:
                    return _problem(422, f"snapshot: {exc}")
                nodes = snap.cluster("dry-run").nodes_by_name()
                telemetry, memo = snap.telemetry(advisor.policy.telemetry_max_age_s), None
        try:
            answer = dry_run(manifest, nodes, telemetry, advisor.policy, advisor.clock(), memo, advisor.advise)
        except DryRunError as exc:
            return _problem(422, str(exc))
        return Response(answer.model_dump_json(), media_type="application/json")

    @router.get("/nodes", tags=["inventory"], response_model=list[NodeSummary])
    def list_nodes() -> list[dict[str, Any]]:
        now = advisor.clock()
        return [_summary(n, advisor.telemetry, now) for n in sorted(advisor.state.nodes(), key=lambda n: n.name)]

    @router.get(
        "/nodes/{name}", tags=["inventory"], response_model=NodeDetail, responses={404: {"description": "no such node"}}
    )
    def get_node(name: str) -> Any:
        node = advisor.state.node(name)
        if node is None:
            return _problem(404, f"no node {name!r} in the advisor's model ({len(advisor.state.nodes())} nodes)")
        detail = _summary(node, advisor.telemetry, advisor.clock())
        detail["topology"] = node.topology.to_dict() if node.topology else None
        detail["assumed"] = {pod: list(gpus) for pod, gpus in node.assumed}
        return detail

    return router
