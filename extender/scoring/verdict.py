"""A node's verdict for one pod: fits or not, why, its 0–10 score and the breakdown behind it.

Plain values only: how a verdict is written on a wire (kube-scheduler's ``{"Host":…,"Score":…}``,
the dry-run JSON) is the HTTP layer's business.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["UNJUDGED", "Blend", "Verdict"]

_NO_BREAKDOWN: dict[str, float] = {}

# The rank of a node passed without being judged (unknown to the model): below every judged node, and
# never given the top score by ``ranking`` (the advisor has no opinion to give there).
UNJUDGED = (float("-inf"), 0.0)


# slots: a 5,000-node cluster keeps a verdict per node for each pod shape it remembers. Not frozen (a
# frozen dataclass sets each field through object.__setattr__: 1.7 µs a verdict against 0.4, and a
# new pod shape makes 5,000), but treated as immutable all the same: tables share them.
@dataclass(slots=True)
class Verdict:
    node: str
    fits: bool
    reason: str
    score: int = 0
    unresolvable: bool = False
    gpus: tuple[int, ...] | None = None
    # A failing verdict has no breakdown: all of them share one empty dict, never written (a 5,000-node
    # fleet's standing tables hold some 60,000 of them; an empty dict each was 4 MiB).
    breakdown: Mapping[str, float] = field(default_factory=lambda: _NO_BREAKDOWN)
    # The full-precision ranking key (``ranking``): (stranding level, weighted blend before rounding).
    rank: tuple[float, float] = (50.0, 0.0)
    # GPUs free by allocation whose VRAM something holds that this verdict was judged with (in its set,
    # or steered around): it must be forgotten when their readings move, and is no other pod's verdict.
    held: tuple[int, ...] = ()
    # How the HTTP layer writes this verdict on a wire, once made (opaque here; ``http.replies``): kept
    # on the verdict, it lives and dies with it. Kept in a table by the verdict's id, 95,000 standing
    # verdicts of a mixed fleet cost 25 MiB more, and held verdicts that refreshes had replaced alive.
    # Not compared, not copied by ``replace`` (a verdict with other content is encoded anew).
    encoded: object = field(default=None, init=False, repr=False, compare=False)
    # This verdict with the score ``ranking`` last sent it with, when that differs (kept on it, as
    # ``encoded``): the next call that lowers it alike hands on the very same object, so the reply's
    # fragments are found again, not made anew. Not compared, not copied by ``replace``.
    on_wire: Verdict | None = field(default=None, init=False, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "fits": self.fits,
            "unresolvable": self.unresolvable,
            "score": self.score,
            "gpus": None if self.gpus is None else list(self.gpus),
            "reason": self.reason,
            "breakdown": {k: round(v, 4) for k, v in self.breakdown.items()},
        }


class Blend(Mapping[str, float]):
    """A fitting verdict's breakdown: its plan's components (shared by the alike nodes that share the
    plan) and its own live headroom, read as one mapping. Where every node's telemetry differs, each
    fitting verdict's breakdown is its own: a dict each was 360 bytes, 27,000 of them at 5,000 nodes."""

    __slots__ = ("components", "headroom")

    def __init__(self, components: Mapping[str, float], headroom: float) -> None:
        self.components, self.headroom = components, headroom

    def __getitem__(self, key: str) -> float:
        return self.headroom if key == "headroom" else self.components[key]

    def __iter__(self) -> Iterator[str]:
        yield from (k for k in self.components if k != "headroom")
        yield "headroom"

    def __len__(self) -> int:
        return len(self.components) + (0 if "headroom" in self.components else 1)

    def __repr__(self) -> str:
        return repr(dict(self))
