"""The console's browser tests share one real Chromium per module (failed, not skipped, under CI=true)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from selenium.webdriver import Chrome

from benchmarks.console import BrowserMissing, chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Chrome]:
    try:
        driver = chromium()
    except BrowserMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    try:
        yield driver
    finally:
        driver.quit()
