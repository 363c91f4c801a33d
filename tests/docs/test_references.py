"""Every pointer from one place of the project to another resolves: relative links (and their #anchors)
in the README and the docs, and the references comments, chart files and messages make to a document
or a section of one (``docs/install/cluster.md, "The image"``, ``README: "Quick start in a cluster"``).

A bare "see README" names no section and cannot be checked, so it is refused: say which document and
which heading."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MARKDOWN = sorted([REPO / "README.md", REPO / "ARCHITECTURE.md", *(REPO / "docs").rglob("*.md")])
# Files whose comments, descriptions and messages point into the docs.
POINTING = sorted(
    [
        REPO / "Dockerfile",
        REPO / ".ci" / "run",
        *(p for p in (REPO / "manifests").rglob("*") if p.is_file() and "dashboards" not in p.parts),
        *(p for d in ("extender", "gpu_advisor", "webhook", "benchmarks", "scripts") for p in (REPO / d).rglob("*.py")),
    ]
)

LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
# README, "Section" / README: "Section" / the README's "Section" / (README: Section)
README_SECTION = re.compile(r"README(?:'s)?(?:[,:]\s*|\s+)\"([^\"]+)\"|\(README: ([^)\"]+)\)")
# docs/page.md, optionally followed by , "Section" (``docs/…`` in a docstring quotes another project's path)
DOC_SECTION = re.compile(r"(?<![\w/`])(docs/[\w./-]+\.md)(?:,\s*\"([^\"]+)\")?")
# Files the site build adds beside the pages (scripts/mkdocs_hooks.py): the page's name → the source.
GENERATED = {
    REPO / "docs" / "wire.png": REPO / "benchmarks" / "results" / "wire.png",
    REPO / "docs" / "wire-mixed.png": REPO / "benchmarks" / "results" / "wire-mixed.png",
}
# Pointers that name no section: nothing to check them against.
BARE = re.compile(r"\(README\)|\bsee (?:the )?README\b(?!(?:'s)?[,:]?\s*\")")


def headings(page: Path) -> list[str]:
    found, fenced = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := HEADING.match(line)):
            found.append(m.group(1))
    return found


def slug(heading: str) -> str:
    """The anchor MkDocs (Python-Markdown's toc) gives a heading."""
    text = unicodedata.normalize("NFKD", re.sub(r"[`*_]", "", heading)).encode("ascii", "ignore").decode()
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def _has_heading(page: Path, section: str) -> bool:
    return section.strip().lower() in {h.lower() for h in headings(page)}


def _named(file: Path) -> str:
    return str(file.relative_to(REPO)) if file.is_relative_to(REPO) else str(file)


def link_problems(page: Path) -> list[str]:
    problems = []
    text = page.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not GENERATED.get(file, file).exists():
            problems.append(f"{_named(page)}: {target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in {slug(h) for h in headings(file)}:
            problems.append(f"{_named(page)}: {target}: no heading with that anchor")
    return problems


def reference_problems(file: Path) -> list[str]:
    problems = []
    where = _named(file)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return []
    for n, line in enumerate(text.splitlines(), 1):
        for quoted, bare in README_SECTION.findall(line):
            section = quoted or bare
            if not _has_heading(REPO / "README.md", section):
                problems.append(f"{where}:{n}: README has no section {section!r}")
        for doc, section in DOC_SECTION.findall(line):
            page = REPO / doc
            if not page.exists():
                problems.append(f"{where}:{n}: {doc}: no such page")
            elif section and not _has_heading(page, section):
                problems.append(f"{where}:{n}: {doc} has no section {section!r}")
        if BARE.search(line):
            problems.append(f"{where}:{n}: a pointer to the README that names no section: {line.strip()[:80]}")
    return problems


@pytest.mark.parametrize("page", MARKDOWN, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_and_anchor_of_a_page_resolves(page: Path) -> None:
    assert link_problems(page) == []


def test_every_reference_from_comments_chart_files_and_messages_resolves() -> None:
    assert [p for f in POINTING for p in reference_problems(f)] == []


def test_every_reference_a_page_makes_to_a_section_of_another_resolves() -> None:
    assert [
        p for page in MARKDOWN for p in reference_problems(page) if "README has no" in p or "has no section" in p
    ] == []


def test_a_stale_pointer_is_caught(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text('# (README: "The image")\n# see README for more\n# docs/install/cluster.md, "Nowhere"\n')
    assert [p.split(": ", 1)[1] for p in reference_problems(values)] == [
        "README has no section 'The image'",
        "a pointer to the README that names no section: # see README for more",
        "docs/install/cluster.md has no section 'Nowhere'",
    ]
    page = tmp_path / "page.md"
    page.write_text("[gone](missing.md) [anchor](#nowhere) [fine](#here)\n# Here\n")
    assert [p.split(": ", 1)[1] for p in link_problems(page)] == [
        "missing.md: no such file",
        "#nowhere: no heading with that anchor",
    ]


def test_the_slug_is_mkdocs_own() -> None:
    assert slug("Keep your own scheduler") == "keep-your-own-scheduler"
    assert slug("Upgrade, uninstall, failure modes") == "upgrade-uninstall-failure-modes"
    assert slug("`serve` — the extender's port") == "serve-the-extenders-port"
