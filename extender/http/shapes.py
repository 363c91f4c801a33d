"""The shape of a parsed document, bounded before anything walks it: nesting depth, values once YAML
aliases are expanded, and no document that contains itself.

YAML anchors make a few hundred bytes stand for a billion values (the loader shares one object per
anchor, so loading is cheap; whatever walks the result later is not). The count here visits each
shared object once and multiplies, so it costs what the document *is*, not what it expands to.
"""

from __future__ import annotations

from typing import Any

from extender.errors import MalformedInput

__all__ = ["ShapeError", "check_shape"]


class ShapeError(MalformedInput):
    """A document nested too deeply (400), expanding past the value limit (413), or containing itself."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.http_status = status


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, dict | list)]
    return [v for v in value if isinstance(v, dict | list)]


def check_shape(doc: Any, max_depth: int, max_values: int) -> int:
    """The values ``doc`` expands to (containers and scalars); raises ShapeError past a limit."""
    if not isinstance(doc, dict | list):
        return 1
    # id → (expanded values, levels) below and including it: a shared object is entered once.
    sizes: dict[int, tuple[int, int]] = {}
    open_ids: set[int] = set()
    # An explicit stack: (container, depth, children still to enter); no recursion on hostile input.
    stack: list[tuple[Any, int, list[Any]]] = [(doc, 1, _children(doc))]
    open_ids.add(id(doc))
    while stack:
        node, depth, todo = stack[-1]
        if todo:
            child = todo.pop()
            if id(child) in sizes:
                if depth + sizes[id(child)][1] > max_depth:  # shared, and reached here deeper than before
                    raise ShapeError(f"the document nests deeper than the limit of {max_depth} levels")
                continue
            if id(child) in open_ids:
                raise ShapeError("the document contains itself (a YAML alias to an enclosing node)")
            if depth + 1 > max_depth:
                raise ShapeError(f"the document nests deeper than the limit of {max_depth} levels")
            open_ids.add(id(child))
            stack.append((child, depth + 1, _children(child)))
            continue
        stack.pop()
        open_ids.discard(id(node))
        total, levels = 1, 1
        for v in _values(node):
            if isinstance(v, dict | list):
                below, height = sizes[id(v)]
                total, levels = total + below, max(levels, height + 1)
            else:
                total += 1
        if total > max_values:
            raise ShapeError(f"the document expands to more than {max_values:,} values (YAML aliases?)", 413)
        sizes[id(node)] = (total, levels)
    return sizes[id(doc)][0]


def _values(node: Any) -> Any:
    return node.values() if isinstance(node, dict) else node
