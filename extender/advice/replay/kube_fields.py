"""Reading a KubeSchedulerConfiguration's fields: each reader records what is wrong and hands back a
default, so every bad field of a file is reported at once (``Problems.raise_any``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.advice.replay.openb import ReplayInputError

__all__ = ["Problems", "a_list", "mapping", "whole"]


class Problems:
    """Every bad field of a configuration, reported together."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.found.append(f"{where}: {message}")

    def raise_any(self) -> None:
        if self.found:
            raise ReplayInputError("scheduler configuration: " + "; ".join(self.found))


def mapping(value: Any, where: str, problems: Problems) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        problems.add(where, f"expected an object, got {type(value).__name__}")
        return {}
    return value


def a_list(value: Any, where: str, problems: Problems) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        problems.add(where, f"expected a list, got {type(value).__name__}")
        return []
    return value


def whole(value: Any, where: str, problems: Problems, low: int, high: int | None, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        problems.add(where, f"{value!r} is not a whole number")
        return default
    if value < low or (high is not None and value > high):
        problems.add(where, f"{value} is not between {low} and {high}" if high is not None else f"{value} < {low}")
        return default
    return value
