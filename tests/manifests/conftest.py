from __future__ import annotations

import pytest

from tests.manifests.rendering import Doc, render


@pytest.fixture(scope="session")
def rendered() -> list[Doc]:
    return render()
