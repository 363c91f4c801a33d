"""Real machines bundled with the package (``nvidia-smi topo -m`` or ``rocm-smi --showtopo`` text, each with
its source)."""

from __future__ import annotations

from importlib import resources

__all__ = ["bundled_machines"]


def bundled_machines() -> dict[str, str]:
    """Example machines shipped with the package: name → its topology text."""
    folder = resources.files(__name__)
    return {
        entry.name.removesuffix(".txt"): entry.read_text(encoding="utf-8")
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".txt")
    }
