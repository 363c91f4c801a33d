"""A pod shape's verdicts for one candidate list, call after call: looked up again only where nodes changed.

A warm call looked every candidate up in the shape's table: at 5,000 names a probe each, 0.1–0.25 ms a
call and two calls a pod, where between two pods one node changes. Kept per pod shape: the candidate
list and the table the last call read, the memo's epoch then, what it found, and the newest entry of
the memo's change log (``VerdictMemo.log``) when it began. The next call over the very same list and
table, no refresh followed since, takes what the last one found and looks up again:

- every node of the log's entries from that newest one on (it is read again: the change it names may
  have been on its way into the table while the last call read it; later ones are all new);
- every position the last call worked out that the table did not keep (an unknown node, a verdict
  kept only where its node did not change meanwhile).

When the log no longer reaches back (a burst of changes), a change replaced every node, or the list,
the table or the epoch differ, every name is looked up, as before.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass

from extender.scoring.verdict import Verdict

__all__ = ["LookupStreams"]

Log = deque[tuple[int, list[str] | None]]


@dataclass(slots=True)
class _Seen:
    names: list[str]
    table: dict[str, Verdict]
    epoch: int
    mark: int  # the newest log entry's count when the call began (0: none yet)
    found: list[Verdict]
    again: list[int]  # positions to look up again
    where: dict[str, int] | None = None  # name → position, made on the first change


class LookupStreams:
    """The last call's lookups per pod shape; each call replaces its shape's entry."""

    def __init__(self, size: int = 8) -> None:
        self._seen: dict[Hashable, _Seen] = {}
        self._size = size
        self._lock = threading.Lock()

    def found(
        self, key: Hashable, names: list[str], table: dict[str, Verdict], epoch: int, log: Log
    ) -> tuple[list[Verdict | None], int]:
        """The table's verdict (None: none) per name, and the log's mark to keep with them."""
        entries = list(log)
        mark = entries[-1][0] if entries else 0
        with self._lock:
            seen = self._seen.get(key)
        if seen is None or seen.names is not names or seen.table is not table or seen.epoch != epoch:
            return list(map(table.get, names)), mark
        changed = _since(entries, seen.mark)
        if changed is None:
            return list(map(table.get, names)), mark
        found: list[Verdict | None] = list(seen.found)
        get = table.get
        for i in seen.again:
            found[i] = get(names[i])
        if changed:
            if seen.where is None:
                seen.where = dict(zip(names, range(len(names)), strict=True))  # in C
            if len(seen.where) != len(names):  # a name sent twice: looked up whole
                return list(map(table.get, names)), mark
            where = seen.where.get
            for name in changed:
                if (at := where(name)) is not None:
                    found[at] = get(name)
        return found, mark

    def keep(
        self,
        key: Hashable,
        names: list[str],
        table: dict[str, Verdict],
        epoch: int,
        mark: int,
        found: list[Verdict],
        visited: list[int],
    ) -> None:
        """What a call found (every position filled in) and the positions it worked out itself."""
        get = table.get
        again = [i for i in visited if get(names[i]) is not found[i]]
        with self._lock:
            old = self._seen.get(key)
            where = old.where if old is not None and old.names is names else None
            if len(self._seen) >= self._size and key not in self._seen:
                self._seen.clear()
            self._seen[key] = _Seen(names, table, epoch, mark, list(found), again, where)


def _since(entries: list[tuple[int, list[str] | None]], mark: int) -> set[str] | None:
    """The nodes of the entries from ``mark`` on; None when the log does not reach back to it or an
    entry changed every node."""
    if not entries:
        return set() if mark == 0 else None
    if entries[0][0] > max(mark, 1):
        return None
    changed: set[str] = set()
    for count, names in entries:
        if count >= mark:
            if names is None:
                return None
            changed.update(names)
    return changed
