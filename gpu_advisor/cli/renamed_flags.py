"""Old spellings of renamed flags: still accepted, each saying on stderr what replaced it.

``--policy`` once meant three things: the scoring policy file (``serve``, ``explain``, ``diagnose``),
the placement policies to compare (``replay``) and the placement set (``topology best``). It now means
the scoring policy file in every command; the others became ``--policies`` and ``--placement``. Scripts
written before keep working, and each run tells its reader the new spelling, so they get fixed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from extender.advice.replay.openb import ReplayInputError

__all__ = ["Replaced", "resolve_replay_policy"]


class Replaced(argparse.Action):
    """An old flag: stores where its replacement stores, and names the replacement on stderr."""

    def __init__(self, option_strings: Sequence[str], dest: str, now: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", argparse.SUPPRESS)  # --help shows the new spelling only
        super().__init__(option_strings, dest, **kwargs)
        self.now = now

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"{parser.prog}: {option_string} is now {self.now}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def _known_names(value: str) -> bool:
    """Every comma-separated part of ``value`` names a placement policy (case aside)."""
    from extender.advice.replay.policies import policy_names

    known = {name.lower() for name in policy_names()}
    parts = [part.strip().lower() for part in value.split(",") if part.strip()]
    return bool(parts) and all(part in known for part in parts)


def resolve_replay_policy(args: argparse.Namespace) -> None:
    """Leave ``args.policy`` the scoring policy file (a Path, or None) and ``args.policies`` the names to
    compare (or None), whichever spelling gave them: ``--policy FILE``, ``--scoring-policy FILE`` (old),
    ``--policies NAMES`` or ``--policy NAMES`` (old: the value is no file and only policy names)."""
    value: str | None = args.policy
    if value is not None and not Path(value).is_file():
        if not _known_names(value):
            from extender.advice.replay.policies import policy_names

            raise ReplayInputError(
                f"--policy: {value!r} is neither a file (--policy FILE: the scoring policy) nor policy names"
                f" (--policies NAMES: {', '.join(policy_names())})"
            )
        if args.policies is not None:
            raise ReplayInputError("--policies: given twice (once as --policy NAMES, its old spelling)")
        print("gpu-advisor replay: --policy NAMES is now --policies NAMES", file=sys.stderr)
        args.policies, value = value, None
    if args.scoring_policy is not None and value is not None:
        raise ReplayInputError("--policy: given twice (once as --scoring-policy, its old spelling)")
    chosen = args.scoring_policy if args.scoring_policy is not None else value
    args.policy = Path(chosen) if chosen is not None else None
