"""How the fake API server writes: creates, updates, deletes and merge patches of annotations under an
optional resourceVersion precondition, pod bindings and evictions (a part of ``FakeApiServer``)."""

from __future__ import annotations

import copy
import threading
from typing import Any

from tests.fakes.kube_objects import status as _status

__all__ = ["Writes"]


class Writes:
    """Needs the server's lock, objects, ``put``, and the counters it keeps of conflicts and bindings."""

    lock: threading.Condition
    objects: dict[str, dict[str, dict[str, Any]]]
    conflicts: int
    bindings: list[tuple[str, str]]
    evictions: list[str]
    budget_forbids: set[str]

    def put(self, kind: str, obj: dict[str, Any]) -> None:
        raise NotImplementedError

    def delete(self, kind: str, key: str) -> None:
        raise NotImplementedError

    def remove(self, kind: str, key: str) -> tuple[int, dict[str, Any]]:
        """DELETE of one object: 200 with a Success status; 404 when there is none."""
        with self.lock:
            if key not in self.objects[kind]:
                return 404, _status(404, "NotFound", f'{kind} "{key.split("/")[-1]}" not found')
            self.delete(kind, key)
        return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 200}

    def evict(self, key: str, eviction: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """``POST pods/<name>/eviction``: the pod deleted; 429 for a pod in ``budget_forbids`` (the API server's
        answer when a PodDisruptionBudget allows no disruption), 409 on another uid than the precondition's."""
        with self.lock:
            found = self.objects["pods"].get(key)
            uid = ((eviction.get("deleteOptions") or {}).get("preconditions") or {}).get("uid")
            if found is None:
                return 404, _status(404, "NotFound", f'pods "{key.split("/")[-1]}" not found')
            if key in self.budget_forbids:
                why = "Cannot evict pod as it would violate the pod's disruption budget."
                return 429, {
                    **_status(429, "TooManyRequests", why),
                    "details": {"causes": [{"reason": "DisruptionBudget"}]},
                }
            if uid and uid != found["metadata"].get("uid"):
                return 409, _status(409, "Conflict", f"Precondition failed: UID in precondition: {uid}")
            self.evictions.append(key)
            self.delete("pods", key)
        return 201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}

    def merge_patch(self, kind: str, key: str, patch: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """A merge patch of an object's annotations; 409 when the patch names a resourceVersion that is not
        the object's (the optimistic lock the real server keeps)."""
        with self.lock:
            found = self.objects[kind].get(key)
            if found is None:
                return 404, _status(404, "NotFound", f'{kind} "{key}" not found')
            wanted = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted is not None and wanted != found["metadata"].get("resourceVersion"):
                self.conflicts += 1
                return 409, _status(409, "Conflict", f'Operation cannot be fulfilled on {kind} "{key}"')
            merged = copy.deepcopy(found)
        for name, value in ((patch.get("metadata") or {}).get("annotations") or {}).items():
            notes = merged["metadata"].setdefault("annotations", {})
            if value is None:  # a merge patch's null removes the key
                notes.pop(name, None)
            else:
                notes[name] = value
        self.put(kind, merged)
        return 200, self.objects[kind][key]

    def create(self, kind: str, namespace: str, doc: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST to a namespace's collection: 201 with the object as stored; 409 AlreadyExists by that name."""
        meta = doc.setdefault("metadata", {})
        meta["namespace"] = namespace
        key = f"{namespace}/{meta.get('name')}"
        with self.lock:
            if key in self.objects[kind]:
                self.conflicts += 1
                status = _status(409, "AlreadyExists", f'{kind} "{meta.get("name")}" already exists')
                return 409, {**status, "details": {"name": meta.get("name"), "kind": kind}}
            meta.pop("resourceVersion", None)  # the server sets it; a create naming one is refused by the real one
            meta["uid"] = f"uid-{kind}-{key}"
            meta["creationTimestamp"] = "2026-12-02T10:00:00Z"
            self.put(kind, doc)
            return 201, self.objects[kind][key]

    def update(self, kind: str, key: str, doc: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """PUT of one object: 404 when gone (no create on update, as for Leases), 409 on a stale resourceVersion."""
        with self.lock:
            found = self.objects[kind].get(key)
            if found is None:
                return 404, _status(404, "NotFound", f'{kind} "{key.split("/")[-1]}" not found')
            wanted = (doc.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != found["metadata"].get("resourceVersion"):
                self.conflicts += 1
                return 409, _status(409, "Conflict", f'Operation cannot be fulfilled on {kind} "{key}"')
            doc.setdefault("metadata", {})["uid"] = found["metadata"].get("uid")
            self.put(kind, doc)
            return 200, self.objects[kind][key]

    def bind(self, key: str, binding: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """``POST pods/<name>/binding``: the pod's spec.nodeName set, as the API server's binding REST does."""
        with self.lock:
            found = self.objects["pods"].get(key)
            target = (binding.get("target") or {}).get("name")
            uid = (binding.get("metadata") or {}).get("uid")
            if found is None:
                return 404, _status(404, "NotFound", f'pods "{key}" not found')
            if uid and uid != found["metadata"].get("uid"):
                return 409, _status(409, "Conflict", f"Precondition failed: UID in precondition: {uid}")
            if found.get("spec", {}).get("nodeName"):
                return 409, _status(409, "Conflict", f"pod {key} is already assigned to node")
            bound = copy.deepcopy(found)
            bound.setdefault("spec", {})["nodeName"] = target
            notes = (binding.get("metadata") or {}).get("annotations") or {}
            if notes:  # the Binding's annotations are written onto the pod in the same update
                bound["metadata"]["annotations"] = {**(bound["metadata"].get("annotations") or {}), **notes}
            self.bindings.append((key, str(target)))
        self.put("pods", bound)
        return 201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}
