"""Each GPU pod's allocation over a window, from kube-state-metrics and DCGM exporter series in
Prometheus (or any server with its query API: Thanos, Mimir, VictoriaMetrics).

The cost is what a month of 30 s scrapes makes it: every pass over the raw samples of 1,000 pods
costs Prometheus 2–3 CPU-seconds (60 s scrapes), so each figure takes one pass at most, and none
that a cheaper read answers exactly:

- the GPU asks: ``kube_pod_container_resource_requests`` (else ``_limits``) of ``nvidia.com/*`` and
  ``amd.com/gpu`` resources, summed over the pod's containers, sampled at the bucket step
  (``extender.sources.usage_asks``);
- the hours Running: ``kube_pod_status_phase{phase="Running"}`` read at the bucket step, its samples
  counted only in the buckets where a pod started or stopped (``extender.sources.running_hours``), ×
  kube-state-metrics' scrape interval: a whole bucket's sample count (as in
  ``extender.sources.sample_coverage``) of ``kube_node_labels`` over the window's last day — the same
  scrape, a node per series, long-lived — and of the pods' phases over the whole window only where no
  node series is there;
- the owner (``kube_pod_owner``), labels (``kube_pod_labels``), node (``kube_pod_info``) and the
  node's product and GPU sharing (``kube_node_labels``: ``nvidia.com/gpu.product``, ``.replicas``,
  ``.sharing-strategy``, as GPU feature discovery sets them), from the series index: their labels
  are what they say, so no sample is read;
- the use: busy hours (one ``sum_over_time`` of SM activity) and VRAM peaks of the DCGM series
  naming each pod (``extender.sources.usage_dcgm``).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from extender.advice.rightsize import Owner, owner_of_pod
from extender.advice.usage import GpuAsk, PodUsage, gpu_ask, with_dcgm_use
from extender.model.series_map import Directory
from extender.sources.prometheus_query import PrometheusQuery
from extender.sources.running_hours import running_hours
from extender.sources.sample_coverage import bucket_seconds
from extender.sources.usage_asks import Asked, Pod, asked_gpus
from extender.sources.usage_dcgm import device_use

__all__ = ["UsageHistory"]

_FULL_BUCKET = "max(max_over_time(count_over_time(kube_node_labels[{b}])[{day}:{s}]))"
_PODS_FULL_BUCKET = 'max(max_over_time(count_over_time(kube_pod_status_phase{phase="Running"}[{b}])[{w}:{s}]))'
# Series whose labels are all they tell: read from the index (/api/v1/series), no samples decoded.
_LABELLED = ("kube_pod_owner", "kube_pod_labels", "kube_pod_info", "kube_node_labels")


def _filled(template: str, fill: Mapping[str, str]) -> str:
    for mark, value in fill.items():
        template = template.replace(mark, value)
    return template


def _pods(found: list[dict[str, str]]) -> dict[tuple[str, str], dict[str, str]]:
    return {(labels.get("namespace", ""), labels.get("pod", "")): labels for labels in found}


def _owner(namespace: str, name: str, owner: Mapping[str, str], labels: Mapping[str, str]) -> Owner:
    kind, owner_name = owner.get("owner_kind", "<none>"), owner.get("owner_name", "")
    refs = [{"kind": kind, "name": owner_name, "controller": True}] if kind not in ("<none>", "") else []
    # kube-state-metrics exports no label unless allowed: a ReplicaSet's pod name carries its hash.
    template_hash = labels.get("label_pod_template_hash") or (
        owner_name.rsplit("-", 1)[-1] if kind == "ReplicaSet" and name.startswith(f"{owner_name}-") else ""
    )
    meta = {"namespace": namespace, "name": name, "ownerReferences": refs, "labels": {}}
    if template_hash:
        meta["labels"] = {"pod-template-hash": template_hash}
    return owner_of_pod({"metadata": meta})


def _asks(rows: list[tuple[str, float]], node: Mapping[str, str]) -> tuple[GpuAsk, ...]:
    replicas = node.get("label_nvidia_com_gpu_replicas", "1")
    strategy = node.get("label_nvidia_com_gpu_sharing_strategy")
    count = int(replicas) if replicas.isdigit() else 1
    asks = (gpu_ask(resource, value, count, strategy) for resource, value in rows)
    return tuple(a for a in asks if a is not None and a.count > 0)


class UsageHistory:
    """Reads every GPU pod's allocation and use over a window from a Prometheus server."""

    def __init__(self, url: str, timeout_s: float = 60.0, workers: int = 4) -> None:
        self.query = PrometheusQuery(url, timeout_s, workers)
        self.url = self.query.url

    def pods(self, end: float, window_s: float, where: Directory | None = None, vram: bool = True) -> list[PodUsage]:
        """The GPU pods of the ``window_s`` before ``end`` (aligned down to a bucket), with their use;
        their VRAM peaks only with ``vram`` (one more pass over the DCGM samples)."""
        bucket = bucket_seconds(window_s)
        end = end // bucket * bucket
        with ThreadPoolExecutor(max_workers=3) as pool:  # the DCGM pass and the index reads beside the rest
            dcgm = pool.submit(device_use, self.query, end, window_s, bucket, where or Directory(), vram)
            asks = pool.submit(asked_gpus, self.query, end, window_s, bucket)
            index = pool.submit(lambda: {n: self.query.series(n, end - window_s, end) for n in _LABELLED})
            interval_s = self._interval(end, window_s, bucket)
            asked = asks.result()
            running = running_hours(self.query, asked, end, window_s, bucket, interval_s)
            series, labelled = dcgm.result(), index.result()
        return with_dcgm_use(_usage(asked, running, labelled), series)

    def _interval(self, end: float, window_s: float, bucket: float) -> float:
        """kube-state-metrics' scrape interval: a whole bucket's sample count."""
        w, b = f"{round(window_s)}s", f"{round(bucket * 1000) - 1}ms"
        fill = {"{w}": w, "{b}": b, "{s}": f"{round(bucket)}s", "{day}": f"{round(min(window_s, 86400))}s"}
        full = max((v for _, v in self.query.vector(_filled(_FULL_BUCKET, fill), end).values()), default=0.0)
        if not full:  # no node series: the pods' own phases tell the interval
            pods_full = self.query.vector(_filled(_PODS_FULL_BUCKET, fill), end)
            full = max((v for _, v in pods_full.values()), default=0.0)
        return bucket / full if full else 0.0


def _usage(rows: Asked, running: Mapping[Pod, float], labelled: Mapping[str, list[dict[str, str]]]) -> list[PodUsage]:
    owners, pod_labels = _pods(labelled["kube_pod_owner"]), _pods(labelled["kube_pod_labels"])
    info = _pods(labelled["kube_pod_info"])
    nodes = {lb.get("node", ""): lb for lb in labelled["kube_node_labels"]}
    out = []
    for (namespace, name), asked in sorted(rows.items()):
        node = nodes.get(info.get((namespace, name), {}).get("node", ""), {})
        asks = _asks(asked, node)
        labels = pod_labels.get((namespace, name), {})
        if asks:
            out.append(
                PodUsage(
                    namespace=namespace,
                    name=name,
                    owner=_owner(namespace, name, owners.get((namespace, name), {}), labels),
                    asks=asks,
                    running_hours=running.get((namespace, name), 0.0),
                    product=node.get("label_nvidia_com_gpu_product") or None,
                    labels={k[6:]: v for k, v in labels.items() if k.startswith("label_")},
                )
            )
    return out
