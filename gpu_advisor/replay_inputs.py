"""Where `gpu-advisor replay` reads its cluster, pods and arrival orders from (the I/O edge of the replay).

Nodes: an openb node CSV, an advisor snapshot (or any YAML/JSON List of Nodes), `kube` (one list of
the live cluster) or `simulated`. Pods: an openb pod CSV, or a YAML/JSON file of Pod objects (one per document, a
list, or a List). Orders: a folder holding `<pods stem>.order.txt` and `<pods stem>.nodes.txt`.
Everything wrong with them is an `InputError` (exit 2) whose message names the file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from extender.advice.replay import openb
from extender.advice.replay.kube_objects import ClusterNode, cluster_nodes, cluster_pods
from extender.advice.replay.kube_profile import KubeSchedulerProfile
from extender.advice.replay.openb import ReplayInputError
from extender.advice.replay.run import Workset
from extender.advice.replay.specs import Pod

__all__ = [
    "SCHEDULER_CONFIG_NAMES",
    "arrival_interval",
    "checked_limit",
    "load_outage",
    "load_scheduler_profile",
    "load_scoring",
    "load_workset",
    "load_worksets",
    "pod_files",
    "pod_objects",
    "trace_name",
]

_PUBLISHED_PREFIX = "openb_pod_list_"


def trace_name(pods: Path) -> str:
    """`openb_pod_list_default.csv` → `default`; any other file → its stem."""
    return pods.stem.removeprefix(_PUBLISHED_PREFIX)


def load_nodes(source: str, kubeconfig: str | None = None) -> tuple[ClusterNode, ...]:
    """Nodes in the order node ranks refer to: an openb CSV, else what `--cluster` accepts elsewhere."""
    path = Path(source)
    if path.suffix.lower() == ".csv":
        return tuple(ClusterNode(spec, None) for spec in openb.load_nodes(path))
    from extender.sources.cluster_choice import one_look

    snapshot = one_look(source, kubeconfig)  # kube: one list of the live cluster; simulated; a snapshot file
    try:
        return cluster_nodes(snapshot.nodes)
    except ReplayInputError as exc:
        raise ReplayInputError(f"{source}: {exc}") from None


def _is_pod(item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    kind = item.get("kind")
    return kind == "Pod" or (kind is None and isinstance(item.get("spec"), Mapping))


def pod_objects(documents: list[Any], where: str) -> list[Mapping[str, Any]]:
    """The Pod objects of YAML/JSON documents: Pods, lists of them, or Lists (other kinds are skipped)."""
    items: list[Any] = []
    for document in documents:
        if document is None:
            continue
        if isinstance(document, list):
            items += document
        elif isinstance(document, Mapping) and isinstance(document.get("items"), list):
            items += document["items"]
        elif isinstance(document, Mapping):
            items.append(document)
        else:
            raise ReplayInputError(f"{where}: expected Pod objects, a list of them or a List, got {document!r:.40}")
    pods = [item for item in items if _is_pod(item)]
    if not pods:
        raise ReplayInputError(f"{where}: no Pod objects")
    return pods


def load_pods(path: Path, nodes: tuple[ClusterNode, ...]) -> tuple[Pod, ...]:
    """Pods in file order (data row i, or Pod i, is order token i)."""
    if path.suffix.lower() == ".csv":
        return openb.load_pods(path)
    import yaml

    try:
        documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise ReplayInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ReplayInputError(f"{path}: not text (expected YAML or JSON Pod objects, or an openb .csv)") from None
    except yaml.YAMLError as exc:
        raise ReplayInputError(f"{path}: not YAML or JSON ({str(exc).splitlines()[0]})") from None
    try:
        return cluster_pods(pod_objects(documents, str(path)), nodes)
    except ReplayInputError as exc:
        message = str(exc)
        raise ReplayInputError(message if message.startswith(str(path)) else f"{path}: {message}") from None


def pod_files(given: list[Path], published: set[str] | None = None) -> tuple[list[Path], list[str]]:
    """Each `--pods`: a file, or a folder's `openb_pod_list_*.csv` by name (only the traces in `published`
    when given); and the traces a folder held that were left out for want of published figures."""
    files: list[Path] = []
    left_out: list[str] = []
    for path in given:
        if not path.is_dir():
            files.append(path)
            continue
        found = sorted(path.glob(f"{_PUBLISHED_PREFIX}*.csv"))
        if not found:
            raise ReplayInputError(f"--pods: {path} holds no {_PUBLISHED_PREFIX}*.csv")
        for pods in found:
            if published is None or trace_name(pods) in published:
                files.append(pods)
            else:
                left_out.append(trace_name(pods))
    seen: dict[str, Path] = {}
    for pods in files:
        if trace_name(pods) in seen:
            raise ReplayInputError(f"--pods: {seen[trace_name(pods)]} and {pods} are both trace {trace_name(pods)!r}")
        seen[trace_name(pods)] = pods
    return files, left_out


def load_worksets(
    nodes_source: str, pods_paths: list[Path], orders_dir: Path | None, kubeconfig: str | None
) -> list[Workset]:
    """One workset per pod file, on the one cluster (read once)."""
    nodes = load_nodes(nodes_source, kubeconfig)
    return [_workset(nodes, pods, orders_dir) for pods in pods_paths]


def load_workset(nodes_source: str, pods_path: Path, orders_dir: Path | None, kubeconfig: str | None) -> Workset:
    """The cluster, the pods and (when a folder is given) the shipped orders of one replay."""
    return _workset(load_nodes(nodes_source, kubeconfig), pods_path, orders_dir)


def _workset(nodes: tuple[ClusterNode, ...], pods_path: Path, orders_dir: Path | None) -> Workset:
    pods = load_pods(pods_path, nodes)
    specs = tuple(node.spec for node in nodes)
    if orders_dir is None:
        return Workset(trace_name(pods_path), specs, pods)
    if not orders_dir.is_dir():
        raise ReplayInputError(f"{orders_dir}: no such folder of arrival orders")
    order, ranks = orders_dir / f"{pods_path.stem}.order.txt", orders_dir / f"{pods_path.stem}.nodes.txt"
    for needed in (order, ranks):
        if not needed.is_file():
            raise ReplayInputError(f"{needed}: missing (--orders needs {order.name} and {ranks.name} for {pods_path})")
    return Workset(trace_name(pods_path), specs, pods, openb.load_orders(order, ranks, pods, len(specs)))


SCHEDULER_CONFIG_NAMES = ("kube-default", "printed", "printed-managed")


def load_scheduler_profile(source: str) -> KubeSchedulerProfile:
    """``--scheduler-config``: a KubeSchedulerConfiguration file, ``kube-default`` (kube-scheduler's
    default profile, no extender), ``printed`` / ``printed-managed`` (what ``gpu-advisor scheduler-config``
    prints, without / with ``--managed-resources``)."""
    from extender.advice.replay.kube_profile import kube_default_profile, parse_profile

    if source == "kube-default":
        return kube_default_profile()
    import yaml

    if source in ("printed", "printed-managed"):
        from gpu_advisor.cli.scheduler_config import scheduler_config

        return parse_profile(yaml.safe_load(scheduler_config(managed=source == "printed-managed")))
    path = Path(source)
    try:
        documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except OSError as exc:
        names = ", ".join(SCHEDULER_CONFIG_NAMES)
        raise ReplayInputError(
            f"--scheduler-config: {source}: cannot read ({exc.strerror or exc}); or one of {names}"
        ) from None
    except UnicodeDecodeError:
        raise ReplayInputError(f"--scheduler-config: {source}: not text") from None
    except yaml.YAMLError as exc:
        raise ReplayInputError(f"--scheduler-config: {source}: not YAML ({str(exc).splitlines()[0]})") from None
    if len(documents) != 1:
        raise ReplayInputError(
            f"--scheduler-config: {source}: expected one KubeSchedulerConfiguration, got {len(documents)} documents"
        )
    try:
        return parse_profile(documents[0])
    except ReplayInputError as exc:
        raise ReplayInputError(f"--scheduler-config: {source}: {exc}") from None


def load_scoring(path: Path | None) -> Any:
    """The advisor's scoring policy file (as the extender's ``--policy`` reads it), or None."""
    if path is None:
        return None
    from extender.scoring.policy import PolicyError
    from extender.sources.policy_file import load_policy

    try:
        return load_policy(path)
    except PolicyError as exc:
        raise ReplayInputError(f"--policy: {exc}") from None


def arrival_interval(text: str | None) -> float:
    """Seconds between arrivals (the clock a held pod's limit runs on)."""
    from extender.advice.replay.waiting import ARRIVAL_INTERVAL_S

    if text is None:
        return ARRIVAL_INTERVAL_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ReplayInputError(f"--arrival-interval: {text!r} is not a number of seconds above 0")
    return value


def load_outage(text: str | None, profile: Any) -> Any:
    """``--outage``: parsed, and refused where it would change nothing."""
    if text is None:
        return None
    if profile is None:
        raise ReplayInputError("--outage: needs --scheduler-config (it models kube-scheduler without the advisor)")
    if profile.extender is None:
        raise ReplayInputError("--outage: the scheduler configuration has no extender, so no advisor to lose")
    from extender.advice.replay.outage import parse_outage

    return parse_outage(text)


def checked_limit(path: Path | None, files: list[Path], seeds: list[int]) -> Any:
    """``--limit``: read and checked against the one trace it bounds (None when not given)."""
    if path is None:
        return None
    from extender.advice.replay.limit import check_limit, load_limit

    if len(files) > 1:
        raise ReplayInputError(f"--limit: {path} bounds one trace; name one --pods file with it")
    limit = load_limit(path)
    check_limit(limit, trace_name(files[0]), seeds, f"--limit: {path}")
    return limit
