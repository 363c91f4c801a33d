"""``gpu-advisor scheduler-config``: the kube-scheduler configuration under which it binds where the advisor would.

Three rules of kube-scheduler (v1.36) decide whether the advisor's pick is the pod's node, and the printed
profile sets each of them:

1. **Which pods reach the extender.** An extender with ``managedResources`` is asked only about pods whose
   containers or init containers request or limit one of them (``pkg/scheduler/extender.go``,
   ``IsInterested``); annotations never count. Pods sharing GPUs in the Alibaba convention (annotations),
   HAMi's and Aliyun's memory resources, and DRA claims would never be seen (and over-committed). So by
   default there is no ``managedResources``: every pod of the profile is asked about (no GPU: passed through).
   ``--managed-resources`` prints the list (whole GPUs, MIG, AMD) for a scheduler shared with other work.
2. **How the extender's score is weighed.** Each score plugin gives 0-100 times its weight; the extender's 0-10
   is multiplied by its weight and by 10 (``MaxNodeScore / MaxExtenderPriority``). The weight printed is the
   smallest at which one wire point outweighs all that the profile's enabled score plugins can add together
   (``outweighing``). The advisor's wire scores give exactly one node the top score (``ranking.tie_order``), so
   kube-scheduler binds there; so the filter passes that node alone (``extender.http.best_node``).
3. **Which nodes are scored.** ``percentageOfNodesToScore`` below 100 makes kube-scheduler stop after a share
   of feasible nodes (5 % in large clusters); 100 asks the advisor about all of them.

4. **What happens while the advisor is away.** kube-scheduler counts no annotation share, no HAMi or Aliyun
   per-GPU memory: while the advisor is down, restarting or not yet synced, only it could stop two pods
   from being bound onto one GPU. So the printed entry is not ``ignorable``: kube-scheduler's filter call
   fails, the pod stays Pending (its FailedScheduling event names the extender's error) and is retried
   with backoff (``podMaxBackoffSeconds`` 5: placed within seconds once the advisor answers again).
   And the advisor binds (``bindVerb``): each binding is re-checked against the node as every replica
   has promised it, under the resourceVersion of the node's claims Lease (``extender.sources.kube_binder``),
   so two replicas answering in turn never hand out one GPU twice. With ``--managed-resources`` only whole GPUs, MIG and
   AMD resources reach the advisor, which kube-scheduler counts itself: that entry stays ``ignorable``
   and binds as kube-scheduler does, so those pods keep scheduling (by count alone) without it.

Placing packs rather than spreads when kube-scheduler decides alone (a managed-resources profile with the
advisor away): the spreading plugins are off (NodeResourcesBalancedAllocation; PodTopologySpread's system
default constraints, while constraints a pod declares still hold) and NodeResourcesFit scores MostAllocated.

The shipped ``manifests/scheduler/config.yaml`` and the chart's ``files/scheduler-config*.yaml`` are its output
(a test holds them equal).
"""

from __future__ import annotations

import argparse
import sys

from extender.model.amd_partitions import PARTITION_RESOURCES
from extender.model.gpu_vendor import AMD
from extender.model.mig_profiles import all_profiles
from extender.model.pods import GPU_RESOURCE, MIG_PREFIX

__all__ = [
    "DEFAULT_SCORE_PLUGINS",
    "OFF_IN_PROFILE",
    "managed_resources",
    "outweighing",
    "register",
    "scheduler_config",
]

DEFAULT_URL = "https://gpu-advisor.gpu-advisor.svc:8444/scheduler"
# kube-scheduler's client pair and the advisor's CA, as ``certs create`` names them and the manifests mount them.
DEFAULT_CLIENT_DIR = "/etc/gpu-advisor-client"
DEFAULT_SERVER_NAME = "gpu-advisor.gpu-advisor.svc"  # the serving certificate names the Service
MAX_NODE_SCORE = 100  # framework.MaxNodeScore
MAX_EXTENDER_PRIORITY = 10  # extenderv1.MaxExtenderPriority

# kube-scheduler v1.36's default plugins that score, with their weights
# (``pkg/scheduler/apis/config/v1/default_plugins.go``; a plugin given no weight scores with weight 1).
# VolumeBinding scores only with the StorageCapacityScoring gate and DynamicResources only for prioritized
# device lists; both are counted, so the weight printed holds either way.
DEFAULT_SCORE_PLUGINS: dict[str, int] = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "VolumeBinding": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "DynamicResources": 1,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}
# Off in the printed profile: it favours the node whose CPU and memory are most evenly used, which spreads.
OFF_IN_PROFILE = ("NodeResourcesBalancedAllocation",)


def outweighing(plugins: dict[str, int]) -> int:
    """The smallest extender weight at which one wire point (weight × 10) is worth more than the most that
    these score plugins together can add (each weight × 100)."""
    most = sum(plugins.values()) * MAX_NODE_SCORE
    return most // (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY) + 1


def managed_resources() -> tuple[str, ...]:
    """``nvidia.com/gpu`` and every MIG profile of the table, smallest first; then ``amd.com/gpu`` and every
    AMD partition mode (``amd.com/cpx_nps4``)."""
    return (GPU_RESOURCE, *(MIG_PREFIX + p for p in all_profiles()), AMD.resource, *PARTITION_RESOURCES)


ENABLED = {name: weight for name, weight in DEFAULT_SCORE_PLUGINS.items() if name not in OFF_IN_PROFILE}
DEFAULT_WEIGHT = outweighing(ENABLED)

_TEMPLATE = """\
# A second scheduler whose only profile, `gpu-advisor`, binds each pod where the advisor ranks best.
# Printed by `gpu-advisor scheduler-config`; what each setting is for:
#  - percentageOfNodesToScore 100: every feasible node is scored (below 100, large clusters score 5 %).
#  - extender weight {weight}: one point of the advisor's 0-10 counts {point} (weight x 10), {weight_note}
#  - {managed_note}
#  - {outage_note}
#  - when kube-scheduler places alone, the profile packs: NodeResourcesFit scores MostAllocated,
#    NodeResourcesBalancedAllocation is off, and PodTopologySpread adds no system default spreading
#    (constraints a pod declares still hold).
# To add the advisor to an existing profile instead, copy its percentageOfNodesToScore, plugins and
# pluginConfig there, the extenders entry (with the client certificate files its tlsConfig names), and the
# top-level podMaxBackoffSeconds and clientConnection: then every pod of that profile is asked about.
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podMaxBackoffSeconds: 5  # a pod that waited for the advisor is retried within 5 s of its return
clientConnection:  # kube-scheduler's own API client: at the default qps 50 it binds ~52 pods/s at most
  qps: 300
  burst: 600
leaderElection:
  leaderElect: true
  resourceNamespace: gpu-advisor
  resourceName: gpu-advisor-scheduler
profiles:
  - schedulerName: gpu-advisor
    percentageOfNodesToScore: 100
    plugins:
      score:
        disabled:
{disabled}
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
              - {{name: cpu, weight: 1}}
              - {{name: memory, weight: 1}}
      - name: PodTopologySpread
        args:
          defaultConstraints: []
          defaultingType: List
extenders:
  - urlPrefix: "{url}"
    filterVerb: filter
    prioritizeVerb: prioritize
{bind_line}    weight: {weight}
{tls_lines}    nodeCacheCapable: true  # names in, names out: the advisor keeps its own model of every node
{ignorable_line}
    httpTimeout: 2s
"""
_BIND = "    bindVerb: bind  # the advisor binds, after re-checking the room under its per-node lock (a Lease)\n"
_WAITS = "    ignorable: false  # if the advisor is away, its pods wait: only it counts GPU shares"
_PROCEEDS = "    ignorable: true  # if the advisor is away, schedule by count alone: kube-scheduler counts these"
_OUTAGE_WAITS = (
    "while the advisor is away (down, restarting, not synced) its pods stay Pending and are retried:\n"
    "#    kube-scheduler counts no GPU share, so binding them blind would over-commit GPUs. The advisor\n"
    "#    binds (bindVerb), re-checking the room as every replica has promised it."
)
_OUTAGE_PROCEEDS = (
    "while the advisor is away these pods keep scheduling (ignorable): kube-scheduler counts whole\n"
    "#    GPUs, MIG and AMD resources itself, and places them by count alone until the advisor is back."
)
_EVERY_POD = (
    "no managedResources: every pod of the profile reaches the advisor, whatever convention it asks GPUs\n"
    "#    in (whole GPUs, MIG, AMD, DRA claims, Alibaba annotations, HAMi, Aliyun); pods wanting no GPU pass."
)
_LISTED = (
    "managedResources: only pods requesting one of these reach the advisor; GPU shares by annotation,\n"
    "#    HAMi and Aliyun memory resources and DRA claims do not (admission warns about such pods)."
)


_TLS = """\
    # Only kube-scheduler may call the verbs (they bind pods): HTTPS, the advisor checked against its CA,
    # and kube-scheduler's client certificate, which the advisor requires (re-read on each new connection).
    enableHTTPS: true
    tlsConfig:
      serverName: {server_name}
      caFile: {client_dir}/ca.crt
      certFile: {client_dir}/scheduler.crt
      keyFile: {client_dir}/scheduler.key
"""
_PLAIN = "    enableHTTPS: false  # plain HTTP: the advisor must run with --insecure-scheduler-verbs\n"


def weight_note(weight: int) -> str:
    """What the printed comment says of ``weight`` after "counts N (weight x 10),": true for the weight
    given, so a lowered weight is never described as outweighing the score plugins."""
    point, most = weight * MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY, sum(ENABLED.values()) * MAX_NODE_SCORE
    if point > most:
        return (
            f"more than\n#    the {most} that the enabled score plugins can add together, and the advisor gives "
            "exactly one node\n#    its top score, so kube-scheduler binds there: its filter passes that node alone."
        )
    compared = "no more than" if point == most else "less than"
    return (
        f"{compared}\n#    the {most} that the enabled score plugins can add together: they can match or "
        "outweigh the advisor,\n#    so kube-scheduler may bind elsewhere than its top node "
        f"(weight {DEFAULT_WEIGHT} or more outweighs them).\n#    Serve it with `gpu-advisor serve --filter-passes "
        "fitting`: its filter then passes every\n#    node that fits for the plugins to weigh (by default: its best)."
    )


def scheduler_config(
    url: str = DEFAULT_URL,
    weight: int = DEFAULT_WEIGHT,
    managed: bool = False,
    client_dir: str = DEFAULT_CLIENT_DIR,
    server_name: str = DEFAULT_SERVER_NAME,
) -> str:
    disabled = "\n".join(f"          - name: {name}" for name in OFF_IN_PROFILE)
    plain = url.startswith("http://")
    text = _TEMPLATE.format(
        url=url,
        weight=weight,
        point=weight * MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY,
        weight_note=weight_note(weight),
        disabled=disabled,
        managed_note=_LISTED if managed else _EVERY_POD,
        outage_note=_OUTAGE_PROCEEDS if managed else _OUTAGE_WAITS,
        bind_line="" if managed else _BIND,
        ignorable_line=_PROCEEDS if managed else _WAITS,
        tls_lines=_PLAIN if plain else _TLS.format(server_name=server_name, client_dir=client_dir.rstrip("/")),
    )
    if managed:
        text += "    managedResources:\n"
        text += "".join(f"      - {{name: {name}, ignoredByScheduler: false}}\n" for name in managed_resources())
    return text


DRA_DEPRECATED = (
    "gpu-advisor scheduler-config: --dra is deprecated and has no effect: the printed profile has no "
    "managedResources, so pods asking GPUs through DRA claims reach the advisor anyway"
)


def _print(args: argparse.Namespace) -> int:
    if args.dra:  # kept so scripts still run, and said, so nobody believes it changed the profile
        print(DRA_DEPRECATED, file=sys.stderr)
    text = scheduler_config(args.url, args.weight, args.managed_resources, args.client_dir, args.server_name)
    print(with_kubeconfig(text, args.kubeconfig) if args.kubeconfig else text, end="")
    return 0


def with_kubeconfig(text: str, kubeconfig: str) -> str:
    """``clientConnection.kubeconfig`` set: kube-scheduler ignores ``--kubeconfig`` when given ``--config``."""
    head, sep, tail = text.partition("\nclientConnection:")
    line, newline, rest = tail.partition("\n")
    return f"{head}{sep}{line}{newline}  kubeconfig: {kubeconfig}\n{rest}"


def _weight(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= 100_000:
        raise argparse.ArgumentTypeError(f"{value} is not between 1 and 100000")
    return value


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    config = commands.add_parser(
        "scheduler-config", help="print the kube-scheduler configuration that binds where the advisor ranks best"
    )
    url_help = f"the advisor's /scheduler URL prefix (default {DEFAULT_URL})"
    config.add_argument("--url", default=DEFAULT_URL, help=url_help)
    config.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="set clientConnection.kubeconfig: kube-scheduler's own credentials, for a scheduler run outside a pod "
        "(it ignores --kubeconfig when given --config)",
    )
    config.add_argument(
        "--client-dir",
        default=DEFAULT_CLIENT_DIR,
        metavar="DIR",
        help=f"where kube-scheduler reads ca.crt, scheduler.crt and scheduler.key (`certs create` writes them; "
        f"default {DEFAULT_CLIENT_DIR}, where the manifests mount them)",
    )
    config.add_argument(
        "--server-name",
        default=DEFAULT_SERVER_NAME,
        help=f"the name the advisor's serving certificate is checked against, whatever host --url names "
        f"(default {DEFAULT_SERVER_NAME})",
    )
    weight_help = (
        f"the extender's weight (default {DEFAULT_WEIGHT}: one wire point outweighs every enabled score plugin;"
        " lower lets kube-scheduler's own plugins overrule the advisor)"
    )
    config.add_argument("--weight", type=_weight, default=DEFAULT_WEIGHT, help=weight_help)
    managed_help = (
        "list managedResources (whole GPUs, MIG, AMD): only pods requesting them reach the advisor; pods"
        " sharing GPUs by annotation, HAMi/Aliyun resources and DRA claims then never do"
    )
    which = config.add_mutually_exclusive_group()
    which.add_argument("--managed-resources", action="store_true", help=managed_help)
    dra_help = "deprecated, no effect (the default has no managedResources, so DRA pods are seen); kept for scripts"
    which.add_argument("--dra", action="store_true", help=dra_help)
    config.set_defaults(handler=_print)
