"""The served advisor's own metrics: extender calls, verdicts, the model, the reserve's holds, bindings."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["Metrics"]


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
        self.overcommitted = Gauge(
            "gpu_advisor_overcommitted_nodes",
            "Nodes whose bound pods hold more than they have: whole GPUs per resource, or shares of one GPU",
            registry=registry,
        )
        self.held = Counter(
            "gpu_advisor_reserve_holds",
            "Filter calls that held a share off a node for the whole-GPU pods likely to need it (replies "
            "given again from memory included)",
            registry=registry,
        )
        self.pods_held = Gauge(
            "gpu_advisor_reserve_pods_held",
            "Pods the reserve holds now: no node passed their last filter call, the reserve refused some, "
            "and their hold limit has not passed",
            registry=registry,
        )
        self.standing_failures = Counter(
            "gpu_advisor_standing_shape_failures",
            "Times working out the standing pod shapes' verdicts failed (then judged on request)",
            registry=registry,
        )
        self.bindings, self.bind_refusals = _binding_metrics(registry)


def _binding_metrics(registry: CollectorRegistry) -> tuple[Counter, Counter]:
    """The bind verb's calls by outcome, and the bindings refused as kube-scheduler would not make them."""
    bindings = Counter(
        "gpu_advisor_bindings",
        "Bind verb calls by outcome: bound, refused (no room now), failed",
        ["outcome"],
        registry=registry,
    )
    bind_refusals = Counter(
        "gpu_advisor_bind_refusals",
        "Bindings refused because kube-scheduler would not bind them: by reason (scheduler, node-unknown, "
        "constraints, not-approved, pod-unknown)",
        ["reason"],
        registry=registry,
    )
    return bindings, bind_refusals
