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


def scheduler_config(url: str = DEFAULT_URL, weight: int = 5) -> str:
    lines = [f"      - {{name: {name}, ignoredByScheduler: false}}" for name in managed_resources()]
    return _HEAD.format(url=url, weight=weight) + "\n".join(lines) + "\n"


def _print(args: argparse.Namespace) -> int:
    print(scheduler_config(args.url, args.weight), end="")
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
    config.set_defaults(handler=_print)
