"""kube-scheduler's extender wire format (k8s.io/kube-scheduler/extender/v1).

The Go types carry no json tags, so kube-scheduler sends PascalCase keys (``Pod``, ``Nodes``,
``NodeNames``) and decodes our replies case-insensitively; we accept either spelling and always answer
in PascalCase. Pods and Nodes are kept as the raw JSON objects they came as: a nodeCacheCapable=false
reply must hand back the very Node objects it was sent.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from extender.model.object_shape import NODE_SHAPE, shape_problem

__all__ = [
    "MAX_EXTENDER_PRIORITY",
    "ExtenderArgs",
    "ExtenderBindingArgs",
    "ExtenderFilterResult",
    "HostPriority",
    "extender_args",
]

MAX_EXTENDER_PRIORITY = 10


def _either(name: str, **default: Any) -> Any:
    return Field(validation_alias=AliasChoices(name, name[0].lower() + name[1:], name.lower()), **default)


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class NodeList(_Wire):
    """A v1 NodeList; ``items`` stay raw dicts."""

    items: list[dict[str, Any]] = Field(default_factory=list)

    @field_validator("items", mode="before")
    @classmethod
    def _items_may_be_null(cls, v: Any) -> Any:
        return [] if v is None else v

    @field_validator("items")
    @classmethod
    def _items_are_nodes(cls, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each Node's fields that the model reads have their Kubernetes types (kept raw: a reply of
        nodeCacheCapable: false hands back the very objects it was sent)."""
        for n, item in enumerate(items):
            if (problem := shape_problem(item, NODE_SHAPE, f"[{n}]")) is not None:
                raise ValueError(problem)
        return items


class ExtenderArgs(_Wire):
    """The body of filter and prioritize: the pod and the candidate nodes (names or full objects)."""

    pod: dict[str, Any] = _either("Pod")
    nodes: NodeList | None = _either("Nodes", default=None)
    node_names: list[str] | None = Field(
        default=None, validation_alias=AliasChoices("NodeNames", "nodeNames", "nodenames")
    )

    def candidate_names(self) -> list[str]:
        if self.node_names is not None:
            return self.node_names
        if self.nodes is not None:
            return [str((item.get("metadata") or {}).get("name", "")) for item in self.nodes.items]
        return []


_POD = TypeAdapter(dict[str, Any])
_NAMES_KEYS = ("NodeNames", "nodeNames", "nodenames")
_POD_KEYS = ("Pod", "pod")
_NODES_KEYS = ("Nodes", "nodes")


def extender_args(doc: dict[str, Any], names_are_strings: bool = False) -> ExtenderArgs:
    """``doc`` (a parsed body) as :class:`ExtenderArgs`; a ``ValidationError`` says what is wrong.

    kube-scheduler's nodeCacheCapable body (a Pod and a list of names) is checked in C: pydantic
    validates the Pod, and the names only have to be strings, which joining them tells (a join
    refuses anything else); over 5,000 names that is far cheaper than validating item by item. Any
    other body (full Node objects, or a malformed one) goes through the whole model, whose error
    messages name the field at fault. ``names_are_strings``: the caller has checked them already.
    """
    names = next((doc[k] for k in _NAMES_KEYS if k in doc), None)
    pod = next((doc[k] for k in _POD_KEYS if k in doc), None)
    nodes = next((doc[k] for k in _NODES_KEYS if k in doc), None)
    if type(names) is list and type(pod) is dict and nodes is None and (names_are_strings or _all_strings(names)):
        return ExtenderArgs.model_construct(pod=_POD.validate_python(pod), nodes=None, node_names=names)
    return ExtenderArgs.model_validate(doc)


def _all_strings(items: list[Any]) -> bool:
    try:
        "".join(items)
    except TypeError:
        return False
    return True


class ExtenderFilterResult(BaseModel):
    """Filter reply. ``NodeNames`` when the extender is nodeCacheCapable, else ``Nodes``."""

    Nodes: dict[str, Any] | None = None
    NodeNames: list[str] | None = None
    FailedNodes: dict[str, str] = Field(default_factory=dict)
    FailedAndUnresolvableNodes: dict[str, str] = Field(default_factory=dict)
    Error: str = ""


class HostPriority(BaseModel):
    Host: str
    Score: int = Field(ge=0, le=MAX_EXTENDER_PRIORITY)


class ExtenderBindingArgs(_Wire):
    """The body of bind: which pod (name, namespace, uid) goes to which node."""

    pod_name: str = Field(validation_alias=AliasChoices("PodName", "podName", "podname"), min_length=1)
    pod_namespace: str = Field(validation_alias=AliasChoices("PodNamespace", "podNamespace", "podnamespace"))
    pod_uid: str = Field(default="", validation_alias=AliasChoices("PodUID", "podUID", "poduid"))
    node: str = Field(validation_alias=AliasChoices("Node", "node"), min_length=1)
