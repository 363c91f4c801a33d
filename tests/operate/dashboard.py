"""The Grafana dashboard the install ships, built with grafanalib (a test-extra dependency, so it lives
with the tests): ``python -m tests.operate.dashboard`` rewrites the JSON the Helm chart and kustomize
put into a ConfigMap; a test fails when the committed file and this source disagree.

Queries use only series the advisor serves on /metrics, the DCGM exporter names (which the node agent
serves too), and Prometheus' own ``up``; a test checks each name against the served /metrics.
"""

from __future__ import annotations

import json
from pathlib import Path

from grafanalib import core as g
from grafanalib._gen import DashboardEncoder

__all__ = ["DASHBOARD_JSON", "dashboard", "render"]

DASHBOARD_JSON = Path(__file__).parents[2] / "manifests/helm/gpu-advisor/dashboards/gpu-advisor.json"
DS = "${datasource}"
RATE = "$__rate_interval"
WIDTH, HEIGHT = 8, 8


def _target(expr: str, legend: str = "", ref: str = "A") -> g.Target:
    return g.Target(expr=expr, legendFormat=legend, refId=ref, datasource=DS)


def _series(title: str, unit: str, *queries: tuple[str, str], description: str = "") -> g.TimeSeries:
    targets = [_target(expr, legend, chr(ord("A") + i)) for i, (expr, legend) in enumerate(queries)]
    return g.TimeSeries(title=title, dataSource=DS, targets=targets, unit=unit, description=description)


def _stat(title: str, unit: str, expr: str, description: str = "") -> g.Stat:
    return g.Stat(title=title, dataSource=DS, targets=[_target(expr)], format=unit, description=description)


def _rows() -> list[tuple[str, list[g.Panel]]]:
    quantile = "histogram_quantile({q}, sum by (le, {by}) (rate({m}_bucket[{r}])))"
    return [
        (
            "Scheduler extender",
            [
                _series(
                    "Requests per verb and outcome",
                    "reqps",
                    (
                        f"sum by (verb, outcome) (rate(gpu_advisor_extender_requests_total[{RATE}]))",
                        "{{verb}} {{outcome}}",
                    ),
                ),
                _series(
                    "Server time per verb (p50, p99)",
                    "s",
                    (quantile.format(q=0.5, by="verb", m="gpu_advisor_extender_seconds", r=RATE), "p50 {{verb}}"),
                    (quantile.format(q=0.99, by="verb", m="gpu_advisor_extender_seconds", r=RATE), "p99 {{verb}}"),
                    description="kube-scheduler's httpTimeout for the extender is 2 s in this install",
                ),
                _series(
                    "Filter verdicts per node, by verdict",
                    "ops",
                    (f"sum by (verdict) (rate(gpu_advisor_filter_verdicts_total[{RATE}]))", "{{verdict}}"),
                ),
            ],
        ),
        (
            "Admission advisor",
            [
                _series(
                    "Reviews per endpoint and outcome",
                    "reqps",
                    (
                        f"sum by (endpoint, outcome) (rate(gpu_advisor_admission_reviews_total[{RATE}]))",
                        "{{endpoint}} {{outcome}}",
                    ),
                    (f"sum by (endpoint) (rate(gpu_advisor_admission_failures_total[{RATE}]))", "failed {{endpoint}}"),
                ),
                _series(
                    "Server time per review (p99)",
                    "s",
                    (quantile.format(q=0.99, by="endpoint", m="gpu_advisor_admission_seconds", r=RATE), "{{endpoint}}"),
                    description="the webhooks time out after 3 s and are ignored (failurePolicy: Ignore)",
                ),
                _series(
                    "Findings by rule",
                    "ops",
                    (f"sum by (code) (rate(gpu_advisor_admission_findings_total[{RATE}]))", "{{code}}"),
                ),
            ],
        ),
        (
            "Cluster model and telemetry",
            [
                _stat("Replicas ready", "short", "sum(gpu_advisor_ready)"),
                _stat("Nodes in the model", "short", "max(gpu_advisor_nodes)"),
                _stat("Over-committed nodes", "short", "max(gpu_advisor_overcommitted_nodes)"),
                # Each replica counts the pods its own filter calls held: max, as a pod's calls may reach both.
                _stat("Pods held by the reserve", "short", "max(gpu_advisor_reserve_pods_held)"),
                _series(
                    "API server watch: age and silence",
                    "s",
                    ("max by (resource) (gpu_advisor_watch_age_seconds)", "age {{resource}}"),
                    ("max by (resource) (gpu_advisor_watch_silence_seconds)", "silence {{resource}}"),
                ),
                _series(
                    "Telemetry age and source up",
                    "s",
                    ("max(gpu_advisor_telemetry_age_seconds)", "age"),
                    ("min(gpu_advisor_telemetry_source_up)", "up"),
                ),
                _series(
                    "Telemetry coverage: series matched to a node and GPU",
                    "short",
                    ("max by (state) (gpu_advisor_telemetry_series)", "{{state}}"),
                    (f"sum(rate(gpu_advisor_telemetry_poll_errors_total[{RATE}]))", "poll errors/s"),
                ),
                _series(
                    "Objects taken conservatively, and requests refused",
                    "short",
                    ("max by (kind, reason) (gpu_advisor_invalid_objects)", "{{kind}}: {{reason}}"),
                    (f"sum by (reason) (rate(gpu_advisor_requests_refused_total[{RATE}]))", "refused {{reason}}"),
                ),
            ],
        ),
        (
            "Node agents",
            [
                _stat("Agents up", "short", 'sum(up{pod=~"gpu-advisor-agent-.*"})'),
                _stat("Agents down", "short", 'count(up{pod=~"gpu-advisor-agent-.*"} == 0) or vector(0)'),
            ],
        ),
        (
            "GPUs: allocated against used (DCGM)",
            [
                _series(
                    "GPUs allocated to pods, and all GPUs",
                    "short",
                    ('count(DCGM_FI_DEV_GPU_UTIL{pod!=""})', "allocated"),
                    ("count(DCGM_FI_DEV_GPU_UTIL)", "all"),
                ),
                _series(
                    "Allocated GPUs idle for 10 minutes (under 5 %)",
                    "short",
                    ('count(max_over_time(DCGM_FI_DEV_GPU_UTIL{pod!=""}[10m]) < 5) or vector(0)', "idle"),
                ),
                _series(
                    "Mean utilisation of allocated GPUs, by namespace",
                    "percent",
                    ('avg by (namespace) (DCGM_FI_DEV_GPU_UTIL{pod!=""})', "{{namespace}}"),
                ),
                _series(
                    "GPU memory in use",
                    "percentunit",
                    ("sum(DCGM_FI_DEV_FB_USED) / sum(DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)", "used"),
                ),
            ],
        ),
        (
            "GPU-hours by tenant (the last GET /v1/usage report)",
            [
                _series(
                    "GPU-hours allocated, by tenant",
                    "short",
                    ('max by (tenant) (gpu_advisor_usage_gpu_hours{kind="allocated"})', "{{tenant}}"),
                    description="GPU-equivalents: a MIG 3g slice is 3/7 of a GPU, a 1-in-4 share 1/4",
                ),
                _series(
                    "GPU-hours used and idle, by tenant (pods DCGM meters)",
                    "short",
                    ('max by (tenant) (gpu_advisor_usage_gpu_hours{kind="used"})', "{{tenant}} used"),
                    ('max by (tenant) (gpu_advisor_usage_gpu_hours{kind="idle"})', "{{tenant}} idle"),
                ),
            ],
        ),
    ]


def dashboard() -> g.Dashboard:
    panels: list[g.Panel] = []
    y = 0
    for title, row in _rows():
        panels.append(g.RowPanel(title=title, gridPos=g.GridPos(h=1, w=24, x=0, y=y)))
        y += 1
        for i, panel in enumerate(row):
            panel.gridPos = g.GridPos(h=HEIGHT, w=WIDTH, x=(i % 3) * WIDTH, y=y + (i // 3) * HEIGHT)
        panels.extend(row)
        y += ((len(row) + 2) // 3) * HEIGHT
    source = g.Template(name="datasource", label="Prometheus", query="prometheus", type="datasource")
    return g.Dashboard(
        title="gpu-advisor",
        uid="gpu-advisor",
        description="The scheduler extender, the admission advisor, the cluster model, node agents and GPU use",
        tags=["gpu-advisor", "gpu"],
        timezone="browser",
        panels=panels,
        templating=g.Templating(list=[source]),
    ).auto_panel_ids()


def render() -> str:
    return json.dumps(dashboard().to_json_data(), cls=DashboardEncoder, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    DASHBOARD_JSON.write_text(render())
    print(f"wrote {DASHBOARD_JSON}")
