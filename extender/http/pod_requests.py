"""The pod a kube-scheduler call asks about, read once per content.

kube-scheduler asks filter and prioritize about every pending pod, and again on every retry; the
replicas of one Deployment differ only in their names. Reading a pod (its containers' resources,
sharing annotations, gpu-advisor knobs) is a walk in Python, so the result is kept by the content it
depends on: the spec, the annotations and the labels, encoded by orjson (a few microseconds in C).
A pod nested deeper or larger than any real Pod is refused before it is walked.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import orjson

from extender.http.requests import MAX_DEPTH
from extender.http.shapes import check_shape
from extender.model.pods import PodRequest, ShareSpecError, pod_request

__all__ = ["MAX_POD_VALUES", "PodRequests", "read_pod"]

log = logging.getLogger(__name__)
MAX_POD_VALUES = 200_000  # a Pod is at most 1.5 MiB (etcd's object limit)


def read_pod(pod: Mapping[str, Any]) -> PodRequest:
    """What the pod asks of GPUs. A share that cannot be read refuses it everywhere (naming the
    field); any other unreadable knob is dropped, fail open: the API server already admitted the pod."""
    try:
        return pod_request(pod)
    except ShareSpecError as exc:  # its GPU share cannot be read: every node says which field, none fits
        return PodRequest(invalid=str(exc))
    except Exception as exc:  # PodSpecError, or a value the parser did not foresee (a null container)
        meta = pod.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        # The API server already admitted this pod: a bad gpu-advisor knob must not strand it.
        where = (meta.get("namespace"), meta.get("name"))
        log.warning("pod %s/%s: %s; judging its GPU count only (fail open)", *where, exc)
        try:
            return pod_request({"spec": pod.get("spec") or {}})
        except Exception:
            return PodRequest()


def _content(pod: Mapping[str, Any]) -> bytes | None:
    """What :func:`pod_request` reads of a pod, as bytes (None: not encodable, read it afresh)."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    try:
        return orjson.dumps((pod.get("spec"), meta.get("annotations"), meta.get("labels")))
    except (orjson.JSONEncodeError, TypeError):  # an integer past 64 bits that json (not orjson) parsed
        return None


class PodRequests:
    """Pod requests by content; a bounded memo (cleared when full: pod shapes are few, pods many)."""

    def __init__(self, size: int = 4096) -> None:
        self._known: dict[bytes, PodRequest] = {}
        self._size = size

    def request(self, pod: Mapping[str, Any]) -> PodRequest:
        """The pod's request; ShapeError (400/413) for a pod no API server would have stored."""
        key = _content(pod)
        found = self._known.get(key) if key is not None else None
        if found is not None:
            return found
        check_shape(pod, MAX_DEPTH, MAX_POD_VALUES)
        found = read_pod(pod)
        if key is not None:
            if len(self._known) >= self._size:
                self._known.clear()
            self._known[key] = found
        return found
