"""The verdict memo's table versions: equal versions mean equal verdicts, so a reply may be reused."""

from __future__ import annotations

from extender.cluster.state import node_state
from extender.model.pods import PodRequest
from extender.model.readings import TelemetryBoard
from extender.scoring import ScoringPolicy, Verdict, VerdictMemo

NODE_A = node_state({"metadata": {"name": "a"}})


def test_a_table_gets_a_new_version_when_a_verdict_is_added_or_forgotten() -> None:
    memo = VerdictMemo()
    shape = memo.shape(PodRequest(gpus=2), ScoringPolicy(), None)
    assert memo.version(shape, now=0.0) is None  # nothing remembered for this shape yet
    table = memo.table(shape, now=0.0)
    empty = memo.version(shape, now=0.0)
    made = [(NODE_A, Verdict("a", True, "fits", score=7), float("inf"), True)]
    memo.remember(shape, table, made, {"a": NODE_A}.get, (memo.epoch, memo.changes))
    added = memo.version(shape, now=0.0)
    assert added != empty and memo.version(shape, now=0.0) == added  # reading does not change it
    memo.forget(["b"])  # any change notice, even for a node this table never judged
    assert memo.version(shape, now=0.0) != added


def test_a_table_has_no_version_once_a_reading_it_used_turned_stale() -> None:
    memo = VerdictMemo()
    shape = memo.shape(PodRequest(gpus=1), ScoringPolicy(), None)
    table = memo.table(shape, now=0.0)
    made = [(NODE_A, Verdict("a", True, "fits", score=7), 30.0, True)]
    memo.remember(shape, table, made, {"a": NODE_A}.get, (memo.epoch, memo.changes))
    assert memo.version(shape, now=29.0) is not None and memo.version(shape, now=30.0) is None


def test_verdicts_worked_out_while_a_refresh_was_followed_are_not_kept() -> None:
    memo, node = VerdictMemo(), node_state({"metadata": {"name": "a"}})
    shape = memo.shape(PodRequest(gpus=1), ScoringPolicy(), None)
    table = memo.table(shape, now=0.0)
    started = (memo.epoch, memo.changes)
    memo.epoch += 1  # what following a refresh does, between working out and remembering
    memo.remember(shape, table, [(node, Verdict("a", True, "fits", score=7), 30.0, True)], {"a": node}.get, started)
    assert table == {} and shape not in node.memo


def test_a_verdict_of_a_node_that_changed_meanwhile_is_not_kept() -> None:
    memo, node, newer = VerdictMemo(), node_state({"metadata": {"name": "a"}}), node_state({"metadata": {"name": "a"}})
    shape = memo.shape(PodRequest(gpus=1), ScoringPolicy(), None)
    table = memo.table(shape, now=0.0)
    started = (memo.epoch, memo.changes)
    memo.forget(["a"])  # node a changed while its verdict was worked out: the model now holds ``newer``
    made = [(node, Verdict("a", True, "fits", score=7), 30.0, True)]
    memo.remember(shape, table, made, {"a": newer}.get, started)
    assert table == {} and shape not in node.memo
    # Handed on from another table, the same: refused, to be sorted one by one
    assert not memo.take(shape, table, ["a"], [made[0][1]], 30.0, started)
    # With no change since, both keep it.
    memo.remember(shape, table, made, {"a": node}.get, (memo.epoch, memo.changes))
    assert table == {"a": made[0][1]} and memo.take(shape, {}, ["a"], [made[0][1]], 30.0, (memo.epoch, memo.changes))


def test_while_a_refresh_is_followed_a_table_answers_the_version_it_had_before() -> None:
    memo, board, policy = VerdictMemo(), TelemetryBoard(60), ScoringPolicy()
    board.replace({}, 0.0)
    nodes = {"a": NODE_A}
    memo.watch(board, policy, lambda: nodes, lambda: 0.0)
    shape = memo.shape(PodRequest(gpus=2), policy, board)
    table = memo.table(shape, now=0.0)
    made = [(NODE_A, Verdict("a", True, "fits", score=7), float("inf"), True)]
    memo.remember(shape, table, made, nodes.get, (memo.epoch, memo.changes))
    before = memo.version(shape, now=0.0)
    seen: list[float | None] = []
    memo.after_follow.append(lambda: seen.append(memo.version(shape, now=1.0)))
    board.replace({}, 1.0)  # a refresh: followed on this thread, then what runs after it
    # Meanwhile a reply made before the refresh still stands; once followed, the table has moved on.
    assert before is not None and seen == [before]
    assert memo.version(shape, now=1.0) not in (None, before)


def test_a_renewed_mix_retires_the_tables_judged_against_older_ones() -> None:
    """The learned mix is renewed, never taken back: a table for a newer one lets the tables of older
    mixes go (a share's verdicts read the mix), keeping those that read none and the pinned ones."""
    from extender.model.gpu_share import ShareRequest
    from extender.scoring.workload import Mix

    memo, policy = VerdictMemo(), ScoringPolicy()
    share = PodRequest(gpus=1, share=ShareRequest("alibaba", "test", milli=500))
    old, new = Mix(1, ()), Mix(2, ())
    whole = memo.shape(PodRequest(gpus=2), policy, None, old)  # a whole-GPU plan reads no mix
    kept = memo.shape(PodRequest(gpus=1, share=ShareRequest("alibaba", "test", milli=300)), policy, None, old)
    stale = memo.shape(share, policy, None, old)
    memo.pin(kept)
    for shape in (whole, kept, stale):
        memo.remember(
            shape, memo.table(shape, 0.0), [(NODE_A, Verdict("a", True, "fits"), 9.0, True)], {"a": NODE_A}.get, (0, 0)
        )
    assert memo.version(stale, 0.0) is not None
    memo.table(memo.shape(share, policy, None, new), 0.0)
    assert memo.version(stale, 0.0) is None
    assert memo.version(whole, 0.0) is not None and memo.version(kept, 0.0) is not None
