"""The console in a real headless browser (Debian's chromium through chromedriver) against a real
``gpu-advisor serve`` on the staged cluster: drill from cluster to node to pod, ask a what-if, see a
name written as markup stay text, read /docs offline, and no request leave 127.0.0.1.

Skipped where chromium is missing; under ``CI=true`` that fails instead (``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By

from benchmarks.console import (
    WHAT_IF,
    XSS_NAME,
    browser_log,
    console,
    hosts_asked,
    network_events,
    submit_what_if,
    wait_for,
)
from benchmarks.hostile import served
from tests.console.test_access import FakeApiServer
from tests.kube.test_kube_source import kubeconfig


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with console(tmp_path_factory.mktemp("console")) as address:
        yield address


def texts(browser: Chrome, css: str) -> list[str]:
    return [e.text for e in browser.find_elements(By.CSS_SELECTOR, css)]


def lit(browser: Chrome, scope: str = "") -> list[int]:
    found = browser.find_elements(By.CSS_SELECTOR, f"{scope} svg.wiring g.gpu.lit")
    return sorted(int(str(e.get_attribute("data-gpu"))) for e in found)


def csp_violations(browser: Chrome) -> list[str]:
    return [e["message"] for e in browser_log(browser, "browser") if "Content Security Policy" in e["message"]]


def test_drill_from_the_cluster_to_a_node_to_a_pod(browser: Chrome, base: str) -> None:
    network_events(browser)
    browser.get(base + "/")
    wait_for(browser, ".node")
    assert "allocated but idle" in browser.find_element(By.ID, "totals").text
    browser.find_element(By.LINK_TEXT, "dgx1-v100-a").click()
    wait_for(browser, "svg.wiring")
    assert browser.current_url == base + "/nodes/dgx1-v100-a"
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.wiring path.nvlink")) == 16  # a DGX-1's hybrid cube mesh
    browser.find_element(By.CSS_SELECTOR, "tr.pick[data-k='4']").click()  # the best 4 it could give: the free quad
    assert lit(browser) == [4, 5, 6, 7]
    browser.find_element(By.LINK_TEXT, "ml/train-llama").click()
    wait_for(browser, "#pod-name")
    assert browser.current_url == base + "/pods/ml/train-llama"
    assert browser.find_element(By.ID, "pod-name").text == "ml/train-llama"
    assert lit(browser) == [0, 1, 2, 3]  # its GPUs on the node's drawing
    assert hosts_asked(network_events(browser)) == {"127.0.0.1"}
    assert csp_violations(browser) == []


def test_a_what_if_ranks_the_nodes_and_lights_the_chosen_gpus(browser: Chrome, base: str) -> None:
    request = urllib.request.Request(
        base + "/v1/dry-run", data=WHAT_IF.encode(), headers={"Content-Type": "application/yaml"}
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        best = json.loads(reply.read())["ranked"][0]
    assert (best["node"], best["gpus"]) == ("dgx1-v100-a", [4, 5, 6, 7])  # the free NVLink quad
    network_events(browser)
    browser.get(base + "/what-if")
    wait_for(browser, "#manifest")
    submit_what_if(browser, WHAT_IF)
    first_row = browser.find_element(By.CSS_SELECTOR, "#answer table tbody tr").text
    assert first_row.startswith("dgx1-v100-a 10 4, 5, 6, 7")
    assert lit(browser, ".drawing[data-node='dgx1-v100-a']") == [4, 5, 6, 7]
    assert hosts_asked(network_events(browser)) == {"127.0.0.1"}


def test_a_pod_named_as_markup_is_shown_as_text(browser: Chrome, base: str) -> None:
    browser.get(base + "/")
    wait_for(browser, ".node")
    assert f"web/{XSS_NAME}" in texts(browser, "ul.pods a")
    assert browser.find_elements(By.CSS_SELECTOR, "main img") == []
    browser.find_element(By.LINK_TEXT, f"web/{XSS_NAME}").click()
    wait_for(browser, "#pod-name")
    assert browser.find_element(By.ID, "pod-name").text == f"web/{XSS_NAME}"
    assert browser.find_elements(By.CSS_SELECTOR, "main img") == []
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018  (reading it is the check: no alert() ran)


def test_the_pending_view_and_the_api_docs_work_offline(browser: Chrome, base: str) -> None:
    network_events(browser)
    browser.get(base + "/pending")
    wait_for(browser, ".pending")
    assert texts(browser, ".pending .verdict") == ["Explained by placement"]
    browser.get(base + "/docs")
    wait_for(browser, "details.op")
    assert "/v1/console/cluster" in texts(browser, "details.op .path")
    assert hosts_asked(network_events(browser)) == {"127.0.0.1"}
    assert csp_violations(browser) == []


def test_under_api_auth_the_page_asks_for_a_token_and_then_shows_the_cluster(
    browser: Chrome, tmp_path_factory: pytest.TempPathFactory
) -> None:
    fake = FakeApiServer({"viewer": "ops:viewer"}, {})
    tmp = tmp_path_factory.mktemp("guarded")
    try:
        with console(tmp, "--api-auth", "--kubeconfig", kubeconfig(tmp, fake.url)) as guarded:
            browser.get(guarded + "/")
            wait_for(browser, "#token-form:not([hidden])")
            assert browser.find_elements(By.CSS_SELECTOR, ".node") == []
            browser.find_element(By.ID, "token").send_keys("viewer")
            browser.find_element(By.CSS_SELECTOR, "#token-form button").click()
            wait_for(browser, ".node")
    finally:
        fake.close()
    assert [a["spec"]["token"] for a in fake.asked] == ["viewer"]  # one review, then the answer is cached


def test_the_pod_view_shows_right_sizing_from_the_servers_gpu_history(browser: Chrome) -> None:
    with served() as (port, _, _):  # the simulated cluster, whose synthetic history rightsize reads
        browser.get(f"http://127.0.0.1:{port}/pods/ml/finetune")
        wait_for(browser, "#rightsize p b")
        # 2 GPUs held, 0.44 used: SM p95 35 % of 2 GPUs is 0.70 GPUs of demand, ÷ 80 % target → 1 GPU
        assert browser.find_element(By.CSS_SELECTOR, "#rightsize p").text == "Right-sizing: 2 → 1 GPU (high confidence)"


def test_the_nvl72_rack_is_one_box_of_eighteen_trays_and_a_click_drills_to_a_tray(browser: Chrome) -> None:
    with served("--cluster", "simulated-rack") as (port, _, _):
        base = f"http://127.0.0.1:{port}"
        network_events(browser)
        browser.get(base + "/")
        wait_for(browser, ".rack")
        [rack] = browser.find_elements(By.CSS_SELECTOR, ".rack")
        assert rack.find_element(By.CSS_SELECTOR, ".rack-title").text == "NVLink clique 4fc6b5a0.32766"
        # 18 trays × 4 GB200 = 72 GPUs, all free in the simulated rack
        assert rack.find_element(By.CSS_SELECTOR, ".rack-counts").text == "18 trays · 72 GPUs · 72 free · 0 allocated"
        assert len(rack.find_elements(By.CSS_SELECTOR, ".node")) == 18
        assert len(browser.find_elements(By.CSS_SELECTOR, ".nodes > .node")) == 18 + 7  # and the 7 others, loose
        rack.find_element(By.LINK_TEXT, "nvl72-tray-03").click()
        wait_for(browser, "#clique")
        assert browser.current_url == base + "/nodes/nvl72-tray-03"
        clique = browser.find_element(By.ID, "clique")
        mates = ", ".join(f"nvl72-tray-{t:02d}" for t in range(1, 19) if t != 3)
        assert clique.text == f"NVLink clique 4fc6b5a0.32766 · rack-mates: {mates}"
        assert len(clique.find_elements(By.CSS_SELECTOR, "a")) == 17
        assert hosts_asked(network_events(browser)) == {"127.0.0.1"}
        assert csp_violations(browser) == []
