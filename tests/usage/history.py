"""kube-state-metrics and DCGM exporter history for the usage tests and benchmark, as OpenMetrics for
``promtool tsdb create-blocks-from openmetrics``.

A :class:`Series` is one kube-state-metrics series: its name, labels and value per scrape (a number,
or 1 from scrape ``on`` until scrape ``off`` — a pod's ``phase="Running"`` series once it starts, until
it succeeds), over the scrapes ``first`` to ``until`` (a pod that came and went; None: to the end).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import groupby

from tests.rightsize.history import Gpu, openmetrics


@dataclass(frozen=True)
class Series:
    name: str
    labels: dict[str, str]
    value: float = 1.0
    on: int = 0  # the value from this scrape on; 0 before it
    off: int | None = None  # 0 again from this scrape on (None: never)
    first: int = 0  # the scrapes it is in: first … until − 1
    until: int | None = None


def pod_series(
    namespace: str,
    pod: str,
    node: str,
    resource: str,
    count: int,
    owner: tuple[str, str] | None,
    labels: dict[str, str],
    running_from: int = 0,
    lives: tuple[int, int | None] = (0, None),
    asked_by: str = "requests",
    uid: str | None = None,
    running_until: int | None = None,
) -> list[Series]:
    """The series kube-state-metrics exports for one pod asking for ``count`` of ``resource`` (in its
    ``requests`` or only its ``limits``), existing over the scrapes ``lives`` (first, until), Running
    from ``running_from`` until ``running_until``; ``uid`` tells a pod started again under its name."""
    who = {"namespace": namespace, "pod": pod}
    kind, name = owner or ("<none>", "<none>")
    ask = Series(f"kube_pod_container_resource_{asked_by}", who | {"container": "main", "resource": resource}, count)
    found = [
        ask,
        Series(
            "kube_pod_status_phase",
            who | {"phase": "Running", "uid": uid or f"uid-{pod}"},
            1.0,
            running_from,
            running_until,
        ),
        Series("kube_pod_owner", who | {"owner_kind": kind, "owner_name": name, "owner_is_controller": "true"}),
        Series("kube_pod_labels", who | {f"label_{k}": v for k, v in labels.items()}),
        Series("kube_pod_info", who | {"node": node}),
    ]
    return [replace(s, first=lives[0], until=lives[1]) for s in found]


def node_series(node: str, product: str, replicas: int = 1, strategy: str | None = None) -> Series:
    labels = {"node": node, "label_nvidia_com_gpu_product": product, "label_nvidia_com_gpu_replicas": str(replicas)}
    if strategy:
        labels["label_nvidia_com_gpu_sharing_strategy"] = strategy
    return Series("kube_node_labels", labels)


def _text(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))


def history(series: Iterable[Series], gpus: Sequence[Gpu], start: int, samples: int, interval_s: int) -> Iterator[str]:
    """OpenMetrics of ``samples`` scrapes from ``start`` every ``interval_s``: the DCGM ``gpus``, then
    the kube-state-metrics ``series``."""
    for line in openmetrics(gpus, start, samples, interval_s):
        if line != "# EOF\n":
            yield line
    for name, group in groupby(sorted(series, key=lambda s: s.name), key=lambda s: s.name):
        yield f"# TYPE {name} gauge\n"
        for s in group:
            text = _text(s.labels)
            for i in range(s.first, samples if s.until is None else s.until):
                on = s.on <= i < (samples if s.off is None else s.off)
                yield f"{name}{{{text}}} {s.value if on else 0:g} {start + i * interval_s}\n"
    yield "# EOF\n"
