"""The ``gpu-advisor`` command line: one module per command group, each registering its own subcommands.

Exit codes (``exits``): 0 done; 2 bad input or usage (one line on stderr, never a traceback); 3 a valid
question with no answer (e.g. no GPU set of that size is free).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from extender.errors import GpuAdvisorError
from gpu_advisor.cli import (
    admission_policies,
    agent,
    certs,
    cluster,
    defrag,
    replay,
    rightsize,
    scheduler_config,
    serve,
    topology,
    usage,
)
from gpu_advisor.cli.exits import report

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-advisor", description="Topology-aware GPU placement advice.")
    parser.add_argument("--version", action="version", version=f"gpu-advisor {_version()}")
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="least severe log lines written to stderr (default warning)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (
        topology,
        serve,
        cluster,
        defrag,
        rightsize,
        usage,
        replay,
        agent,
        certs,
        scheduler_config,
        admission_policies,
    ):  # the order `gpu-advisor --help` lists them
        group.register(commands)
    return parser


def _version() -> str:
    try:
        return version("gpu-advisor")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s %(message)s")
    # The kubernetes client's urllib3 retries each request itself and warns per attempt; the watch and
    # the agent retry with backoff and log each change of state, so those per-attempt lines are noise.
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    try:
        code: int = args.handler(args)
    except GpuAdvisorError as exc:
        return report(exc)
    except BrokenPipeError:
        return 0
    return code
