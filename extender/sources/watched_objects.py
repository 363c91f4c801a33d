"""What the watch hands the live model, read the way the model reads it: an object's name, uid and key, whether
a Node event is one the model has already moved past, and the Node trimmed to what it keeps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.sources.kube import slim_node

__all__ = ["name_of", "not_newer", "pod_key", "slim_or_bare", "strip_managed_fields", "uid_of"]


def strip_managed_fields(obj: Any) -> None:
    """Drop an object's ``metadata.managedFields`` in place: the API server's record of who set which field,
    often half a Node's or a Pod's JSON, and read by nothing here."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(meta, dict):
        meta.pop("managedFields", None)


def not_newer(obj: Mapping[str, Any], kept: Mapping[str, Any] | None) -> bool:
    """Is this Node event one the model has already moved past? The same resourceVersion, or (where both
    read as etcd's revision numbers, as every API server writes them) an older one, delivered by the watch
    after the bind verb applied its own newer write."""
    new, old = _meta(obj).get("resourceVersion"), _meta(kept or {}).get("resourceVersion")
    if not new or not old:
        return False
    if new == old:
        return True
    return str(new).isdigit() and str(old).isdigit() and int(new) < int(old)


def slim_or_bare(obj: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The trimmed Node; one whose fields are of the wrong shape keeps its name only (no GPUs)."""
    try:
        return slim_node(dict(obj))
    except (AttributeError, TypeError, ValueError):
        return {
            "metadata": {"name": name, "uid": uid_of(obj), "labels": {}, "annotations": {}},
            "spec": {},
            "status": {},
        }


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    name = _meta(obj).get("name")
    return name if isinstance(name, str) else ""


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("uid") or "")


def pod_key(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
