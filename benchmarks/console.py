"""The web console in a real headless browser: screenshots of its views, page weight and server time.

    python benchmarks/console.py [--shots docs] [--repeat 50]

Starts ``gpu-advisor serve`` on 127.0.0.1 with the staged cluster (the simulated one, plus a pending
pod, an allocated GPU left idle and a pod whose name is markup), drives Debian's ``chromium`` through
``chromedriver`` (Selenium), saves a PNG per view under ``--shots``, and prints per view the bytes the
browser fetched (page, assets and JSON) and the server time of the view's JSON route (median and p95
of ``--repeat`` calls over one kept-alive connection). The browser tests (tests/console) use the
same staging and browser set-up.
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    # the repository root instead of this folder: its scripts must not shadow the packages they measure
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from benchmarks.hostile import served

XSS_NAME = "<img src=x onerror=alert(1)>"
PENDING = "waiting-8xh100"
# view → (address, what shows once it is drawn, the JSON route it reads)
VIEWS = {
    "cluster": ("/", ".node", "/v1/console/cluster"),
    "node": ("/nodes/dgx1-v100-a", "svg.wiring", "/v1/console/nodes/dgx1-v100-a"),
    "pod": ("/pods/ml/train-llama", "#pod-name", "/v1/console/pods/ml/train-llama"),
    "pending": ("/pending", ".pending", "/v1/console/pending"),
}
WHAT_IF = """kind: Deployment
metadata: {name: trainer, namespace: ml}
spec:
  template:
    spec:
      containers:
        - name: main
          resources: {limits: {nvidia.com/gpu: 4}}
"""


class BrowserMissing(RuntimeError):
    """No chromium or chromedriver on this machine."""


def staged_cluster(path: Path) -> Path:
    """The simulated cluster, plus what the console must show: a pending pod, an allocated GPU whose
    SMs idle (GPU 6 of l40s-a, held by a pod named as markup) and the readings that say so."""
    doc = json.loads(resources.files("extender.sources").joinpath("simulated_cluster.json").read_text())
    l40s = next(n for n in doc["nodes"] if n["name"] == "l40s-a")
    l40s["free"] = [0, 1, 4]
    idle = next(r for r in l40s["telemetry"] if r["gpu"] == 6)
    idle.update(sm_util=3, memory_used_mib=9000, pod=f"web/{XSS_NAME}")
    doc["pods"].append({"name": XSS_NAME, "namespace": "web", "node": "l40s-a", "gpus": 1})
    doc["pods"].append(
        {
            "name": PENDING,
            "namespace": "ml",
            "gpus": 8,
            "node_selector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        }
    )
    path.write_text(json.dumps(doc))
    return path


def chromium(width: int = 1280, height: int = 860) -> webdriver.Chrome:
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if binary is None or driver is None:
        raise BrowserMissing("chromium and chromedriver are missing: apt-get install -y chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"):
        options.add_argument(flag)
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))


def browser_log(browser: webdriver.Chrome, kind: str) -> list[dict[str, Any]]:
    """One of chromedriver's logs (performance: DevTools events; browser: the console), since the last read."""
    found: list[dict[str, Any]] = browser.get_log(kind)  # type: ignore[no-untyped-call]
    return found


def network_events(browser: webdriver.Chrome) -> list[dict[str, Any]]:
    """The DevTools network events since the last call (each URL requested, each body's size)."""
    events = []
    for entry in browser_log(browser, "performance"):
        message = json.loads(entry["message"])["message"]
        if str(message.get("method", "")).startswith("Network."):
            events.append(message)
    return events


def hosts_asked(events: list[dict[str, Any]]) -> set[str]:
    """Every host the page sent a request to (data: and blob: URLs ask no host)."""
    urls = [e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"]
    return {urlsplit(u).hostname or "" for u in urls if not u.startswith(("data:", "blob:"))}


def bytes_fetched(events: list[dict[str, Any]]) -> int:
    return int(sum(e["params"].get("encodedDataLength", 0) for e in events if e["method"] == "Network.loadingFinished"))


def wait_for(browser: webdriver.Chrome, css: str, timeout: float = 20) -> None:
    WebDriverWait(browser, timeout).until(lambda b: b.find_elements(By.CSS_SELECTOR, css))


@contextmanager
def console(tmp: Path, *extra: str) -> Iterator[str]:
    """``gpu-advisor serve`` on the staged cluster (``extra``: more options); yields its base address."""
    snapshot = staged_cluster(tmp / "staged-cluster.json")
    with served("--cluster", str(snapshot), *extra, log=tmp / "serve.log") as (port, _, _):
        yield f"http://127.0.0.1:{port}"


def server_times(base: str, path: str, repeat: int) -> tuple[float, float, int]:
    """(median ms, p95 ms, bytes) of ``repeat`` GETs of one route over one kept-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", int(urlsplit(base).port or 80), timeout=30)
    times, size = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        conn.request("GET", path)
        reply = conn.getresponse()
        size = len(reply.read())
        times.append((time.perf_counter() - start) * 1000)
    conn.close()
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], size


def screenshot(browser: webdriver.Chrome, path: Path) -> None:
    """The viewport as a PNG of 256 colours: a page of flat fills loses nothing and weighs a third."""
    from PIL import Image

    browser.save_screenshot(str(path))
    with Image.open(path) as shot:
        small = shot.convert("RGB").quantize(256)
    small.save(path, optimize=True)


def submit_what_if(browser: webdriver.Chrome, manifest: str) -> None:
    area = browser.find_element(By.ID, "manifest")
    area.clear()
    area.send_keys(manifest)
    browser.find_element(By.CSS_SELECTOR, "#what-if button[type=submit]").click()
    wait_for(browser, "#answer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shots", default="docs", help="folder for the PNGs (default docs)")
    parser.add_argument("--repeat", type=int, default=50, help="calls per JSON route (default 50)")
    args = parser.parse_args()
    shots = Path(args.shots)
    shots.mkdir(parents=True, exist_ok=True)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, console(Path(tmp)) as base:
        browser = chromium()
        try:
            print(f"{'view':<9} {'page weight':>12} {'JSON route':<36} {'median':>8} {'p95':>8} {'JSON':>8}")
            for name, (address, ready, route) in VIEWS.items():
                network_events(browser)  # drop what came before
                browser.get(base + address)
                wait_for(browser, ready)
                weight = bytes_fetched(network_events(browser))
                screenshot(browser, shots / f"console-{name}.png")
                median, p95, size = server_times(base, route, args.repeat)
                row = f"{weight / 1024:>9.1f} KiB {route:<36} {median:>6.1f}ms {p95:>6.1f}ms {size / 1024:>5.1f}KiB"
                print(f"{name:<9} {row}")
            browser.get(base + "/what-if")
            wait_for(browser, "#manifest")
            network_events(browser)
            submit_what_if(browser, WHAT_IF)
            weight = bytes_fetched(network_events(browser))
            browser.execute_script("document.querySelector('#answer').scrollIntoView()")  # the ranking and drawings
            screenshot(browser, shots / "console-what-if.png")
            print(f"{'what-if':<9} {weight / 1024:>9.1f} KiB (the dry-run and the drawings' JSON, after the page)")
        finally:
            browser.quit()


if __name__ == "__main__":
    main()
