"""Writing the agent's two annotations to its own Node: only when their content changed, at most once per
``min_interval_s`` however fast pods come and go, with exponential backoff after errors."""

from __future__ import annotations

import logging

from extender.agent.apiserver import NodeWriter
from extender.cluster.state import ANNOTATION_FREE_GPUS, ANNOTATION_TOPOLOGY, FreeReport

__all__ = ["NodePublisher", "short_error"]

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 300.0


def short_error(exc: Exception) -> str:
    """The first line of an error, at most 200 characters: a log line, not a traceback."""
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


class NodePublisher:
    """Patches ``gpu-advisor.io/topology`` and ``gpu-advisor.io/free-gpus`` on one Node (JSON merge patch)."""

    def __init__(self, node: str, api: NodeWriter, min_interval_s: float) -> None:
        self.node = node
        self.api = api
        self.min_interval_s = min_interval_s
        self._written: tuple[str, tuple[int, ...]] | None = None  # (topology JSON, free) last written
        self._retry_at = 0.0
        self._backoff = 1.0

    def publish(self, topology_json: str, free: tuple[int, ...], now: float) -> bool:
        """Write unless nothing changed or the window is closed; True when it wrote."""
        content = (topology_json, free)
        if content == self._written:
            return False
        if now < self._retry_at:
            return False  # rate limit or backoff: the newest content goes out when the window opens
        annotations = {ANNOTATION_TOPOLOGY: topology_json, ANNOTATION_FREE_GPUS: FreeReport(free, now).to_json()}
        try:
            self.api.patch_node(self.node, {"metadata": {"annotations": annotations}})
        except Exception as exc:
            log.warning(
                "annotating node %s failed (%s); retrying in %.0f s", self.node, short_error(exc), self._backoff
            )
            self._retry_at = now + self._backoff
            self._backoff = min(self._backoff * 2, MAX_BACKOFF_S)
            return False
        self._written = content
        self._backoff = 1.0
        self._retry_at = now + self.min_interval_s
        return True
