"""A replica told to stop (SIGTERM, as a rolling upgrade or a scale-down sends it) leaves the Service before it
stops: for ``--drain-seconds`` it says 503 on /readyz, answers every extender call and closes the connection
after it (so kube-scheduler's next call opens a new one, to a replica that stays), then exits."""

from __future__ import annotations

import http.client
import json
import signal
import time

from benchmarks.hostile import served


def test_sigterm_drains_then_stops() -> None:
    with served("--drain-seconds", "2") as (port, proc, _log):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/readyz")
        assert conn.getresponse().status == 200
        conn.close()
        proc.send_signal(signal.SIGTERM)
        asked = time.monotonic()
        time.sleep(0.3)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/readyz")
        ready = conn.getresponse()
        assert ready.status == 503 and json.loads(ready.read())["draining"] is True
        body = json.dumps({"Pod": {"metadata": {"name": "p"}}, "NodeNames": ["dgx1-v100-a"]})
        conn.request("POST", "/scheduler/filter", body, {"Content-Type": "application/json"})
        answer = conn.getresponse()
        assert answer.status == 200 and answer.getheader("connection") == "close"
        assert json.loads(answer.read())["NodeNames"] == ["dgx1-v100-a"]
        conn.close()
        assert proc.wait(15) is not None
        assert time.monotonic() - asked >= 1.9  # it kept answering for the drain


def test_without_a_drain_sigterm_stops_at_once() -> None:
    with served() as (_port, proc, _log):  # the simulated cluster: no Service to leave
        proc.send_signal(signal.SIGTERM)
        asked = time.monotonic()
        proc.wait(15)
        assert time.monotonic() - asked < 1.9
