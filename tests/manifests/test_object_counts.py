"""docs/install/cluster.md's count of what ``kubectl kustomize manifests/`` renders, by kind, is the
rendered output's: the block cannot run in the docs test (it names kubectl), so it is held here."""

from __future__ import annotations

import re
from collections import Counter

from tests.manifests.rendering import REPO, Doc

PAGE = REPO / "docs/install/cluster.md"
COMMAND = "$ kubectl kustomize manifests/ | grep '^kind:' | sort | uniq -c"


def _block_on_the_page() -> str:
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(re.escape(COMMAND) + r"\n(.*?)```", text, re.DOTALL)
    assert found, f"{PAGE.name} no longer shows `{COMMAND[2:]}`"
    return found.group(1)


def _uniq_c(kinds: Counter[str]) -> str:
    """What ``grep '^kind:' | sort | uniq -c`` prints: the count right-aligned in 7 columns, sorted by line."""
    return "".join(f"{count:7d} kind: {kind}\n" for kind, count in sorted(kinds.items()))


def test_the_pages_object_counts_are_what_kustomize_renders(rendered: list[Doc]) -> None:
    assert _block_on_the_page() == _uniq_c(Counter(doc["kind"] for doc in rendered))
