"""The filter that passes only the advisor's best node.

With the printed profile, kube-scheduler binds where the advisor ranks best: its weight makes one wire
point outweigh every enabled score plugin, and the advisor's wire scores give exactly one node the top
score (``ranking``). So passing every fitting node to kube-scheduler, which then runs its own score
plugins on all of them and sends them all again to prioritize, only to bind the advisor's top node, is
work whose outcome is known before it starts. When the filter passes that one node, kube-scheduler skips
scoring altogether ("When only one node after predicate, just use it": ``schedulePod`` in
``pkg/scheduler/schedule_one.go``) and binds it: the same binding, one round trip instead of two, and none
of the per-candidate encoding, decoding and scoring that made kube-scheduler itself the largest cost of
the extender at 5,000 nodes (its score plugins ran on every node the filter passed).

Only for a pod that wants a GPU and only where the advisor has an opinion (``ranking.read_order``): a pod
wanting no GPU, or one nothing was judged for (a DRA claim not yet known), passes on every node it fits,
for kube-scheduler's plugins to place, as it always has. The failed nodes
are not listed when one passes: kube-scheduler reads them only to explain a pod that fits nowhere.

A profile whose extender weight does not outweigh its score plugins (``scheduler-config --weight``
lowered, or the advisor added to a profile of one's own) wants kube-scheduler to weigh both: serve such a
scheduler with ``--filter-passes fitting``, which passes every fitting node as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from json.encoder import encode_basestring_ascii
from typing import Any

from extender.http.replies import filter_answer
from extender.http.wire import ExtenderArgs
from extender.scoring import Verdict
from extender.scoring.ranking import Order, read_order

__all__ = ["FILTER_PASSES", "best_only", "nodes_head"]

# ``serve --filter-passes``: the advisor's best node only (the default), or every node that fits.
FILTER_PASSES = ("best", "fitting")


def best_only(
    args: ExtenderArgs,
    verdicts: list[Verdict],
    planned: Sequence[str] = (),
    ordered: Callable[[list[Verdict]], Order | None] = read_order,
) -> tuple[bytes, str] | None:
    """The filter answer passing only the node the advisor ranks best, and that node; None when the
    advisor has no opinion of this pod (it is passed on every node that fits). ``planned``: the nodes an
    applied defragmentation plan sends this pod's owner to (``scoring.planned``): the first that fits is
    the best. ``ordered``: ``ranking.read_order``, or a stream of it (``ranking_stream.OrderStreams``)."""
    fitting = {v.node for v in verdicts if v.fits} if planned else set()
    best = next((node for node in planned if node in fitting), None)
    if best is None:
        order = ordered(verdicts)
        if order is None:
            return None
        best = verdicts[order.first].node
    if args.node_names is not None:
        head = '{"Nodes":null,"NodeNames":[' + encode_basestring_ascii(best) + "]"
    else:
        head = nodes_head(args, (best,))
    return filter_answer(head, [], []).encode(), best


def nodes_head(args: ExtenderArgs, keep: Collection[str]) -> str:
    """The reply's opening when kube-scheduler sent Node objects (nodeCacheCapable: false): the nodes
    passed, as Node objects (it reads only Nodes: names alone would silently filter every node)."""
    items: list[Any] = [
        item
        for item in (args.nodes.items if args.nodes else [])
        if str((item.get("metadata") or {}).get("name", "")) in keep
    ]
    return '{"Nodes":' + json.dumps({"metadata": {}, "items": items}, separators=(",", ":")) + ',"NodeNames":null'
