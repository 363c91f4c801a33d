"""The scoring policy file (``--policy FILE``, YAML or JSON): read, parsed, and validated once at start-up."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from extender.errors import validation_problems
from extender.scoring import PolicyError, ScoringPolicy
from extender.sources.documents import load_document

__all__ = ["load_policy"]


def load_policy(path: str | Path) -> ScoringPolicy:
    """The policy in ``path``; a :class:`PolicyError` lists every bad field at once."""
    try:
        doc = load_document(Path(path).read_text()) or {}
    except OSError as exc:
        raise PolicyError(f"cannot read policy {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise PolicyError(f"policy {path} is not YAML/JSON: {exc}") from None
    try:
        return ScoringPolicy.model_validate(doc)
    except ValidationError as exc:
        raise PolicyError(f"policy {path}: {validation_problems(exc, top='(top)', limit=None)}") from None
