"""What the bind verb remembers of this replica's answers: every approval for 30 s, what it passed only for
the newest few (a 5,000-node filter reply is ~100 KB; kube-scheduler binds right after its cycle)."""

from __future__ import annotations

from extender.http.bind_guard import Approval, ApprovalLog, constraints_of

REPLY = b'{"NodeNames":["a","b","c"],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""}'


def test_an_approval_covers_its_pick_its_candidates_and_what_its_filter_passed() -> None:
    assert Approval({}, 0.0, pick="a").covers("a") and not Approval({}, 0.0, pick="a").covers("b")
    assert Approval({}, 0.0, candidates=["a", "b"]).covers("b")
    assert Approval({}, 0.0, filter_reply=REPLY).covers("c") and not Approval({}, 0.0, filter_reply=REPLY).covers("d")


def test_approvals_lapse_after_the_window() -> None:
    log = ApprovalLog(window_s=30)
    log.keep("u1", Approval({}, 100.0, pick="a"))
    assert log.get("u1", 130.0) is not None and log.get("u1", 130.5) is None
    log.keep("u2", Approval({}, 131.0, pick="b"))  # 131 - 100 > 30: the first is dropped
    assert log.get("u1", 100.0) is None


def test_past_the_newest_few_an_approval_keeps_only_its_pick() -> None:
    log = ApprovalLog(whole=2)
    for i, uid in enumerate(("u1", "u2", "u3")):  # u1 is third newest once u3 arrives: lightened
        log.keep(uid, Approval({}, float(i), pick=f"pick-{uid}", filter_reply=REPLY))
    old, newest = log.get("u1", 3.0), log.get("u3", 3.0)
    assert old is not None and old.covers("pick-u1") and not old.covers("a")
    assert newest is not None and newest.covers("a")


def test_a_pod_approved_again_is_lightened_only_by_its_own_newest_approval_ageing() -> None:
    log = ApprovalLog(whole=2)
    log.keep("u1", Approval({}, 0.0, filter_reply=REPLY))  # filter
    log.keep("u1", Approval({}, 1.0, candidates=["a", "b"]))  # then prioritize: the newest of u1
    log.keep("u2", Approval({}, 2.0, pick="x"))  # the filter's entry ages out; u1's prioritize stays whole
    kept = log.get("u1", 2.0)
    assert kept is not None and kept.covers("b")


def test_only_the_constraints_of_a_spec_are_kept() -> None:
    spec = {"schedulerName": "gpu-advisor", "nodeSelector": {"pool": "a"}, "containers": [{"name": "c"}], "volumes": []}
    assert constraints_of(spec) == {"schedulerName": "gpu-advisor", "nodeSelector": {"pool": "a"}}
    assert constraints_of(None) == {}
