"""The HTTP-level fake API server the bind verb's tests start from."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from extender.advice.replay.advisor_policy import replay_node_object
from tests.fakes.apiserver import FakeApiServer


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    """Two nodes of one T4 each (1000 milli apiece), 64 cores, 256 GiB."""
    with FakeApiServer() as server:
        for name in ("t4-a", "t4-b"):
            server.put("nodes", replay_node_object(name, "T4", 64_000, 262_144, 1))
        yield server
