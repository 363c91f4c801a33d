"""Every option says what it does and what it is when left out; --version names the installed package."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from importlib.metadata import version

import pytest

from gpu_advisor.cli import build_parser, main


def parsers(
    parser: argparse.ArgumentParser, path: str = "gpu-advisor"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, f"{path} {name}")


def options() -> list[tuple[str, argparse.Action]]:
    found = []
    for path, parser in parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._VersionAction | argparse._SubParsersAction):
                continue
            found.append((f"{path} {'/'.join(action.option_strings) or action.dest}", action))
    return found


def spelled(default: object) -> set[str]:
    """How a help text may write a default: 10.0 as "10" or "10.0", a list as "42-51"."""
    if isinstance(default, float):
        return {f"{default:g}", str(default)}
    return {str(default)}


@pytest.mark.parametrize(("option", "action"), options(), ids=[name for name, _ in options()])
def test_every_option_has_help_that_names_its_default(option: str, action: argparse.Action) -> None:
    assert action.help and action.help.strip(), f"{option} has no help text"
    default = action.default
    if default is None or default is False or isinstance(action, argparse._StoreTrueAction):
        return
    assert "default" in action.help, f"{option}: help does not say its default ({default!r})"
    assert any(text in action.help for text in spelled(default)), f"{option}: help does not say {default!r}"


def test_version_prints_the_installed_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"gpu-advisor {version('gpu-advisor')}\n"
