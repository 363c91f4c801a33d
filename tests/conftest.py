from __future__ import annotations

from pathlib import Path

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
