"""The table of pods both definitions of "a GPU pod" must agree on: one row per convention, and the near misses.

Each row: the pod, the conventions it asks in (in the table order of ``gpu_conventions.CONVENTIONS``), and
whether only the advisor counts it. A pod is a GPU pod when it asks in any convention.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Doc = dict[str, Any]


def pod(
    limits: dict[str, Any] | None = None,
    requests: dict[str, Any] | None = None,
    *,
    init: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    claims: list[Doc] | None = None,
    scheduler: str | None = "default-scheduler",  # what the API server has defaulted by admission
    labels: dict[str, str] | None = None,
) -> Doc:
    resources = {k: v for k, v in (("limits", limits), ("requests", requests)) if v is not None}
    spec: Doc = {"containers": [{"name": "main", "image": "x", **({"resources": resources} if resources else {})}]}
    if init is not None:
        spec["initContainers"] = [{"name": "fetch", "image": "x", "resources": {"limits": init}}]
    if claims is not None:
        spec["resourceClaims"] = claims
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    meta: Doc = {"name": "p", "namespace": "ml"}
    if annotations is not None:
        meta["annotations"] = annotations
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


@dataclass(frozen=True)
class Row:
    id: str
    pod: Doc
    conventions: tuple[str, ...]
    advisor_only: bool = field(default=False)

    @property
    def gpu(self) -> bool:
        return bool(self.conventions)


ALIBABA = {"alibabacloud.com/gpu-milli": "500", "alibabacloud.com/gpu-count": "1"}
TEMPLATE_CLAIM = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]

ROWS = [
    Row("whole nvidia GPUs in limits", pod({"nvidia.com/gpu": "2"}), ("nvidia",)),
    Row("whole nvidia GPUs in requests only", pod(requests={"nvidia.com/gpu": "1"}), ("nvidia",)),
    Row("a MIG slice", pod({"nvidia.com/mig-1g.10gb": "1"}), ("nvidia-mig",)),
    Row("an AMD GPU", pod({"amd.com/gpu": "1"}), ("amd",)),
    Row("an AMD partition", pod({"amd.com/cpx_nps4": "2"}), ("amd",)),
    Row("an Alibaba share by annotation", pod(annotations=ALIBABA), ("alibaba",), True),
    Row("an Alibaba count alone", pod(annotations={"alibabacloud.com/gpu-count": "2"}), ("alibaba",), True),
    Row("Alibaba annotations of 0 ask nothing", pod(annotations={"alibabacloud.com/gpu-milli": "0"}), ()),
    Row("an Aliyun memory share", pod({"aliyun.com/gpu-mem": "8"}), ("aliyun",), True),
    Row("a HAMi memory share beside its GPU count", pod({"nvidia.com/gpu": "1", "nvidia.com/gpumem": "8000"}),
        ("hami", "nvidia"), True),
    Row("a HAMi cores share alone", pod(requests={"nvidia.com/gpucores": "30"}), ("hami",), True),
    Row("a HAMi memory percentage", pod({"nvidia.com/gpumem-percentage": "50"}), ("hami",), True),
    Row("a DRA claim from a template", pod(claims=TEMPLATE_CLAIM), ("dra",)),
    Row("a DRA claim by name", pod(claims=[{"name": "gpu", "resourceClaimName": "shared-gpu"}]), ("dra",)),
    Row("an empty resourceClaims list", pod(claims=[]), ()),
    Row("a GPU in an init container", pod({"cpu": "1"}, init={"nvidia.com/gpu": "1"}), ("nvidia",)),
    Row("a HAMi share in an init container", pod(init={"nvidia.com/gpumem": "4000"}), ("hami",), True),
    Row("CPU and memory only", pod({"cpu": "2", "memory": "4Gi"}, {"cpu": "1"}), ()),
    Row("no resources at all", pod(), ()),
    Row("another vendor's resource", pod({"example.com/fpga": "1"}), ()),
    Row("unrelated annotations", pod(annotations={"team": "ml"}), ()),
    Row("an annotation share with whole GPUs", pod({"nvidia.com/gpu": "1"}, annotations=ALIBABA),
        ("alibaba", "nvidia"), True),
]  # fmt: skip
