"""kube-scheduler's candidate names, read once per distinct list and split off only when that is safe."""

from __future__ import annotations

import json

import orjson
import pytest

from extender.http.candidates import CandidateLists, cuts

POD = {"metadata": {"name": "p"}, "spec": {"containers": []}}


def go_body(names: list[str], pod: dict[str, object] | None = None) -> bytes:
    """As Go's encoder writes ExtenderArgs: fields in order, no spaces, NodeNames last."""
    return json.dumps({"Pod": pod or POD, "Nodes": None, "NodeNames": names}, separators=(",", ":")).encode()


def test_a_kube_scheduler_body_splits_into_the_same_document_a_full_parse_gives() -> None:
    body = go_body(["a", "b", "c"])
    assert CandidateLists().split(body) == orjson.loads(body)


def test_the_same_names_sent_again_are_handed_back_as_the_very_list_read_before() -> None:
    lists = CandidateLists()
    first = lists.split(go_body(["a", "b"]))
    again = lists.split(go_body(["a", "b"], pod={"metadata": {"name": "other"}}))
    assert first is not None and again is not None
    assert again["NodeNames"] is first["NodeNames"] and again["Pod"]["metadata"]["name"] == "other"


def test_a_different_list_of_the_same_length_is_read_anew() -> None:
    lists = CandidateLists()
    lists.split(go_body(["aa", "bb"]))
    found = lists.split(go_body(["aa", "bc"]))
    assert found is not None and found["NodeNames"] == ["aa", "bc"]


def test_the_same_names_in_another_order_are_the_list_kept_and_answers_follow_its_order() -> None:
    # kube-scheduler's parallel filter sends its candidates in a new order every call.
    lists = CandidateLists()
    first = lists.split(go_body(["a", "b", "c"]))
    again = lists.split(go_body(["c", "a", "b"]))
    assert first is not None and again is not None
    assert again["NodeNames"] is first["NodeNames"] and again["NodeNames"] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("kept", "sent"),
    [
        (["a", "b", "c"], ["c", "b", "d"]),  # one node another: not the same nodes
        (["a", "b", "c"], ["a", "b"]),  # one node fewer (it filled up)
        (["a", "b", "c"], ["c", "a", "a"]),  # a name twice: as many names, not the same nodes
        (["a", "a", "b"], ["a", "b", "b"]),  # the kept list has a name twice
        (["a", "a", "b"], ["b", "a", "a"]),  # both twice: no order of distinct nodes to keep
    ],
)
def test_only_exactly_the_same_nodes_each_once_count_as_another_order(kept: list[str], sent: list[str]) -> None:
    lists = CandidateLists()
    first = lists.split(go_body(kept))
    found = lists.split(go_body(sent))
    assert first is not None and found is not None
    assert found["NodeNames"] is not first["NodeNames"] and found["NodeNames"] == sent


def test_a_list_met_again_in_another_order_stays_among_the_recent() -> None:
    lists = CandidateLists(keep=2)
    first = lists.split(go_body(["x", "y"]))
    lists.split(go_body(["z"]))
    lists.split(go_body(["y", "x"]))  # moves the kept list to the front
    lists.split(go_body(["w"]))
    again = lists.split(go_body(["x", "y"]))
    assert first is not None and again is not None and again["NodeNames"] is first["NodeNames"]


@pytest.mark.parametrize(
    ("why", "body"),
    [
        ("spaces after the separators", json.dumps({"Pod": POD, "NodeNames": ["a"]}).encode()),
        ("NodeNames not last", b'{"NodeNames":["a"],"Pod":{}}'),
        ("a name that is not a string", b'{"Pod":{},"Nodes":null,"NodeNames":["a",1]}'),
        ("NodeNames nested in the pod, last", b'{"Pod":{"x":{},"NodeNames":["a"]}}'),
        ("a cut inside a nested object", b'{"Pod":{"y":1,"NodeNames":["a"]}}'),
        ("names that are not an array", b'{"Pod":{},"NodeNames":[1]]}'),
        ("not JSON at all", b'nonsense,"NodeNames":["a"]}'),
        ("a head that is an array", b'[{"Pod":{}},"NodeNames":["a"]}'),
    ],
)
def test_a_body_not_in_kube_schedulers_shape_is_left_to_the_full_parse(why: str, body: bytes) -> None:
    assert CandidateLists().split(body) is None, why


def test_a_duplicate_key_resolves_as_a_full_parse_does_the_last_one_wins() -> None:
    body = b'{"Pod":{},"NodeNames":["old"],"NodeNames":["new"]}'
    assert CandidateLists().split(body) == orjson.loads(body) == {"Pod": {}, "NodeNames": ["new"]}


def test_only_the_most_recent_lists_are_kept() -> None:
    lists = CandidateLists(keep=2)
    first = lists.split(go_body(["x"]))
    lists.split(go_body(["y"]))
    lists.split(go_body(["z"]))
    again = lists.split(go_body(["x"]))
    assert first is not None and again is not None and again["NodeNames"] is not first["NodeNames"]


def test_the_cut_is_looked_for_from_the_front_first_so_thousands_of_names_are_not_searched() -> None:
    # Names full of the mark's characters: rfind's skip table skips little over them.
    body = go_body([f"hgx-h100-a-{i:05d}" for i in range(3)])
    first = body.index(b',"NodeNames":[')
    assert list(cuts(body)) == [first]


def test_a_mark_met_before_the_real_one_is_tried_first_then_the_last_one() -> None:
    body = b'{"Pod":{"x":{},"NodeNames":["a"]},"Nodes":null,"NodeNames":["b"]}'
    nested, last = body.index(b',"NodeNames":['), body.rindex(b',"NodeNames":[')
    assert list(cuts(body)) == [nested, last]
    assert CandidateLists().split(body) == orjson.loads(body)
