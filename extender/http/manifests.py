"""Reading a Pod or workload manifest, from a request body or a file: JSON or YAML (YAML is a superset),
a parse error in one line naming where. Kept apart from the request helpers so the command line reads
manifests without importing the web framework."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from extender.errors import MalformedInput

__all__ = ["ManifestError", "read_manifest", "read_manifest_file", "yaml_problem"]


class ManifestError(MalformedInput):
    """A manifest that is not JSON or YAML; the message names the line."""


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML parse error in one line, where first: ``line 3, column 6: expected ',' or '}'``."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        return f"{where}{exc.problem or exc.context}"
    return str(exc)


def read_manifest(body: bytes) -> Any:
    """The manifest in a request body."""
    if not body.strip():
        raise ManifestError("empty body: expected a Pod or workload manifest (JSON or YAML)")
    try:
        return yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise ManifestError(f"manifest is not valid JSON or YAML: {yaml_problem(exc)}") from None


def read_manifest_file(path: str) -> Any:
    """The first manifest in a file (``kubectl``'s files often hold several, separated by ``---``)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"cannot read {path}: {exc}") from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise ManifestError(f"{path}: not valid YAML or JSON: {yaml_problem(exc)}") from None
    if not docs:
        raise ManifestError(f"{path} holds no manifest")
    return docs[0]
