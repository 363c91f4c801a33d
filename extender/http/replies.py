"""Verdicts in kube-scheduler's wire form, encoded once per verdict and joined per reply.

At 5,000 candidate nodes encoding is the hot spot of a call, so a verdict's fragments (its JSON-quoted
name, ``"name":"reason"``, ``{"Host":…,"Score":…}``) are made once, kept on the verdict itself
(``Verdict.encoded``: they go with it when a refresh replaces it) and reused while the scoring memo
hands back that same verdict. Replies are kept per pod request (content) and verb: the last reply's fragments
position by position (kube-scheduler asks about the same candidates again and again, so checking
which verdicts changed is one pass in C). A priority entry depends only on the name and the score, and
a refusal's fragments on the name and the reason, so those are made once and shared by every verdict
that has them.

Whole replies are kept too (:class:`WholeReplies`): while a pod shape's remembered verdicts keep one
version and the candidates are the same list, the reply is the very bytes of last time, and a call
costs parsing its body and comparing its names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import compress, repeat
from json.encoder import encode_basestring_ascii
from operator import attrgetter, is_, is_not, itemgetter, not_, or_
from typing import cast

from extender.model.pods import PodRequest
from extender.scoring import Verdict

__all__ = ["FilterParts", "ReplyFragments", "WholeReplies", "filter_answer"]

FilterParts = tuple[list[str], list[str], list[str]]  # passed names, failed entries, unresolvable entries
# Past this share of changed positions a reply is made anew in passes in C rather than patched one by
# one in Python (the node on top moved and every node that reached its score was lowered again).
_PATCHED_AT_MOST = 0.1
# Recent replies kept to be copied for a request whose verdicts are the very same list: each holds six
# lists of the candidates' length (a quarter of a MiB at 5,000 nodes); a few serve the pods of one shape.
_ALIKE_KEPT = 8


# One verdict on the wire (``Verdict.encoded``): its filter entry (a quoted name, or
# ``"name":"reason"``) and its priority entry (a plain tuple: a new pod shape at 5,000 nodes makes 5,000).
_Fragments = tuple[str, str]
_ENCODED, _FILTER, _PRIORITY = attrgetter("encoded"), itemgetter(0), itemgetter(1)
_FITS, _UNRESOLVABLE = attrgetter("fits"), attrgetter("unresolvable")


@dataclass
class _Reply:
    """The fragments of one reply, position by position, with the filter outcome of each."""

    verdicts: list[Verdict]
    filters: list[str] = field(default_factory=list)
    priorities: list[str] = field(default_factory=list)
    passed: list[bool] = field(default_factory=list)
    failed: list[bool] = field(default_factory=list)
    unresolvable: list[bool] = field(default_factory=list)
    # The joined forms, made on first use after a change (read only for callers).
    parts: FilterParts | None = None
    priority_text: str | None = None
    filter_body: bytes | None = None  # the whole filter answer of names (``filter_reply``)

    def copy(self) -> _Reply:
        """Its own lists (a reply is patched in place as its request's verdicts change), sharing the
        joined forms, which are only read."""
        return _Reply(
            [*self.verdicts],
            [*self.filters],
            [*self.priorities],
            [*self.passed],
            [*self.failed],
            [*self.unresolvable],
            self.parts,
            self.priority_text,
            self.filter_body,
        )

    def put(self, i: int, v: Verdict, f: _Fragments) -> None:
        # A verdict that changed only in score leaves the filter's answer as it was (and the reverse).
        if f[0] != self.filters[i] or v.fits != self.passed[i] or v.unresolvable != self.unresolvable[i]:
            self.parts = self.filter_body = None
        if f[1] != self.priorities[i]:
            self.priority_text = None
        self.verdicts[i], self.filters[i], self.priorities[i] = v, f[0], f[1]
        self.passed[i], self.failed[i], self.unresolvable[i] = v.fits, not v.fits and not v.unresolvable, v.unresolvable


class ReplyFragments:
    """Encoded fragments per pod request; a fragment is re-encoded only when its verdict changed."""

    def __init__(self, max_requests: int = 32) -> None:
        # Scoring hands pod shapes that come out alike on a node the very same verdict
        # (``scoring.alike``), so a new shape reuses what others encoded on it. One reply per pod request
        # and verb: a prioritize names only the nodes its filter passed, and one shared entry, never of
        # the length asked, was made anew on every call.
        self._last: dict[tuple[PodRequest, bool], _Reply] = {}
        self._max_requests = max_requests
        # JSON-quoted node names and failure reasons: a few thousand names, and reasons shared by the
        # nodes of one kind (``scoring.alike``), so each is quoted once rather than once per verdict.
        self._alike: dict[tuple[int, int, int], _Reply] = {}  # recent replies by (length, first, last verdict)
        self._quoted: dict[str, str] = {}
        self._reasons: dict[str, str] = {}
        # Priority entries by (name, score) (``_priority``).
        self._priorities: dict[tuple[str, int], str] = {}
        self.encoded = 0  # verdicts encoded so far (each once: the fragments stay on the verdict)

    def encode_ahead(self, verdicts: list[Verdict]) -> None:
        """Encode these verdicts now (the standing pod shapes' tables, as they are filled in off the
        request path), so the first call that hands them out only looks them up."""
        self._fragments(verdicts)

    def _encode(self, v: Verdict) -> _Fragments:
        self.encoded += 1
        quoted, reasons = self._quoted, self._reasons
        name = quoted.get(v.node)
        if name is None:
            if len(quoted) > 50_000:
                quoted.clear()
            name = quoted[v.node] = encode_basestring_ascii(v.node)
        if v.fits:
            v.encoded = found = (name, self._priority(v.node, name, v.score))
            return found
        # A node refuses many shapes alike (every AMD pod size on an NVIDIA node): scoring hands them
        # one verdict per node and reason (``node_verdict.refusal``), so this runs once for all of them.
        reason = reasons.get(v.reason)
        if reason is None:
            if len(reasons) > 50_000:
                reasons.clear()
            reason = reasons[v.reason] = encode_basestring_ascii(v.reason)
        refusal = (f"{name}:{reason}", self._priority(v.node, name, 0))
        v.encoded = refusal
        return refusal

    def _priority(self, node: str, name: str, score: int) -> str:
        """A priority entry, one per (node, score): eleven at most per node, however many verdicts."""
        priority = self._priorities.get((node, score))
        if priority is None:
            if len(self._priorities) > 100_000:
                self._priorities.clear()
            priority = self._priorities[(node, score)] = f'{{"Host":{name},"Score":{score}}}'
        return priority

    def filter_parts(self, request: PodRequest, verdicts: list[Verdict]) -> FilterParts:
        """(passed names, failed entries, unresolvable entries), each already JSON; read them only."""
        return _parts(self._reply((request, False), verdicts))

    def filter_reply(self, request: PodRequest, verdicts: list[Verdict]) -> tuple[bytes, tuple[int, int, int]]:
        """The filter's whole answer with the nodes that pass as names (nodeCacheCapable), and how many
        passed, failed and failed unresolvably: the bytes of last time while no verdict's filter entry
        changed (between two pods at 5,000 nodes, a node's score moves far more often than its fit)."""
        reply = self._reply((request, False), verdicts)
        passed, failed, unresolvable = _parts(reply)
        if reply.filter_body is None:
            head = '{"Nodes":null,"NodeNames":[' + ",".join(passed) + "]"
            reply.filter_body = filter_answer(head, failed, unresolvable).encode()
        return reply.filter_body, (len(passed), len(failed), len(unresolvable))

    def priorities(self, request: PodRequest, verdicts: list[Verdict]) -> str:
        """The prioritize reply: ``[{"Host":…,"Score":…},…]``, a failed node scoring 0."""
        reply = self._reply((request, True), verdicts)
        if reply.priority_text is None:
            reply.priority_text = "[" + ",".join(reply.priorities) + "]"
        return reply.priority_text

    def _reply(self, key: tuple[PodRequest, bool], verdicts: list[Verdict]) -> _Reply:
        if len(self._last) >= self._max_requests and key not in self._last:
            self._last.clear()
        last = self._last.get(key)
        n = len(verdicts)
        if last is None or len(last.verdicts) != n:
            last = self._last[key] = self._new_reply(verdicts)
            return last
        if last.verdicts == verdicts:  # one pass in C (identity first, then content: same fragments)
            return last
        # Positions whose verdict is not the very one of the last reply: one pass in C.
        changed = list(compress(range(n), map(is_not, verdicts, last.verdicts)))
        if len(changed) > _PATCHED_AT_MOST * n:  # the node on top moved, and every score below it: anew
            last = self._last[key] = _whole_reply(verdicts, self._fragments(verdicts))
            return last
        for i in changed:
            v = verdicts[i]
            last.put(i, v, cast("_Fragments | None", v.encoded) or self._encode(v))
        return last

    def _new_reply(self, verdicts: list[Verdict]) -> _Reply:
        """The reply of a request new to these fragments: a copy of a recent one whose verdicts are the
        very same list (another pod of the same shape, a VRAM figure that changes nothing), else made
        from each verdict's fragments."""
        if not verdicts:
            return _whole_reply(verdicts, [])
        key = (len(verdicts), id(verdicts[0]), id(verdicts[-1]))
        alike = self._alike.get(key)
        if alike is not None and alike.verdicts == verdicts:  # identity first, in C
            return alike.copy()
        if len(self._alike) >= _ALIKE_KEPT:
            self._alike.clear()
        made = self._alike[key] = _whole_reply(verdicts, self._fragments(verdicts))
        return made.copy()

    def _fragments(self, verdicts: list[Verdict]) -> list[_Fragments]:
        """Each verdict's fragments, read in a pass in C; only the verdicts never encoded are encoded."""
        found: list[_Fragments] = list(map(_ENCODED, verdicts))
        for i in compress(range(len(found)), map(is_, found, repeat(None))):
            found[i] = self._encode(verdicts[i])
        return found


def filter_answer(head: str, failed: list[str], unresolvable: list[str]) -> str:
    """A filter answer: ``head`` (its opening: the nodes that pass, as names or as Node objects) and the
    failed entries, each already JSON."""
    text = head + ',"FailedNodes":{' + ",".join(failed)
    return text + '},"FailedAndUnresolvableNodes":{' + ",".join(unresolvable) + '},"Error":""}'


def _parts(reply: _Reply) -> FilterParts:
    if reply.parts is None:
        reply.parts = (
            list(compress(reply.filters, reply.passed)),
            list(compress(reply.filters, reply.failed)),
            list(compress(reply.filters, reply.unresolvable)),
        )
    return reply.parts


def _whole_reply(verdicts: list[Verdict], found: list[_Fragments]) -> _Reply:
    """A reply's fragments position by position, built in passes in C (a new pod shape at 5,000 nodes)."""
    passed = list(map(_FITS, verdicts))
    unresolvable = list(map(_UNRESOLVABLE, verdicts))
    failed = list(map(not_, map(or_, passed, unresolvable)))
    filters, priorities = list(map(_FILTER, found)), list(map(_PRIORITY, found))
    return _Reply([*verdicts], filters, priorities, passed, failed, unresolvable)


@dataclass(frozen=True)
class _Whole:
    names: list[str]
    version: float
    reply: bytes
    counts: tuple[int, ...]  # what the reply says, for the metrics (filter: passed, failed, unresolvable)
    chosen: str | None = None  # the node kube-scheduler binds on this answer (``approvals``), if it tells


class WholeReplies:
    """The last encoded reply per (verb, pod request), with the candidates and verdicts version it
    answered."""

    def __init__(self, max_requests: int = 32) -> None:
        self._last: dict[tuple[str, PodRequest], _Whole] = {}
        self._max_requests = max_requests

    def reuse(self, verb: str, request: PodRequest, names: list[str], version: float | None) -> _Whole | None:
        last = self._last.get((verb, request))
        # ``is`` first: a repeated candidate list is handed over as the very list (``names``).
        if last is None or version is None or last.version != version:
            return None
        if last.names is not names and last.names != names:
            return None
        return last

    def keep(
        self,
        verb: str,
        request: PodRequest,
        names: list[str],
        version: float | None,
        reply: bytes,
        *counts: int,
        chosen: str | None = None,
    ) -> None:
        if version is None:
            return
        if len(self._last) >= self._max_requests:
            self._last.clear()
        self._last[(verb, request)] = _Whole(names, version, reply, counts, chosen)
