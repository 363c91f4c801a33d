"""``gpu-advisor admission-policies``: print the routing policy and the safety net (``webhook.admission_policies``)
as the YAML shipped in ``manifests/routing/policies.yaml`` (a test holds the file to this output; the Helm
chart reads the same file and sets the scheduler names from its values)."""

from __future__ import annotations

import argparse
from typing import Any

import yaml

from webhook.admission_policies import policies

__all__ = ["policies_yaml", "register"]

_HEADER = """\
# Every GPU pod reaches the advisor's profile, decided in the API server (it holds while the advisor is down).
# Printed by `gpu-advisor admission-policies`; docs/admission.md says what each part does:
#  - gpu-advisor-routing (MutatingAdmissionPolicy): a Pod that asks a GPU in any convention (nvidia.com/*,
#    amd.com/*, aliyun.com/gpu-mem, Alibaba annotations, DRA claims) and chose no scheduler gets
#    schedulerName gpu-advisor. Opt out with the label gpu-advisor.io/routing: "off" on a namespace or pod.
#  - gpu-advisor-safety-net (ValidatingAdmissionPolicy): a Pod asking a share kube-scheduler cannot count
#    (Alibaba annotations, HAMi gpumem/gpucores, Aliyun gpu-mem) on another scheduler is refused.
# The schedulers are JSON literals in `variables` (valid CEL); change them there, or with the chart's values.
"""


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)  # list items indented under their key, as the other manifests


def _text(dumper: yaml.SafeDumper, value: str) -> Any:
    # CEL reads best as a literal block: one clause a line, its string literals' quotes not doubled.
    block = "\n" in value or "'" in value
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if block else None)


_Dumper.add_representer(str, _text)


def policies_yaml() -> str:
    docs = [yaml.dump(d, Dumper=_Dumper, sort_keys=False, width=120) for d in policies()]
    return _HEADER + "---\n".join(docs)


def _print(args: argparse.Namespace) -> int:
    print(policies_yaml(), end="")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "admission-policies",
        help="print the admission policies that route GPU pods to the advisor and refuse shares on other schedulers",
    )
    command.set_defaults(handler=_print)
