"""The MIG profiles each MIG-capable GPU offers, as NVIDIA documents them: one table, read by the
admission rules ("use 3g.40gb"), the scheduling model (a slice's memory) and the scheduler config
(``managedResources``, printed by ``gpu-advisor scheduler-config --managed-resources``).

Source: NVIDIA's Multi-Instance GPU User Guide, "Supported MIG Profiles" (A30, A100 40/80 GB, H100,
H100 NVL/94 GB, H100 96 GB/GH200, H200, B200), and the default ``mig-parted`` configuration the GPU
Operator ships for the same devices (GH200 144 GB HBM3e, GB200, RTX PRO 6000 Blackwell). The media
extension variants (``+me``) are left out: the device plugin advertises them under the same
memory as the plain profile, and a model's fit depends only on that.

Each profile is written ``<g>g.<m>gb``: g compute slices of the GPU's 7 (4 on A30 and RTX PRO), m GB
of memory; ``count`` is how many instances of that profile alone one GPU holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "MIG_PRODUCTS",
    "MigProduct",
    "MigProfile",
    "all_profiles",
    "mig_product_for",
    "profile_memory_gb",
]

_PROFILE = re.compile(r"^(\d+)g\.(\d+)gb$")


@dataclass(frozen=True)
class MigProfile:
    name: str  # "3g.40gb"
    count: int  # instances of this profile alone on one GPU

    @property
    def memory_gb(self) -> float:
        return profile_memory_gb(self.name)

    @property
    def slices(self) -> int:
        return int(self.name.split("g.", 1)[0])


@dataclass(frozen=True)
class MigProduct:
    name: str  # as people write it
    memory_gb: int  # the whole GPU's memory, as the product is named
    match: tuple[str, ...]  # lower-case words GFD's nvidia.com/gpu.product label contains
    profiles: tuple[MigProfile, ...]


def _p(*pairs: tuple[str, int]) -> tuple[MigProfile, ...]:
    return tuple(MigProfile(name, count) for name, count in pairs)


# Each row: the profiles and how many of each alone fit one GPU (the guide's "Number of Instances").
_A100_80 = _p(("1g.10gb", 7), ("1g.20gb", 4), ("2g.20gb", 3), ("3g.40gb", 2), ("4g.40gb", 1), ("7g.80gb", 1))
MIG_PRODUCTS: tuple[MigProduct, ...] = (
    MigProduct("A30", 24, ("a30",), _p(("1g.6gb", 4), ("2g.12gb", 2), ("4g.24gb", 1))),
    MigProduct(
        "A100 40GB",
        40,
        ("a100", "40gb"),
        _p(("1g.5gb", 7), ("1g.10gb", 4), ("2g.10gb", 3), ("3g.20gb", 2), ("4g.20gb", 1), ("7g.40gb", 1)),
    ),
    MigProduct("A100 80GB", 80, ("a100", "80gb"), _A100_80),
    MigProduct("H100 80GB", 80, ("h100", "80gb"), _A100_80),
    MigProduct(
        "H100 NVL / H100 94GB",
        94,
        ("h100", "94gb"),
        _p(("1g.12gb", 7), ("1g.24gb", 4), ("2g.24gb", 3), ("3g.47gb", 2), ("4g.47gb", 1), ("7g.94gb", 1)),
    ),
    MigProduct(
        "H100 96GB / GH200",
        96,
        ("gh200",),
        _p(("1g.12gb", 7), ("1g.24gb", 4), ("2g.24gb", 3), ("3g.48gb", 2), ("4g.48gb", 1), ("7g.96gb", 1)),
    ),
    MigProduct(
        "GH200 144GB HBM3e",
        144,
        ("gh200", "144"),
        _p(("1g.18gb", 7), ("1g.36gb", 4), ("2g.36gb", 3), ("3g.72gb", 2), ("4g.72gb", 1), ("7g.144gb", 1)),
    ),
    MigProduct(
        "H200 141GB / H200 NVL",
        141,
        ("h200",),
        _p(("1g.18gb", 7), ("1g.35gb", 4), ("2g.35gb", 3), ("3g.71gb", 2), ("4g.71gb", 1), ("7g.141gb", 1)),
    ),
    MigProduct(
        "B200",
        180,
        ("b200",),
        _p(("1g.23gb", 7), ("1g.45gb", 4), ("2g.45gb", 3), ("3g.90gb", 2), ("4g.90gb", 1), ("7g.180gb", 1)),
    ),
    MigProduct(
        "GB200",
        186,
        ("gb200",),
        _p(("1g.23gb", 7), ("1g.47gb", 4), ("2g.47gb", 3), ("3g.93gb", 2), ("4g.93gb", 1), ("7g.186gb", 1)),
    ),
    MigProduct(
        "RTX PRO 6000 Blackwell", 96, ("rtx", "pro", "6000"), _p(("1g.24gb", 4), ("2g.48gb", 2), ("4g.96gb", 1))
    ),
)


def profile_memory_gb(profile: str) -> float:
    """``1g.10gb`` → 10 (0 when the name is not a MIG profile)."""
    m = _PROFILE.match(profile)
    return float(m.group(2)) if m else 0.0


def all_profiles() -> tuple[str, ...]:
    """Every profile any product offers, once, smallest compute then smallest memory first."""
    names = {p.name for product in MIG_PRODUCTS for p in product.profiles}
    return tuple(sorted(names, key=lambda n: (int(n.split("g.", 1)[0]), profile_memory_gb(n))))


def mig_product_for(product_label: str | None, memory_gb: float | None = None) -> MigProduct | None:
    """The MIG-capable product a GFD product label names; its memory tells 40 from 80 GB where the name
    does not. Words match the start of the label's words (``GH200`` is not an ``H200``)."""
    tokens = re.split(r"[-_ ]+", (product_label or "").lower())

    def has(word: str) -> bool:
        return any(t.startswith(word) for t in tokens)

    named = [p for p in MIG_PRODUCTS if all(has(w) for w in p.match)]
    if memory_gb is not None and len(named) != 1:
        family = named or [p for p in MIG_PRODUCTS if has(p.match[0])] or list(MIG_PRODUCTS)
        close = [p for p in family if abs(p.memory_gb - memory_gb) <= 0.1 * p.memory_gb]
        return min(close, key=lambda p: abs(p.memory_gb - memory_gb), default=None)
    # The most specific match: "gh200" + "144" over plain "gh200".
    return max(named, key=lambda p: len(p.match)) if named else None
