"""One bad Node never stops the model: build what can be built of it, and say what could not be.

:func:`contained_node_state` is :func:`node_state` for objects from a live source, which anyone able to
edit a Node or create a Pod can shape: whatever goes wrong with one node's annotations, labels or
fields, the model gets a node (the most conservative one that is still true) and the source gets a
list of :class:`Invalid` findings to count and report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from extender.cluster.bound_pods import FREE_GPUS, MALFORMED, RESOURCES, TOPOLOGY, Invalid
from extender.cluster.node import BoundPod, NodeState
from extender.cluster.node_facts import NodeFacts
from extender.cluster.state import ANNOTATION_FREE_GPUS, MachineTypes, node_state
from extender.model.gpu_vendor import is_gpu_resource

__all__ = ["Invalid", "contained_node_state"]


def contained_node_state(
    node: Mapping[str, Any], pods: Iterable[BoundPod], machines: MachineTypes, facts: NodeFacts | None = None
) -> tuple[NodeState, tuple[Invalid, ...]]:
    """The node as the model takes it, and what about it was invalid.

    Unreadable annotations leave the node without a topology or free report (node_state already
    does that); a node that cannot be built at all is modelled without its annotations, then with
    nothing but its name: no GPUs, so nothing is placed on what the model cannot read. ``facts``: what
    ``node_facts`` read of this very Node before.
    """
    pods = tuple(pods)
    meta = _mapping(node.get("metadata"))
    name = str(meta.get("name") or "")
    try:
        state = node_state(node, pods, machines, facts)
    except Exception as exc:  # any shape a hostile Node takes: contained here, never raised to the watch
        stripped = {"metadata": {"name": name}, "status": _mapping(node.get("status"))}
        try:
            state = node_state(stripped, pods, machines)
        except Exception:
            state = node_state({"metadata": {"name": name}}, pods, machines)
        return state, (Invalid("Node", name, MALFORMED, f"{type(exc).__name__}: {exc}"[:300]),)
    return state, tuple(_problems(node, meta, state))


def _problems(node: Mapping[str, Any], meta: Mapping[str, Any], state: NodeState) -> Iterable[Invalid]:
    annotations = _mapping(meta.get("annotations"))
    if state.topology_problem:
        yield Invalid("Node", state.name, TOPOLOGY, f"{state.topology_problem}; no known wiring")
    if ANNOTATION_FREE_GPUS in annotations and state.report is None:
        yield Invalid("Node", state.name, FREE_GPUS, "free-gpus annotation unreadable; bound pods replayed instead")
    if meta.get("annotations") and not isinstance(meta.get("annotations"), Mapping):
        yield Invalid("Node", state.name, MALFORMED, "metadata.annotations is not an object; ignored")
    status = _mapping(node.get("status"))
    shapeless = [s for s in ("allocatable", "capacity") if status.get(s) and not isinstance(status.get(s), Mapping)]
    if shapeless:
        yield Invalid(
            "Node", state.name, RESOURCES, f"status.{' and '.join(shapeless)} not an object; taken as no GPUs"
        )
    for section, kept in (("allocatable", state.allocatable), ("capacity", state.capacity)):
        unread = [str(k) for k in _mapping(status.get(section)) if is_gpu_resource(k) and k not in kept]
        if unread:
            yield Invalid("Node", state.name, RESOURCES, f"{section} {', '.join(unread)} not a whole count; taken as 0")
    taints = _mapping(node.get("spec")).get("taints")
    if taints and not (isinstance(taints, list) and all(isinstance(t, Mapping) for t in taints)):
        yield Invalid("Node", state.name, MALFORMED, "spec.taints is not a list of taints; ignored")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
