"""A node's NVLink clique from NVML's GPU fabric info, as GPU Feature Discovery labels it.

On rack-scale NVLink machines (GB200/GB300 NVL72) each GPU registers with the NVLink fabric manager;
NVML then reports the fabric's cluster UUID and the GPU's clique id. GFD writes them as the node label
``nvidia.com/gpu.clique: <cluster UUID>.<clique id>``; the agent publishes the same in its topology, so
the advisor knows the clique where GFD does not run. Anywhere else NVML answers NotSupported.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from types import ModuleType
from typing import Any

__all__ = ["fabric_clique"]

log = logging.getLogger(__name__)
_COMPLETED = 3  # NVML_GPU_FABRIC_STATE_COMPLETED: registration done, the clique id is final
_SUCCESS = 0


def fabric_clique(nvml: ModuleType, handles: Iterable[Any]) -> str | None:
    """``<cluster UUID>.<clique id>`` shared by every GPU of the node; None when any GPU has no
    completed fabric registration, or the GPUs disagree (a node is in one clique or none)."""
    cliques = {_gpu_clique(nvml, h) for h in handles}
    if len(cliques) != 1:
        log.info("GPUs of this node report different NVLink cliques %s: publishing none", sorted(map(str, cliques)))
        return None
    return cliques.pop()


def _gpu_clique(nvml: ModuleType, handle: Any) -> str | None:
    struct = getattr(nvml, "c_nvmlGpuFabricInfo_t", None)
    query = getattr(nvml, "nvmlDeviceGetGpuFabricInfo", None)
    if struct is None or query is None:
        return None  # an NVML binding from before fabric info
    info = struct()
    try:
        query(handle, info)
    except nvml.NVMLError:
        return None  # NotSupported: a GPU on no multi-node NVLink fabric
    raw = bytes(info.clusterUuid)
    if info.state != _COMPLETED or info.status != _SUCCESS or not any(raw):
        return None
    return f"{uuid.UUID(bytes=raw)}.{info.cliqueId}"
