"""The console's defragmentation page in a real headless browser against a real ``gpu-advisor serve``: the
fleet plan beside the cluster view (each move, what it gives back, what stays and why), its nodes linked
to their views, a name written as markup shown as text, and no request leaving 127.0.0.1.

Skipped where chromium is missing; under ``CI=true`` that fails instead (``.ci/run`` installs it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By

from benchmarks.console import XSS_NAME, hosts_asked, network_events, wait_for
from benchmarks.hostile import served
from tests.defrag.objects import node, pod


def replica(name: str, on: str) -> dict[str, Any]:
    made = pod(name, 1, on)
    made["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "train-1", "uid": "rs-1", "controller": True}]
    return made


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """a and b: 2 GPUs, one held on each by a replica; c: both held by a bare pod named as markup; a 2-GPU
    pod waits. Moving ml/p from a to b joins the two lone GPUs into a pair the waiting pod can use."""
    bare = pod(XSS_NAME, 2, "c", owner=None)
    bare["metadata"]["namespace"] = "web"
    items = [node("a", 2), node("b", 2), node("c", 2), replica("p", "a"), replica("q", "b"), bare]
    items.append(pod("waiting", 2, owner=None))
    tmp = tmp_path_factory.mktemp("defrag-console")
    (tmp / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    with served("--cluster", str(tmp / "cluster.json"), log=tmp / "serve.log") as (port, _, _):
        yield f"http://127.0.0.1:{port}"


def test_the_fleet_plan_shows_each_move_what_it_gives_back_and_what_stays(browser: Chrome, base: str) -> None:
    network_events(browser)
    browser.get(base + "/")
    wait_for(browser, ".node")
    browser.find_element(By.LINK_TEXT, "Defrag").click()  # from the cluster view, without a reload
    wait_for(browser, "#defrag tr.move")
    assert browser.current_url == base + "/defrag"
    # a and b each strand one GPU against the pairs the fleet asks for; after the move a has a free pair
    assert browser.find_element(By.CSS_SELECTOR, "#defrag .verdict").text.startswith("1 move strand")
    cells = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#defrag tr.move td")]
    assert cells[:4] == ["1", "ml/p", "a", "b"] and int(cells[5]) > 0
    left = browser.find_element(By.CSS_SELECTOR, "#defrag tr.left-alone").text
    assert left == f"web/{XSS_NAME} a bare pod: no controller would recreate it"
    assert browser.find_elements(By.CSS_SELECTOR, "main img") == []
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018  (reading it is the check: no alert() ran)
    assert "Nothing was evicted" in browser.find_element(By.ID, "defrag").text
    browser.find_element(By.CSS_SELECTOR, "#defrag tr.move a[href='/nodes/b']").click()
    wait_for(browser, "svg.wiring, .node-view, h1")
    assert browser.current_url == base + "/nodes/b"
    assert hosts_asked(network_events(browser)) == {"127.0.0.1"}


def test_plan_again_asks_anew(browser: Chrome, base: str) -> None:
    browser.get(base + "/defrag")
    wait_for(browser, "#defrag tr.move")
    network_events(browser)
    browser.find_element(By.ID, "plan-again").click()
    wait_for(browser, "#defrag tr.move")
    sent = [e["params"]["request"] for e in network_events(browser) if e["method"] == "Network.requestWillBeSent"]
    # asked for again, not redrawn from the last answer
    assert [(r["method"], r["url"]) for r in sent] == [("POST", base + "/v1/defrag")]
