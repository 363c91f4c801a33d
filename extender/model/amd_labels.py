"""The labels AMD's node labeller (ROCm/k8s-device-plugin, also run by AMD's GPU Operator) writes on a
GPU node, and what the advisor reads from them.

``amd.com/gpu.product-name`` (``AMD_Instinct_MI300X``), ``amd.com/gpu.family`` (``AI``),
``amd.com/gpu.device-id`` (``74a1``), and ``amd.com/gpu.vram``: one GPU's VRAM in whole GiB with a ``G``
(``191G`` on a 192 GB MI300X, whose 196592 MiB the labeller rounds down). The older labeller wrote the
same facts under ``beta.amd.com/…`` as ``beta.amd.com/gpu.vram.16G=1``; those are read too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["LABEL_DEVICE_ID", "LABEL_FAMILY", "LABEL_PRODUCT_NAME", "LABEL_VRAM", "vram_mib"]

LABEL_PRODUCT_NAME = "amd.com/gpu.product-name"
LABEL_FAMILY = "amd.com/gpu.family"
LABEL_DEVICE_ID = "amd.com/gpu.device-id"
LABEL_VRAM = "amd.com/gpu.vram"
_BETA_VRAM = "beta.amd.com/gpu.vram"
_GIB = re.compile(r"^(\d+)G$")


def vram_mib(labels: Mapping[str, str]) -> int | None:
    """One GPU's VRAM in MiB from the labeller's labels; None when they do not say (or say it oddly)."""
    for value in (labels.get(LABEL_VRAM), labels.get(_BETA_VRAM)):
        if value and (m := _GIB.match(value.strip())):
            return int(m.group(1)) * 1024
    for key in labels:
        if key.startswith(_BETA_VRAM + ".") and (m := _GIB.match(key.removeprefix(_BETA_VRAM + "."))):
            return int(m.group(1)) * 1024
    return None
