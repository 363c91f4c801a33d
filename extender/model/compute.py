"""CPU and memory: Kubernetes quantities read into milli-CPU and MiB, and what a pod requests of them.

Quantities follow the API server's grammar (``resource.Quantity``): a decimal number with a decimal
suffix (``m``, ``k``, ``M``, ``G``, ``T``, ``P``, ``E``) or a binary one (``Ki`` … ``Ei``). A pod requests
max(largest init container, app containers and sidecars summed), from ``requests`` (a limit alone
counts as the request, as the API server defaults it), the way NodeResourcesFit adds it up.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from extender.model.pod_terms import PodSpecError

__all__ = ["cpu_milli", "memory_mib", "pod_compute"]

_QUANTITY = re.compile(r"^([+]?\d+(?:\.\d*)?|[+]?\.\d+)([a-zA-Z]{0,2})$")
_SCALE = {
    "": 1.0, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60,
}  # fmt: skip


def _value(text: Any, field: str) -> float:
    match = _QUANTITY.match(str(text).strip()) if isinstance(text, str | int | float) else None
    if isinstance(text, bool) or match is None or match.group(2) not in _SCALE:
        raise PodSpecError(f"{field}: {text!r} is not a Kubernetes quantity such as 500m, 2, 16Gi")
    return float(match.group(1)) * _SCALE[match.group(2)]


def cpu_milli(text: Any, field: str = "cpu") -> int:
    """``500m`` → 500, ``2`` → 2000; rounded up, as the API server rounds a quantity to milli."""
    return math.ceil(_value(text, field) * 1000 - 1e-9)


def memory_mib(text: Any, field: str = "memory") -> int:
    """``16Gi`` → 16384, ``1G`` → 954 (rounded up: a request rounded down would promise room there is not)."""
    return math.ceil(_value(text, field) / 2.0**20 - 1e-9)


def _requests(container: Mapping[str, Any], where: str) -> tuple[int, int]:
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise PodSpecError(f"{where}: resources must be an object")
    found = {}
    for section in ("limits", "requests"):  # a request wins; a limit alone is the request
        values = resources.get(section) or {}
        if not isinstance(values, Mapping):
            raise PodSpecError(f"{where}: resources.{section} must be an object")
        found.update({(name, section): value for name, value in values.items() if name in ("cpu", "memory")})
    cpu = mem = 0
    for (name, section), value in found.items():
        if section == "limits" and (name, "requests") in found:
            continue
        field = f'{where}.resources.{section}["{name}"]'
        if name == "cpu":
            cpu = cpu_milli(value, field)
        else:
            mem = memory_mib(value, field)
    return cpu, mem


def pod_compute(spec: Mapping[str, Any]) -> tuple[int, int]:
    """(milli-CPU, MiB of memory) the pod requests; PodSpecError names a malformed quantity."""
    cpu = mem = 0
    for n, container in enumerate(spec.get("containers") or []):
        c, m = _requests(container, f"spec.containers[{n}]")
        cpu, mem = cpu + c, mem + m
    init_cpu = init_mem = 0
    for n, container in enumerate(spec.get("initContainers") or []):
        c, m = _requests(container, f"spec.initContainers[{n}]")
        if container.get("restartPolicy") == "Always":  # a sidecar runs beside the app containers
            cpu, mem = cpu + c, mem + m
        else:
            init_cpu, init_mem = max(init_cpu, c), max(init_mem, m)
    return max(cpu, init_cpu), max(mem, init_mem)
