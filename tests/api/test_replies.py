"""kube-scheduler's reply fragments: encoded once per verdict, re-encoded when the verdict changes."""

from __future__ import annotations

import json

from extender.http.replies import ReplyFragments, WholeReplies
from extender.model.pods import PodRequest
from extender.scoring import Verdict

POD = PodRequest(gpus=2)


def test_filter_parts_sort_verdicts_into_passed_failed_and_unresolvable_as_json() -> None:
    verdicts = [
        Verdict("a", True, "fits", score=7),
        Verdict('b"q', False, "2 of 8 GPUs free"),
        Verdict("c", False, "has no nvidia.com/gpu", unresolvable=True),
    ]
    passed, failed, unresolvable = ReplyFragments().filter_parts(POD, verdicts)
    assert passed == ['"a"']
    assert json.loads("{" + ",".join(failed) + "}") == {'b"q': "2 of 8 GPUs free"}
    assert json.loads("{" + ",".join(unresolvable) + "}") == {"c": "has no nvidia.com/gpu"}


def test_priorities_give_a_failed_node_0_and_follow_a_changed_verdict() -> None:
    fragments = ReplyFragments()
    first = [Verdict("a", True, "fits", score=7), Verdict("b", False, "busy", score=9)]
    assert json.loads(fragments.priorities(POD, first)) == [{"Host": "a", "Score": 7}, {"Host": "b", "Score": 0}]
    again = [first[0], Verdict("b", True, "fits now", score=4)]  # node b changed, a did not
    assert json.loads(fragments.priorities(POD, again)) == [{"Host": "a", "Score": 7}, {"Host": "b", "Score": 4}]
    assert fragments.filter_parts(POD, again)[0] == ['"a"', '"b"']
    # Another candidate list for the same pod: fragments are found by node name.
    assert json.loads(fragments.priorities(POD, [again[1]])) == [{"Host": "b", "Score": 4}]


def test_a_prioritize_over_the_nodes_passed_keeps_the_filters_reply_for_the_next_pod() -> None:
    """kube-scheduler's filter names every node, its prioritize only those that passed: each keeps its own
    reply, so the next pod's filter patches its own (the same parts while nothing changed) rather than
    building a reply of every node anew after each prioritize."""
    fragments = ReplyFragments()
    verdicts = [Verdict(f"n{i}", i % 3 != 0, "fits" if i % 3 else "busy", score=i % 10) for i in range(30)]
    parts = fragments.filter_parts(POD, verdicts)
    passed = [x for x in verdicts if x.fits]
    text = fragments.priorities(POD, passed)
    assert fragments.filter_parts(POD, verdicts) is parts
    assert fragments.priorities(POD, passed) is text


def test_each_pod_request_has_its_own_fragments() -> None:
    fragments = ReplyFragments(max_requests=1)
    assert fragments.priorities(POD, [Verdict("a", True, "x", score=3)]) == '[{"Host":"a","Score":3}]'
    other = PodRequest(gpus=4)
    assert fragments.priorities(other, [Verdict("a", True, "x", score=8)]) == '[{"Host":"a","Score":8}]'
    assert fragments.priorities(POD, [Verdict("a", True, "x", score=3)]) == '[{"Host":"a","Score":3}]'


def test_a_whole_reply_is_reused_only_for_the_same_names_and_verdicts_version() -> None:
    whole = WholeReplies()
    whole.keep("prioritize", POD, ["a", "b"], 3, b"[...]")
    assert whole.reuse("prioritize", POD, ["a", "b"], 3) is not None
    assert whole.reuse("prioritize", POD, ["a", "b"], 4) is None  # a verdict was added or forgotten since
    assert whole.reuse("prioritize", POD, ["b", "a"], 3) is None  # other candidates
    assert whole.reuse("filter", POD, ["a", "b"], 3) is None  # the other verb
    assert whole.reuse("prioritize", POD, ["a", "b"], None) is None  # no remembered verdicts at all


def test_a_new_request_with_the_very_verdicts_of_another_reads_the_same_and_is_patched_on_its_own() -> None:
    fragments = ReplyFragments()
    verdicts = [Verdict("a", True, "fits", score=7), Verdict("b", False, "busy")]
    twin = PodRequest(gpus=2, gpu_memory_mib=1024)  # a VRAM figure that changes no verdict
    first = fragments.priorities(POD, verdicts)
    encoded = fragments.encoded
    assert fragments.priorities(twin, list(verdicts)) == first
    assert fragments.encoded == encoded  # taken from the other reply, nothing encoded anew
    # The twin's verdict on b changes: its reply follows, the first request's stays as it was.
    assert json.loads(fragments.priorities(twin, [verdicts[0], Verdict("b", True, "fits", score=3)]))[1] == {
        "Host": "b",
        "Score": 3,
    }
    assert fragments.priorities(POD, verdicts) == first
