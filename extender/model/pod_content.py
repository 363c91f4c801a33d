"""A pod's request, read once per content: what ``pods.pod_request`` reads of a pod, as bytes.

One pending pod is read five times between its filter and its binding (the filter's memo, the claim
counted for it, the bind verb's check, the watch's bound pod, the telemetry directory), and the
replicas of one Deployment ask alike: a 46 µs walk in Python each time, where the key is 2 µs in C.
The key leaves out what differs between replicas and what no reader looks at: the names and
resourceVersion (shape-checked as scalars only: memoised only when they are text), the node the pod
is bound to, and its volumes and volume mounts (the API server gives every pod its own
``kube-api-access-*`` token volume). Everything else the reader reads is in it: the rest of the spec,
the namespace (a pod group is named within it), labels, annotations and owner references.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import orjson

__all__ = ["by_content"]

T = TypeVar("T")
_SIZE = 4096  # pod contents kept; cleared when full (shapes are few, pods many)
_NAMES = ("name", "uid", "resourceVersion")
_UNREAD_SPEC = frozenset({"nodeName", "volumes"})
_known: dict[bytes, Any] = {}


class _Raised:
    """A reading that raised: raised anew each time (never the same exception object twice)."""

    __slots__ = ("kind", "message")

    def __init__(self, exc: Exception) -> None:
        self.kind, self.message = type(exc), str(exc)


def by_content(remember: type[Exception]) -> Callable[[Callable[[Any], T]], Callable[[Any], T]]:
    """A pod reader that answers what it gave (or raised, of kind ``remember``) for the same content."""

    def wrap(read: Callable[[Any], T]) -> Callable[[Any], T]:
        @functools.wraps(read)
        def reading(pod: Any) -> T:
            return _remembered(pod, read, remember)

        return reading

    return wrap


def _remembered(pod: Any, read: Callable[[Any], T], remember: type[Exception]) -> T:
    key = _key(pod)
    if key is None:
        return read(pod)
    found = _known.get(key)
    if found is None:
        try:
            found = read(pod)
        except remember as exc:
            found = _Raised(exc)
        if len(_known) >= _SIZE:
            _known.clear()
        _known[key] = found
    if isinstance(found, _Raised):
        raise found.kind(found.message)
    return found


def _key(pod: Any) -> bytes | None:
    if type(pod) is not dict:
        return None
    meta, spec = pod.get("metadata"), pod.get("spec")
    if type(meta) is not dict or type(spec) is not dict:
        return None
    if any(type(meta.get(k, "")) is not str for k in _NAMES) or type(spec.get("nodeName", "")) is not str:
        return None
    containers = _without_mounts(spec.get("containers"))
    init = _without_mounts(spec.get("initContainers"))
    rest = {k: v for k, v in spec.items() if k not in _UNREAD_SPEC and k not in ("containers", "initContainers")}
    kept = (meta.get("namespace"), meta.get("labels"), meta.get("annotations"), meta.get("ownerReferences"))
    try:
        return orjson.dumps((kept, containers, init, rest))
    except (orjson.JSONEncodeError, TypeError):  # an integer past 64 bits, a key that is not text
        return None


def _without_mounts(containers: Any) -> Any:
    if type(containers) is not list:
        return containers
    return [
        {k: v for k, v in c.items() if k != "volumeMounts"} if type(c) is dict and "volumeMounts" in c else c
        for c in containers
    ]
