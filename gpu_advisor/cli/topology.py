"""``gpu-advisor topology show|best|publish``: one machine's GPU wiring, the set a pod would get, and
writing a topology to a Node by hand."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from extender.model.machines import bundled_machines
from extender.model.smi_topo import parse_topo_matrix, parse_topology_bytes
from extender.model.topology import GpuTopology, TopologyError
from extender.placement import POLICIES
from gpu_advisor.cli.exits import EXIT_NO_ANSWER, CliError
from gpu_advisor.cli.renamed_flags import Replaced

__all__ = ["read_topology_file", "register"]


def read_topology_file(path: str) -> GpuTopology:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not data.strip():
        raise CliError(f"{path} is empty: expected nvidia-smi topo -m text or a topology JSON document")
    try:
        return parse_topology_bytes(data)
    except TopologyError as exc:
        raise CliError(f"{path}: {exc}") from None


def _topology_from_args(args: argparse.Namespace) -> GpuTopology:
    if args.file and (args.nvml or args.example or args.amdsmi):
        raise CliError("give FILE, --example, --nvml or --amdsmi, not more than one")
    if args.amdsmi:
        from extender.agent import amdsmi_reader

        return amdsmi_reader.discover_amd_topology(amdsmi_reader.load_amdsmi())
    if args.nvml:
        from extender.sources import nvml

        return nvml.discover_topology(nvml.load_nvml())
    if args.example:
        machines = bundled_machines()
        if args.example not in machines:
            raise CliError(f"no bundled example {args.example!r}; choose one of: {', '.join(machines)}")
        return parse_topo_matrix(machines[args.example])
    if args.file:
        return read_topology_file(args.file)
    raise CliError(
        "name a FILE, --example NAME, --nvml or --amdsmi (bundled examples: " + ", ".join(bundled_machines()) + ")"
    )


def _show(args: argparse.Namespace) -> int:
    from extender.advice import render

    topo = _topology_from_args(args)
    print(topo.to_json(indent=2) if args.json else render.topology_report(topo))
    return 0


def _gpu_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected GPU indices such as 0,2,4, got {text!r}") from None


def _best(args: argparse.Namespace) -> int:
    from extender.advice import render
    from extender.placement import PlacementImpossible, best_placement

    topo = _topology_from_args(args)
    try:
        placement = best_placement(topo, args.gpus, free=args.free, required=args.required or (), policy=args.placement)
    except PlacementImpossible as exc:
        raise CliError(f"no set of {args.gpus} GPUs: {exc}", EXIT_NO_ANSWER) from None
    if args.json:
        print(json.dumps(placement.to_dict()))
    else:
        print(render.placement_report(topo, placement))
    return 0


def _publish(args: argparse.Namespace) -> int:
    from extender.cluster.state import ANNOTATION_FREE_GPUS, ANNOTATION_TOPOLOGY, FreeReport
    from extender.sources.kube import ApiServerError, api_error_message, kube_api

    topo = _topology_from_args(args)
    annotations = {ANNOTATION_TOPOLOGY: topo.to_json()}
    if args.free is not None:
        unknown = sorted(set(args.free) - set(topo.indices))
        if unknown:
            raise CliError(f"--free names GPU {', '.join(map(str, unknown))}, not in the topology")
        annotations[ANNOTATION_FREE_GPUS] = FreeReport(tuple(sorted(args.free)), time.time()).to_json()
    try:
        api = kube_api(args.kubeconfig)
        api.patch_node(
            args.node, {"metadata": {"annotations": annotations}}, _content_type="application/merge-patch+json"
        )
    except Exception as exc:  # the client raises many kinds; the user needs the one line
        raise ApiServerError(f"cannot annotate node {args.node}: {api_error_message(exc)}") from None
    print(f"node/{args.node} annotated: {', '.join(annotations)}")
    return 0


def _add_topology_source(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        metavar="FILE",
        nargs="?",
        help="nvidia-smi topo -m, rocm-smi --showtopo or amd-smi topology text, or a topology JSON document",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--nvml", action="store_true", help="read this machine's GPUs through NVML")
    src.add_argument("--amdsmi", action="store_true", help="read this machine's AMD GPUs through the amdsmi library")
    src.add_argument("--example", metavar="NAME", help="a bundled machine, e.g. dgx1-v100, hgx-h100, l40s-pcie")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    topology = commands.add_parser("topology", help="inspect GPU topologies").add_subparsers(
        dest="topology_command", required=True, metavar="SUBCOMMAND"
    )
    show = topology.add_parser("show", help="print the link matrix, NVLink islands and NUMA groups")
    _add_topology_source(show)
    show.add_argument("--json", action="store_true", help="print the topology JSON document")
    show.set_defaults(handler=_show)

    best = topology.add_parser("best", help="the GPU set a request of K GPUs gets, and what it leaves behind")
    _add_topology_source(best)
    best.add_argument("--gpus", "-k", type=int, required=True, metavar="K", help="how many GPUs the pod asks for")
    best.add_argument("--free", type=_gpu_list, metavar="LIST", help="free GPU indices, e.g. 0,2,4,5 (default: all)")
    best.add_argument("--required", type=_gpu_list, metavar="LIST", help="GPUs that must be in the set")
    best.add_argument(
        "--placement",
        choices=POLICIES,
        default="ideal",
        help="ideal (default) or nvidia-best-effort: the scoring policy file's placement field",
    )
    # --policy named the placement set here before it meant the scoring policy file everywhere else.
    best.add_argument("--policy", action=Replaced, now="--placement", dest="placement", choices=POLICIES)
    best.add_argument("--json", action="store_true", help='print {"gpus": [...], "score": N, "leaves": {...}}')
    best.set_defaults(handler=_best)

    publish = topology.add_parser("publish", help="write a topology (and free GPUs) to a Node's annotations")
    publish.add_argument("--node", required=True, help="the Node to annotate")
    _add_topology_source(publish)
    publish.add_argument("--free", type=_gpu_list, metavar="LIST", help="free GPU indices now, e.g. 0,1,4")
    publish.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    publish.set_defaults(handler=_publish)
