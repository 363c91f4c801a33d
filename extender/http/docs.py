"""What the extender's routes document in OpenAPI: the ExtenderArgs body kube-scheduler sends, and the
replies to a body that is not one."""

from __future__ import annotations

from typing import Any

__all__ = ["EXTENDER_DOCS"]

_ARGS_SCHEMA = {
    "type": "object",
    "description": "k8s.io/kube-scheduler/extender/v1 ExtenderArgs; keys in PascalCase (camelCase also read)",
    "required": ["Pod"],
    "properties": {
        "Pod": {"type": "object", "description": "the v1 Pod being scheduled"},
        "NodeNames": {"type": "array", "items": {"type": "string"}, "maxItems": 20_000},
        "Nodes": {"type": "object", "description": "a v1 NodeList (nodeCacheCapable: false)"},
    },
}

EXTENDER_DOCS: dict[str, Any] = {
    "openapi_extra": {
        "requestBody": {"required": True, "content": {"application/json": {"schema": _ARGS_SCHEMA}}},
    },
    "responses": {
        400: {"description": "not an ExtenderArgs body: not JSON, neither NodeNames nor Nodes, Pod nested too deeply"},
        413: {"description": "over the extender's body limit (32 MiB) or over 20,000 candidate nodes"},
    },
}
