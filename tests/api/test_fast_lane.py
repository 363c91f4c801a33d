"""The extender's ASGI fast lane answers exactly what the documented FastAPI routes answer."""

from __future__ import annotations

import json

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from extender.http.advisor import Advisor
from extender.http.scheduler import build_router
from gpu_advisor.app import create_app

POD = {
    "metadata": {"name": "p", "namespace": "ml"},
    "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
}
NAMES = ["dgx1-v100-a", "dgx1-v100-b", "hgx-h100-a", "l40s-a", "a100-mig-a", "t4-ts-a", "not-a-node"]
BODIES = {
    "kube-scheduler's own body": json.dumps({"Pod": POD, "Nodes": None, "NodeNames": NAMES}, separators=(",", ":")),
    "the same with spaces": json.dumps({"Pod": POD, "Nodes": None, "NodeNames": NAMES}),
    "a share that names its field": json.dumps(
        {"Pod": {**POD, "metadata": {"annotations": {"alibabacloud.com/gpu-milli": "1500"}}}, "NodeNames": NAMES}
    ),
    "not JSON": "{nope",
    "no candidates": json.dumps({"Pod": POD}),
    "names that are not strings": json.dumps({"Pod": POD, "NodeNames": [1, 2]}),
    "empty": "",
}


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
@pytest.mark.parametrize("case", list(BODIES))
def test_the_lane_and_the_routes_give_the_same_status_and_bytes(advisor: Advisor, verb: str, case: str) -> None:
    routes_only = FastAPI()
    routes_only.include_router(build_router(advisor))
    with TestClient(create_app(advisor)) as lane, TestClient(routes_only) as routes:
        for _ in range(2):  # cold, then warm (the very bytes of last time)
            a = lane.post(f"/scheduler/{verb}", content=BODIES[case], headers={"Content-Type": "application/json"})
            b = routes.post(f"/scheduler/{verb}", content=BODIES[case], headers={"Content-Type": "application/json"})
            assert (a.status_code, a.content) == (b.status_code, b.content)
            assert a.headers["content-type"] == b.headers["content-type"] == "application/json"


def test_other_methods_and_paths_still_reach_the_framework(advisor: Advisor) -> None:
    with TestClient(create_app(advisor)) as client:
        assert client.get("/scheduler/filter").status_code == 405
        assert client.get("/healthz").json() == {"status": "ok"}
