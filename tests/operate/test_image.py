"""The Dockerfile builds the image reproducibly: stages, a pinned base, pinned packages, non-root, and
no build tools in the final stage. (No container builder runs in the tests; the Dockerfile is read.)"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).parents[2]
INSTRUCTION = re.compile(r"^([A-Z]+)\s+(.*)$")


def instructions() -> list[tuple[str, str]]:
    text = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    return [
        (m.group(1), m.group(2))
        for line in text.splitlines()
        if (m := INSTRUCTION.match(line.strip())) and not line.startswith("#")
    ]


def stages() -> list[list[tuple[str, str]]]:
    out: list[list[tuple[str, str]]] = []
    for op, arg in instructions():
        if op == "FROM":
            out.append([])
        if out:
            out[-1].append((op, arg))
    return out


def base() -> str:
    (arg,) = [a for op, a in instructions() if op == "ARG" and a.startswith("PYTHON=")]
    return arg.removeprefix("PYTHON=")


def test_the_build_has_a_build_stage_and_a_final_stage_on_one_pinned_base() -> None:
    build, final = stages()
    assert build[0] == ("FROM", "${PYTHON} AS build") and final[0] == ("FROM", "${PYTHON}")
    # a patch release of the slim image on a named Debian release, never a moving tag
    assert re.fullmatch(r"python:3\.11\.\d+-slim-(bookworm|trixie)(@sha256:[0-9a-f]{64})?", base()), base()


def test_the_final_stage_runs_as_non_root_and_holds_no_build_tools() -> None:
    final = stages()[-1]
    users = [arg for op, arg in final if op == "USER"]
    assert users == ["65532:65532"]
    runs = " ".join(arg for op, arg in final if op == "RUN")
    for tool in ("pip install", "apt-get install", "gcc", "build-essential"):
        assert tool not in runs
    assert "site-packages/pip*" in runs and "/usr/local/bin/pip*" in runs, "the base image's pip is removed"
    assert ("COPY", "--from=build /opt/gpu-advisor /opt/gpu-advisor") in final
    build_runs = " ".join(arg for op, arg in stages()[0] if op == "RUN")
    assert "--constraint requirements.lock" in build_runs and "pip uninstall --yes pip" in build_runs


def test_every_runtime_dependency_is_pinned_in_the_lock() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    lines = [line for line in (REPO / "requirements.lock").read_text().splitlines() if not line.startswith("#")]
    pinned = {re.split(r"==", line)[0].lower().replace("_", "-") for line in lines}
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][\w.+-]*", line) for line in lines)
    for requirement in declared:
        name = re.split(r"[\[<>=!~ ]", requirement)[0].lower().replace("_", "-")
        assert name in pinned, f"{name} is not in requirements.lock"


def test_the_license_is_the_apache_2_text_pyproject_names() -> None:
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
