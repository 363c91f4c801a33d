"""Reading a Pod or workload manifest, from a request body or a file: JSON or YAML (YAML is a superset),
a parse error in one line naming where. Kept apart from the request helpers so the command line reads
manifests without importing the web framework."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from extender.errors import MalformedInput

__all__ = ["ManifestError", "read_manifest", "read_manifest_file", "yaml_problem"]

_YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ManifestError(MalformedInput):
    """A manifest that is not JSON or YAML; the message names the line."""


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML parse error in one line, where first: ``line 3, column 6: expected ',' or '}'``."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        return f"{where}{exc.problem or exc.context}"
    return str(exc)


def _python_yaml_problem(body: bytes) -> str:
    """The pure-Python parser's account of an error (it names the line people expect); libyaml's is terser."""
    try:
        yaml.safe_load(body)
    except yaml.YAMLError as exc:
        return yaml_problem(exc)
    except RecursionError:
        return "nests deeper than the parser reads"
    return "libyaml cannot read it"


def read_manifest(body: bytes) -> Any:
    """The manifest in a request body: JSON read as JSON, YAML with libyaml where PyYAML has it.

    Aliases are loaded as shared objects (cheap); bound what they expand to with ``shapes.check_shape``
    before walking the result."""
    if not body.strip():
        raise ManifestError("empty body: expected a Pod or workload manifest (JSON or YAML)")
    try:
        if body.lstrip()[:1] in (b"{", b"["):
            try:
                return json.loads(body)
            except (json.JSONDecodeError, UnicodeDecodeError):
                pass  # YAML's flow style opens with a brace too
        return _one_or_list([d for d in yaml.load_all(body, Loader=_YAML_LOADER) if d is not None])
    except yaml.YAMLError:
        raise ManifestError(f"manifest is not valid JSON or YAML: {_python_yaml_problem(body)}") from None
    except RecursionError:
        raise ManifestError("manifest nests deeper than the parser reads (gpu-advisor takes 100 levels)") from None


def read_manifest_file(path: str) -> Any:
    """The manifest in a file; several (``---``, as ``kubectl``'s files often hold) as one ``v1 List``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"cannot read {path}: {exc}") from None
    try:
        docs = [d for d in yaml.load_all(text, Loader=_YAML_LOADER) if d is not None]
    except yaml.YAMLError as exc:
        raise ManifestError(f"{path}: not valid YAML or JSON: {yaml_problem(exc)}") from None
    except RecursionError:
        raise ManifestError(f"{path}: nests deeper than the parser reads") from None
    if not docs:
        raise ManifestError(f"{path} holds no manifest")
    return _one_or_list(docs)


def _one_or_list(docs: list[Any]) -> Any:
    """One document as itself; several (``---``) as the ``v1 List`` kubectl would make of them, so the
    workload and the DRA objects it names are read together (``dra_view.workload_and_claims``)."""
    if len(docs) == 1:
        return docs[0]
    return {"apiVersion": "v1", "kind": "List", "items": docs}
