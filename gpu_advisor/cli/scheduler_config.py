"""``gpu-advisor scheduler-config``: the kube-scheduler configuration that calls the advisor.

kube-scheduler calls an extender only for pods that ask for one of its ``managedResources``: a MIG
profile missing from that list is never seen by the advisor. So the list is generated from the one MIG
profile table (``extender.model.mig_profiles``), and ``manifests/scheduler/config.yaml`` is this
command's output (a test holds them equal): ``gpu-advisor scheduler-config > manifests/scheduler/config.yaml``.
"""

from __future__ import annotations

import argparse

from extender.model.amd_partitions import PARTITION_RESOURCES
from extender.model.gpu_vendor import AMD
from extender.model.mig_profiles import all_profiles
from extender.model.pods import GPU_RESOURCE, MIG_PREFIX

__all__ = ["managed_resources", "register", "scheduler_config"]

_HEAD = """\
# A second scheduler whose only profile, `gpu-advisor`, asks the advisor about every pod that requests
# nvidia.com/gpu or a MIG slice, amd.com/gpu or an AMD partition. The same `extenders:` entry can be added
# to an existing scheduler.
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceNamespace: gpu-advisor
  resourceName: gpu-advisor-scheduler
profiles:
  - schedulerName: gpu-advisor
extenders:
  - urlPrefix: "{url}"
    filterVerb: filter
    prioritizeVerb: prioritize
    weight: {weight}  # extender scores are 0-10; kube-scheduler multiplies by weight × 10
    enableHTTPS: false
    nodeCacheCapable: true  # names in, names out: the advisor keeps its own model of every node
    ignorable: true  # if the advisor is down, schedule as if it did not exist
    httpTimeout: 2s
    managedResources:  # every MIG profile NVIDIA documents: `gpu-advisor scheduler-config`
"""
DEFAULT_URL = "http://gpu-advisor.gpu-advisor.svc:8080/scheduler"


def managed_resources() -> tuple[str, ...]:
    """``nvidia.com/gpu`` and every MIG profile of the table, smallest first; then ``amd.com/gpu`` and every
    AMD partition mode (``amd.com/cpx_nps4``)."""
    return (GPU_RESOURCE, *(MIG_PREFIX + p for p in all_profiles()), AMD.resource, *PARTITION_RESOURCES)


# kube-scheduler skips an extender with managedResources for a pod that asks for none of them, and a
# pod that asks for GPUs only through a DRA ResourceClaim asks for none: it is never seen (captured
# from kube-scheduler v1.36). Without the list the advisor is asked about every pod, and passes pods
# that want no GPU through unjudged.
_DRA_TAIL = """\
    # No managedResources: pods that ask for GPUs through DRA ResourceClaims carry no nvidia.com/gpu
    # count, and kube-scheduler would not call the advisor for them. Pods wanting no GPU pass unjudged.
"""


def scheduler_config(url: str = DEFAULT_URL, weight: int = 5, dra: bool = False) -> str:
    head = _HEAD.format(url=url, weight=weight)
    if dra:
        return head.removesuffix(_HEAD.splitlines(keepends=True)[-1]) + _DRA_TAIL
    lines = [f"      - {{name: {name}, ignoredByScheduler: false}}" for name in managed_resources()]
    return head + "\n".join(lines) + "\n"


def _print(args: argparse.Namespace) -> int:
    print(scheduler_config(args.url, args.weight, args.dra), end="")
    return 0


def _weight(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{value} is not between 1 and 100")
    return value


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    config = commands.add_parser(
        "scheduler-config", help="print the kube-scheduler configuration that calls the advisor (all MIG profiles)"
    )
    url_help = f"the advisor's /scheduler URL prefix (default {DEFAULT_URL})"
    config.add_argument("--url", default=DEFAULT_URL, help=url_help)
    config.add_argument("--weight", type=_weight, default=5, help="the extender's weight, 1-100 (default 5)")
    dra_help = "no managedResources, so pods asking for GPUs only through DRA ResourceClaims are seen too"
    config.add_argument("--dra", action="store_true", help=dra_help)
    config.set_defaults(handler=_print)
