"""Admission advice for rack-scale NVLink: a multi-node job that nothing keeps in one clique.

On a cluster with NVLink cliques (GB200/GB300 NVL72) a distributed job is fast only with all its pods in
one clique. The advisor steers pods it can tell belong together (a JobSet, LeaderWorkerSet, Kubeflow
job or pod group: ``extender.model.pod_groups``), and a ``podAffinity`` on ``nvidia.com/gpu.clique``
holds them together by itself. A pod template that launches a multi-node job (torchrun's ``--nnodes``,
``NNODES``/``PET_NNODES`` above 1, or ``MASTER_ADDR``) with neither may straddle racks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from extender.cluster.cliques import LABEL_CLIQUE, clique_of
from webhook.workload import ClusterView, Finding, Workload

__all__ = ["multi_node_without_group"]

_NODES_ENV = ("NNODES", "PET_NNODES")
# A node count as people write it: ASCII digits, a sane length ("²".isdigit() is True; int() refuses it).
_COUNT = re.compile(r"[0-9]{1,6}")


def _above_one(text: str) -> bool:
    return _COUNT.fullmatch(text) is not None and int(text) > 1


def multi_node_without_group(w: Workload, view: ClusterView) -> list[Finding]:
    if not w.request.gpus or w.request.group is not None:
        return []
    signal = _multi_node(w.spec)
    if signal is None or LABEL_CLIQUE in json.dumps(w.spec.get("affinity") or {}):
        return []
    if not any(clique_of(n) is not None for n in view.eligible(w)):
        return []  # no NVLink cliques where it may run: nothing to keep together
    return [
        Finding(
            "multi-node-without-group",
            "warning",
            f"multi-node job ({signal}) with no pod group: its pods may not share one NVLink clique",
            f"run it as a JobSet, LeaderWorkerSet or Kubeflow job, or add a podAffinity on topologyKey {LABEL_CLIQUE}",
        )
    ]


def _multi_node(spec: Mapping[str, Any]) -> str | None:
    """What says a pod template is one of several nodes of a job; None when nothing does. The template
    fits ``ADVICE_SHAPE``: command and args are lists of scalars, env a list of name/value objects."""
    for container in spec.get("containers") or []:
        if not isinstance(container, Mapping):
            continue
        env = {
            str(e.get("name")): str(e.get("value", "")) for e in container.get("env") or [] if isinstance(e, Mapping)
        }
        for name in _NODES_ENV:
            if _above_one(env.get(name, "")):
                return f"{name}={env[name]}"
        words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
        for n, word in enumerate(words):
            value = word.split("=", 1)[1] if word.startswith("--nnodes=") else None
            if word == "--nnodes" and n + 1 < len(words):
                value = words[n + 1]
            if value is not None and _above_one(value.split(":")[-1]):
                return f"--nnodes {value}"
        if "MASTER_ADDR" in env:
            return "MASTER_ADDR set"
    return None
