"""The candidate node names of a kube-scheduler call, read once per distinct list.

kube-scheduler asks about the same candidates call after call (every node that passed its own filters),
and at 5,000 names parsing them is most of a warm call: 0.12 ms to build 5,000 strings, 0.05 ms more to
compare them with the last list. Go's encoder writes ``ExtenderArgs`` in field order, so the names are
the body's last member: ``{"Pod":{…},"Nodes":null,"NodeNames":[…]}``. :meth:`CandidateLists.split`
parses the head alone and compares the names' raw bytes with the lists it has read lately (a memcmp);
a list it has not seen is parsed once and kept.

kube-scheduler sends the nodes in the order its parallel filter found them (16 goroutines on chunks of
the node list, each appending what passed at an atomic index), so the same candidates come in another
order on every call. A list that holds exactly the names of a kept one, in another order, is handed
over as the kept list: the answer lists them in that order. kube-scheduler reads the answer's
``NodeNames`` by name (each mapped back to its node; the order only becomes that of the prioritize call
that follows) and its scores as a map by host, and binds the single top-scored node, so the order
changes no decision, and everything kept per candidate list serves every order of it.

Why the split is safe: the head is parsed as a whole JSON object (so the cut fell between two top-level
members, not inside a string or a nested object) and the tail as a whole JSON array of strings; the
body is then exactly that object with one more member, ``NodeNames``, last (and JSON's last duplicate
key wins, as in a full parse). Any body that is not so — other spacing, other order, a nested
``NodeNames`` — is parsed whole, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import repeat
from operator import is_
from typing import Any

import orjson

__all__ = ["CandidateLists", "cuts"]

_MARK = b',"NodeNames":['


def cuts(body: bytes) -> Iterator[int]:
    """Where ``,"NodeNames":[`` may open the body's last member, most likely first: its first place
    (right after the Pod in Go's order), then, only if asked, its last (a duplicate key, or one nested
    in the Pod, came first). Searching from the front reads the Pod alone; ``rfind`` over 5,000 names
    reads them all, and names rich in the mark's characters (``hgx-h100-a-00002``, ``mi300x-a-00006``,
    not ``gpu-00001``) defeat its skipping: 58 µs of a 90 µs warm call at 5,000 such names."""
    first = body.find(_MARK)
    if first < 0:
        return
    yield first
    last = body.rfind(_MARK, first + 1)
    if last >= 0:
        yield last


@dataclass(slots=True)
class _Kept:
    text: bytes  # the names' bytes as first received
    names: list[str]  # in that order: the order answers give them in
    members: frozenset[str] | None = None  # made when a list of as many names in another order comes


class CandidateLists:
    # Four lists: with the filter passing one node, prioritize sends no list of its own, and kube-scheduler's
    # candidates change only as nodes fill (eight kept were 6.6 MiB of names at 5,000 nodes).
    def __init__(self, keep: int = 4) -> None:
        self._recent: list[_Kept] = []  # newest first
        self._keep = keep

    def split(self, body: bytes) -> dict[str, Any] | None:
        """The parsed body, its names list shared with earlier calls that sent the same bytes; None
        when the body is not in kube-scheduler's shape (then parse it whole)."""
        if not body.endswith(b"]}"):
            return None
        for cut in cuts(body):
            found = self._split_at(body, cut)
            if found is not None:
                return found
        return None

    def _split_at(self, body: bytes, cut: int) -> dict[str, Any] | None:
        try:
            head = orjson.loads(body[:cut] + b"}")
        except orjson.JSONDecodeError:
            return None
        if type(head) is not dict:
            return None
        names = self._names(body[cut + len(_MARK) - 1 : -1])
        if names is None:
            return None
        head["NodeNames"] = names
        return head

    def _names(self, text: bytes) -> list[str] | None:
        for kept in self._recent:
            if len(kept.text) == len(text) and kept.text == text:
                return kept.names
        try:
            names = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        # In C: a generator here was a third of reading a new 5,000-name list (each prioritize sends one).
        if type(names) is not list or not all(map(is_, map(type, names), repeat(str))):
            return None
        same = self._reordered(names)
        if same is not None:
            return same.names
        self._recent.insert(0, _Kept(text, names))
        del self._recent[self._keep :]
        return names

    def _reordered(self, names: list[str]) -> _Kept | None:
        """The kept list of exactly these names (each once) in another order, moved to the front."""
        members: frozenset[str] | None = None
        for i, kept in enumerate(self._recent):
            if len(kept.names) != len(names):
                continue
            if members is None:
                members = frozenset(names)  # in C, with each name's hash (a frozenset's own hash is cached)
                if len(members) != len(names):  # a name sent twice: not an order of distinct nodes
                    return None
            if kept.members is None:
                kept.members = frozenset(kept.names)
            if hash(kept.members) == hash(members) and kept.members == members:
                self._recent.insert(0, self._recent.pop(i))
                return kept
        return None
