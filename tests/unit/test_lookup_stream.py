"""Lookups call after call (``lookup_stream``) find what looking every name up finds, as the memo's
tables change between calls: nodes forgotten (logged), verdicts added, a table made anew, a refresh
followed, bursts of changes past the log's reach, and a change that replaced every node."""

from __future__ import annotations

import random
from collections import deque

import pytest

from extender.scoring.lookup_stream import LookupStreams
from extender.scoring.verdict import Verdict


class Memo:
    """What the stream reads of a ``VerdictMemo``: a table, its epoch and its change log."""

    def __init__(self, names: list[str]) -> None:
        self.table = {n: Verdict(n, True, "fits") for n in names}
        self.epoch, self.changes = 0, 0
        self.log: deque[tuple[int, list[str] | None]] = deque(maxlen=8)

    def forget(self, names: list[str] | None) -> None:
        self.changes += 1
        self.log.append((self.changes, names))
        for name in names if names is not None else list(self.table):
            self.table.pop(name, None)


@pytest.mark.parametrize("seed", range(30))
def test_patched_lookups_are_every_name_looked_up(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.choice((1, 3, 50)))]
    candidates = [*names, "unknown"]  # a node the table never keeps
    memo, streams = Memo(names), LookupStreams(size=2)
    for _call in range(80):
        step = rng.random()
        if step < 0.4:
            memo.forget(rng.sample(names, k=min(len(names), rng.choice((1, 1, 2, 12)))))
        elif step < 0.45:
            memo.forget(None)
        elif step < 0.5:
            memo.table = dict(memo.table)  # expired: a new table
        elif step < 0.55:
            memo.epoch += 1  # a refresh followed
        key = rng.choice(("a", "a", "b", "c"))
        found, mark = streams.found(key, candidates, memo.table, memo.epoch, memo.log)
        assert found == list(map(memo.table.get, candidates))
        missing = [i for i, v in enumerate(found) if v is None]
        for i in missing:  # worked out; kept in the table unless the node is unknown
            made = found[i] = Verdict(candidates[i], True, "fits")
            if candidates[i] != "unknown":
                memo.table[candidates[i]] = made
        streams.keep(key, candidates, memo.table, memo.epoch, mark, found, missing)  # type: ignore[arg-type]


def test_a_change_on_its_way_into_the_table_is_read_again_next_call() -> None:
    """The newest log entry may not have reached the table while a call read it: the next call reads
    its nodes again, even with no change since."""
    names = ["a", "b"]  # kube-scheduler's list, read once (``candidates``): one object call after call
    memo, streams = Memo(names), LookupStreams()
    memo.log.append((1, ["a"]))  # logged; the table still holds a's old verdict
    memo.changes = 1
    found, mark = streams.found("pod", names, memo.table, 0, memo.log)
    stale = found[0]
    streams.keep("pod", names, memo.table, 0, mark, found, [])  # type: ignore[arg-type]
    memo.table["a"] = Verdict("a", False, "full")  # the change lands
    found, _ = streams.found("pod", names, memo.table, 0, memo.log)
    assert found[0] is memo.table["a"] and found[0] is not stale
