"""Every console block of the README and the docs site runs, and prints what the docs say it prints.

Sybil parses the Markdown (```console blocks, `<!-- skip: next -->` markers); tests/docs/console_blocks.py
runs the commands. A change that alters an answer fails here until the docs say the new answer.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from sybil import Sybil
from sybil.example import SybilFailure
from sybil.parsers.markdown import CodeBlockParser, SkipParser

from tests.docs.console_blocks import evaluate_console

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
LINKED_INTO_SCRATCH = ("examples", "tests", "manifests")

SYBIL = Sybil(parsers=[CodeBlockParser("console", evaluate_console), SkipParser()])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def served_port() -> Iterator[int]:
    """`gpu-advisor serve` on the simulated cluster, on a free port of 127.0.0.1 (the docs say 8080)."""
    port = _free_port()
    cli = Path(sys.executable).parent / "gpu-advisor"
    server = subprocess.Popen(
        [str(cli), "serve", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("gpu-advisor serve did not become ready") from None
                time.sleep(0.2)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=10)


def _id(page: Path) -> str:
    return str(page.relative_to(REPO))


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_console_blocks_print_what_the_docs_say(
    page: Path, served_port: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    scratch = tmp_path_factory.mktemp(page.stem)
    for name in LINKED_INTO_SCRATCH:
        (scratch / name).symlink_to(REPO / name)
    document = SYBIL.parse(page)
    document.namespace.update(cwd=scratch, port=served_port)
    # In page order, in one scratch folder: a page's blocks may build on each other (certs create, then check).
    failures = []
    for example in document.examples():
        try:
            example.evaluate()
        except SybilFailure as failure:
            failures.append(str(failure))
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


PATHS = re.compile(r"(?<![\w/.-])((?:examples|tests/data|manifests|benchmarks|scripts)/[\w./-]*\w)")


def test_every_file_the_docs_name_is_in_the_repository() -> None:
    missing = [
        f"{page.relative_to(REPO)}: {path}"
        for page in PAGES
        for path in PATHS.findall(page.read_text(encoding="utf-8"))
        if not (REPO / path).exists()
    ]
    assert missing == []


def test_the_readme_stays_an_entry_point() -> None:
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


def test_a_changed_answer_fails_its_block(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```console\n$ gpu-advisor topology show --example dgx1-v100 | tail -1\nFingerprint: 0\n```\n")
    (example,) = list(SYBIL.parse(page))
    example.namespace.update(cwd=tmp_path)
    with pytest.raises(Exception, match="where the docs say"):
        example.evaluate()


def test_a_cluster_command_must_be_marked_skipped(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```console\n$ kubectl get pods\nNo resources found\n```\n")
    (example,) = list(SYBIL.parse(page))
    example.namespace.update(cwd=tmp_path)
    with pytest.raises(Exception, match="skip: next"):
        example.evaluate()


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_every_relative_link_of_the_readme_resolves() -> None:
    # The site's own links are checked by `mkdocs build --strict`; the README lives outside it.
    text = (REPO / "README.md").read_text(encoding="utf-8")
    broken = [link for link in LINK.findall(text) if "://" not in link and not (REPO / link).exists()]
    assert broken == []
