"""Verdicts in kube-scheduler's wire form, encoded once per verdict and joined per reply.

At 5,000 candidate nodes encoding is the hot spot of a call, so each verdict's fragments (its
JSON-quoted name, ``"name":"reason"``, ``{"Host":…,"Score":…}``) are kept per (pod request, node
name) and reused while that node's verdict is the same one the scoring memo hands back.
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii

from extender.model.pods import PodRequest
from extender.scoring import Verdict

__all__ = ["FilterParts", "ReplyFragments"]

FilterParts = tuple[list[str], list[str], list[str]]  # passed names, failed entries, unresolvable entries

_PASS, _FAIL, _UNRESOLVABLE = 0, 1, 2
_Entry = tuple[Verdict, int, str, str]  # (verdict, filter outcome, filter fragment, priority fragment)


def _encode(v: Verdict) -> _Entry:
    quoted = encode_basestring_ascii(v.node)
    priority = f'{{"Host":{quoted},"Score":{v.score if v.fits else 0}}}'
    if v.fits:
        return v, _PASS, quoted, priority
    return v, _UNRESOLVABLE if v.unresolvable else _FAIL, f"{quoted}:{encode_basestring_ascii(v.reason)}", priority


class ReplyFragments:
    """Encoded fragments per (pod request, node name); a fragment is re-encoded when its verdict changes."""

    def __init__(self, max_requests: int = 64) -> None:
        self._tables: dict[PodRequest, dict[str, _Entry]] = {}
        self._max_requests = max_requests

    def _entries(self, request: PodRequest, verdicts: list[Verdict]) -> list[_Entry]:
        table = self._tables.get(request)
        if table is None:
            if len(self._tables) >= self._max_requests:
                self._tables.clear()
            table = self._tables[request] = {}
        get = table.get
        out: list[_Entry] = []
        append = out.append
        for v in verdicts:
            entry = get(v.node)
            if entry is None or entry[0] is not v:
                entry = table[v.node] = _encode(v)
            append(entry)
        return out

    def filter_parts(self, request: PodRequest, verdicts: list[Verdict]) -> FilterParts:
        parts: FilterParts = ([], [], [])
        for _, outcome, fragment, _ in self._entries(request, verdicts):
            parts[outcome].append(fragment)
        return parts

    def priorities(self, request: PodRequest, verdicts: list[Verdict]) -> str:
        """The prioritize reply: ``[{"Host":…,"Score":…},…]``, a failed node scoring 0."""
        return "[" + ",".join([e[3] for e in self._entries(request, verdicts)]) + "]"
