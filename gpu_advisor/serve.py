"""Assemble the served advisor from the command line's choices, and run it under uvicorn."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from extender.cluster.state import ClusterState
from extender.http.advisor import Advisor
from extender.http.auth import TokenCheck
from extender.http.limits import Limits
from extender.http.usage_gauges import UsageRefresh
from extender.model.readings import TelemetryBoard
from extender.scoring import ScoringPolicy
from extender.sources.agent_scrape import AgentScrapeTelemetry
from extender.sources.cluster_choice import KUBE, SIMULATED, live_model
from extender.sources.defrag_look import kept_look, live_look
from extender.sources.disruption_budgets import disruption_budgets
from extender.sources.pod_index import PodIndex, directory_source
from extender.sources.policy_file import load_policy
from extender.sources.polling import Telemetry
from extender.sources.prometheus import PrometheusTelemetry, PrometheusUrlError
from extender.sources.snapshot import simulated_cluster
from extender.sources.telemetry_trust import TelemetryTrust
from gpu_advisor.history_sources import history_source, usage_source
from gpu_advisor.listeners import ExtenderPort, ServeError, listen, listening_line
from gpu_advisor.logs import install_log_hygiene
from gpu_advisor.memory import kept_as_json, settle_memory
from gpu_advisor.servers import build_servers, serve_on_configured_loop, uvicorn_config
from webhook.admission import AdmissionSettings

__all__ = [
    "ServeError",
    "build_advisor",
    "listen",
    "listening_line",
    "run",
    "serve_on_configured_loop",
    "uvicorn_config",
]

log = logging.getLogger(__name__)


class Runs(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...


class Background:
    """Things that run beside the server: telemetry polling, the API server watch."""

    def __init__(self) -> None:
        self.parts: list[Runs] = []

    def start(self) -> None:
        for part in self.parts:
            part.start()

    def stop(self) -> None:
        for part in self.parts:
            part.stop()


def build_advisor(
    cluster: str,
    prometheus: str | None,
    policy_file: str | None,
    kubeconfig: str | None = None,
    scrape_agents: bool = False,
    require_telemetry: bool = False,
    telemetry_window_s: float = 60.0,
    usage_refresh_s: float = 0.0,
    usage_by: str = "namespace",
    claims_namespace: str | None = None,
) -> tuple[Advisor, Background]:
    """The advisor ``gpu-advisor serve`` answers with, and what must run beside it to keep it current (with
    a Prometheus and ``usage_refresh_s`` > 0, the per-tenant usage gauges refreshed that often)."""
    policy = load_policy(policy_file) if policy_file else ScoringPolicy()
    background = Background()
    registry = CollectorRegistry()  # the sources' metrics and the server's, on one /metrics
    served: list[Advisor] = []  # set below: the watch syncs only once the server runs
    model = live_model(
        cluster,
        kubeconfig,
        policy.telemetry_max_age_s,
        on_synced=lambda: _synced(served),
        registry=registry,
        claims_namespace=claims_namespace,
    )
    if model.watch is not None:
        background.parts.append(model.watch)
    state, board = model.state, model.telemetry
    if prometheus or scrape_agents or require_telemetry:
        live = _live_telemetry(
            state,
            model.pods,
            policy,
            prometheus,
            scrape_agents,
            cluster,
            kubeconfig,
            require_telemetry,
            telemetry_window_s,
        )
        board = live.board
        background.parts.append(live)
        registry.register(TelemetryTrust(board))
    advisor = Advisor(state=state, telemetry=board, policy=policy, registry=registry)
    served.append(advisor)
    _wire(advisor, model, cluster, prometheus)
    if prometheus and usage_refresh_s > 0 and advisor.usage is not None:
        background.parts.append(_usage_refresh(advisor, usage_refresh_s, usage_by))
    return advisor, background


def _wire(advisor: Advisor, model: Any, cluster: str, prometheus: str | None) -> None:
    """What the advisor reads besides its model: approvals and the binder (a live cluster), GPU and
    allocation history, and the Pod objects the console reads (a snapshot's or the simulated cluster's)."""
    if model.watch is not None:  # a live cluster: approvals count until bound, and the advisor binds
        from extender.http.approvals import Approvals
        from extender.sources.kube_binder import KubeBinder

        watch = model.watch  # the binder writes the claims Leases where the watch reads them
        advisor.approvals = Approvals(watch.model, KubeBinder(watch.api, watch.model, watch.claims_namespace))
        # an applied defragmentation plan's intents, from the same Lease watch; used up by the owner's new pods
        advisor.planned = watch.model.intents.sender(watch.pod_index.owned_since, lambda: advisor.clock())
        advisor.defrag_look = live_look(watch, lambda: advisor.clock())
    advisor.rightsize = history_source(cluster, prometheus, advisor.state, model.pods)
    advisor.usage = usage_source(cluster, prometheus, advisor.state, model.pods)
    if cluster != KUBE:  # the console reads a snapshot's Pod objects (the live watch keeps only where pods run)
        pods = simulated_cluster().pods if cluster == SIMULATED else model.pods if isinstance(model.pods, list) else []
        advisor.pod_objects = kept_as_json(pods)
        advisor.defrag_look = kept_look(model.nodes, pods, disruption_budgets(cluster))  # as served
        advisor.learn_look(pods)  # its pending pods, as explain and diagnose learn them from the same look


def _usage_refresh(advisor: Advisor, every_s: float, by: str) -> UsageRefresh:
    try:
        return UsageRefresh(advisor, every_s, by)
    except ValueError as exc:
        raise ServeError(f"--usage-by: {exc}") from None


def _synced(served: list[Advisor]) -> None:
    """The live cluster is listed: work out the standing pod shapes, then settle the model's memory."""
    for advisor in served:
        advisor.keep_standing()
    settle_memory(served)


def _live_telemetry(
    state: ClusterState,
    pods: PodIndex | list[dict[str, Any]],
    policy: ScoringPolicy,
    prometheus: str | None,
    scrape_agents: bool,
    cluster: str,
    kubeconfig: str | None,
    require: bool,
    window_s: float,
) -> Telemetry:
    """The polled telemetry source asked for; with ``require``, one that answers now."""
    if prometheus and scrape_agents:
        raise ServeError("choose one telemetry source: --prometheus or --scrape-agents")
    board = TelemetryBoard(policy.telemetry_max_age_s)
    where = directory_source(state, pods)
    if prometheus:
        try:
            source = PrometheusTelemetry(prometheus, board, where=where, window_s=window_s)
            if require:
                source.check()
        except (PrometheusUrlError, RuntimeError) as exc:
            raise ServeError(str(exc)) from None
        return source
    if not scrape_agents:
        raise ServeError("--require-telemetry needs a telemetry source: --prometheus URL or --scrape-agents")
    if cluster != KUBE:
        raise ServeError("--scrape-agents finds the agents through the API server: use it with --cluster kube")
    from extender.sources.kube import agent_targets, kube_api

    agents = AgentScrapeTelemetry(agent_targets(kube_api(kubeconfig)), board, where=where)
    if require:
        agents.refresh()
        if board.last_error:
            raise ServeError(f"--require-telemetry: the node agents do not answer: {board.last_error}")
    return agents


def run(
    advisor: Advisor,
    background: Background,
    host: str,
    port: int,
    cert: str | None,
    key: str | None,
    tls_port: int = 8443,
    admission: AdmissionSettings | None = None,
    auth: TokenCheck | None = None,
    limits: Limits | None = None,
    drain_s: float = 0.0,
    extender: ExtenderPort | None = None,
) -> int:
    """Serve plain HTTP on ``port`` (/v1, console, health, metrics), with a certificate HTTPS on ``tls_port``
    (webhooks and health: the API server calls webhooks over TLS only), and with ``extender``'s client CA
    kube-scheduler's verbs on their own HTTPS port to a client certificate (else on the plain port)."""
    from gpu_advisor.app import Edge

    extender = extender or ExtenderPort()
    if bool(cert) != bool(key):
        raise ServeError("--tls-cert and --tls-key go together")
    if extender.client_ca and not (cert and key):
        raise ServeError("--scheduler-client-ca needs --tls-cert and --tls-key: the extender port serves HTTPS")
    limits = limits or Limits()
    edge = Edge(advisor, admission or AdmissionSettings(), limits, auth, verbs_on_plain=not extender.client_ca)
    pair = (cert, key) if cert and key else None  # both or neither, as checked above
    listeners, servers, roles, reloaders = build_servers(edge, host, (port, tls_port), pair, extender)
    background.parts.extend(reloaders)
    install_log_hygiene()
    # uvicorn names no address when handed bound sockets. Its logger (configured by now) is the one its
    # own start-up lines go through, written whatever --log-level says.
    logging.getLogger("uvicorn.error").info(listening_line([s.getsockname() for s in listeners], roles))
    if advisor.state.ready:  # a snapshot: built already (a live cluster's watch does this once synced)
        advisor.keep_standing()
        settle_memory([advisor])
    background.start()

    if drain_s > 0:
        from gpu_advisor.drain import drain_on_sigterm

        drain_on_sigterm(servers, advisor, drain_s)
    try:
        serve_on_configured_loop(servers, listeners)
    finally:
        background.stop()
    return 0
