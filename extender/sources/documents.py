"""Files people hand the advisor (snapshots, policies): JSON read as JSON, YAML as YAML.

Snapshots of large clusters are tens of megabytes, and PyYAML's pure-Python parser reads JSON about a
hundred times slower than ``json`` does: so a document that is JSON goes to ``json``, and YAML goes to
libyaml's C loader where PyYAML was built with it.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

__all__ = ["load_document"]

_YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_document(text: str) -> Any:
    """The document in ``text``: JSON when it parses as JSON, else YAML (raises ``yaml.YAMLError``)."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass  # YAML's flow style ({nodes: [...]}) starts with a brace too
    return yaml.load(text, Loader=_YAML_LOADER)  # a safe loader, C or Python
