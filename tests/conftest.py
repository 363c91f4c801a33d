from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings

from extender.http.advisor import Advisor
from extender.scoring import ScoringPolicy
from extender.sources.snapshot import simulated_cluster
from gpu_advisor.app import create_app

# Property tests judge behaviour, not speed: on a loaded 2-core CI machine (and under coverage
# tracing) generating examples can be slow, which is no defect of the code under test.
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
# The shared, read-only captures beside the checkout; the project carries copies of what it needs in
# tests/data, and also reads any newer files placed in the shared folder.
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"


def fixture_files(kind: str) -> list[Path]:
    """Files of one fixture kind (topo, kube, telemetry): the project's copies plus any shared ones."""
    found = {p.name: p for p in sorted((DATA / kind).glob("*")) if p.is_file()}
    shared = SHARED_FIXTURES / kind
    if shared.is_dir():
        found.update({p.name: p for p in sorted(shared.glob("*")) if p.is_file()})
    return [found[name] for name in sorted(found)]


NOW = 1_796_000_000.0


@pytest.fixture
def advisor() -> Advisor:
    """The served advisor on the simulated cluster, at a fixed time."""
    snap = simulated_cluster(now=NOW)
    return Advisor(
        state=snap.cluster("simulated"), telemetry=snap.telemetry(60), policy=ScoringPolicy(), clock=lambda: NOW
    )


@pytest.fixture
def api(advisor: Advisor) -> Iterator[TestClient]:
    with TestClient(create_app(advisor), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def fitting_api(advisor: Advisor) -> Iterator[TestClient]:
    """The advisor as ``serve --filter-passes fitting`` serves it: its filter passes every node that fits and
    says why each other one does not (what it judges of every node; by default it passes its best node only,
    and gives the reasons when no node fits)."""
    advisor.filter_passes = "fitting"
    with TestClient(create_app(advisor), raise_server_exceptions=False) as client:
        yield client
