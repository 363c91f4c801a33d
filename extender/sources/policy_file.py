"""The scoring policy file (``--policy FILE``, YAML or JSON): read, parsed, and validated once at start-up."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from extender.scoring import PolicyError, ScoringPolicy

__all__ = ["load_policy"]


def load_policy(path: str | Path) -> ScoringPolicy:
    """The policy in ``path``; a :class:`PolicyError` lists every bad field at once."""
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except OSError as exc:
        raise PolicyError(f"cannot read policy {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise PolicyError(f"policy {path} is not YAML/JSON: {exc}") from None
    try:
        return ScoringPolicy.model_validate(doc)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in exc.errors())
        raise PolicyError(f"policy {path}: {problems}") from None
