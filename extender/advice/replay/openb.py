"""Reads the openb trace, the shipped arrival orders and the published FGD results (the only file I/O).

The data stays outside the repository; `traces_dir` finds it beside the checkout unless
`GPU_ADVISOR_TRACES` points elsewhere.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from extender.advice.replay.specs import ArrivalOrder, NodeSpec, Pod, PodShape
from extender.errors import InputError

TRACES_ENV = "GPU_ADVISOR_TRACES"
NODE_LIST = "openb_node_list_gpu_node.csv"
_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
# multigpu* traces carry only these five; the rest add gpu_spec and unused qos/phase/time columns.
_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


class ReplayInputError(InputError):
    """A trace, order or results file is malformed; the message names file:line."""


@dataclass(frozen=True, slots=True)
class PublishedRun:
    """One row of `analysis_*_discrete.csv`: a (trace, policy, seed) curve over X = 0..130."""

    trace: str
    policy: str
    seed: int
    values: tuple[float, ...]


def traces_dir(repo_root: Path | None = None) -> Path:
    """`$GPU_ADVISOR_TRACES`, else `shared/traces` beside the repository root."""
    env = os.environ.get(TRACES_ENV)
    if env:
        return Path(env)
    root = repo_root if repo_root is not None else Path(__file__).resolve().parents[3]
    return root.parent / "shared" / "traces"


def pod_csv(traces: Path, trace: str) -> Path:
    """The pod list of a trace named like `default` or `multigpu50`."""
    return traces / "openb" / f"openb_pod_list_{trace}.csv"


def _rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    try:
        handle = path.open(newline="")
    except OSError as exc:
        raise ReplayInputError(f"{path}: cannot read ({exc.strerror})") from exc
    with handle:
        reader = csv.DictReader(handle)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise ReplayInputError(f"{path}:1: missing column(s) {', '.join(missing)}")
        for row in reader:
            yield reader.line_num, row


def _int(path: Path, line: int, row: dict[str, str], column: str) -> int:
    raw = row.get(column) or ""
    try:
        value = int(raw)
    except ValueError:
        raise ReplayInputError(f"{path}:{line}: {column} {raw!r} is not an integer") from None
    if value < 0:
        raise ReplayInputError(f"{path}:{line}: {column} {value} is negative")
    return value


def load_nodes(path: Path) -> tuple[NodeSpec, ...]:
    """Nodes in file order (the order `.nodes.txt` ranks refer to)."""
    nodes = []
    for line, row in _rows(path, _NODE_COLUMNS):
        gpus = _int(path, line, row, "gpu")
        model = row["model"] or ""
        if gpus > 0 and not model:
            raise ReplayInputError(f"{path}:{line}: node with {gpus} GPUs has no model")
        nodes.append(
            NodeSpec(row["sn"], _int(path, line, row, "cpu_milli"), _int(path, line, row, "memory_mib"), gpus, model)
        )
    if not nodes:
        raise ReplayInputError(f"{path}: no nodes")
    return tuple(nodes)


def load_pods(path: Path) -> tuple[Pod, ...]:
    """Pods in file order (data row i is order token i)."""
    pods = []
    for line, row in _rows(path, _POD_COLUMNS):
        num_gpu = _int(path, line, row, "num_gpu")
        milli = _int(path, line, row, "gpu_milli")
        if milli > 1000 or (milli < 1000 and num_gpu > 1):
            raise ReplayInputError(f"{path}:{line}: gpu_milli {milli} with num_gpu {num_gpu}")
        shape = PodShape(
            _int(path, line, row, "cpu_milli"),
            _int(path, line, row, "memory_mib"),
            num_gpu,
            milli if num_gpu > 0 else 0,
            (row.get("gpu_spec") or "").strip(),
        )
        pods.append(Pod(row["name"], shape))
    return tuple(pods)


def _seed_lines(path: Path) -> Iterator[tuple[int, int, list[str]]]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ReplayInputError(f"{path}: cannot read ({exc.strerror})") from exc
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        head, sep, tail = line.partition("\t")
        if not sep or not head.strip().isdigit():
            raise ReplayInputError(f"{path}:{number}: expected 'seed<TAB>tokens'")
        yield number, int(head), tail.split()


def _order_pod(path: Path, number: int, token: str, pods: tuple[Pod, ...], copies: int) -> Pod:
    tuned = token.endswith("t")
    digits = token[:-1] if tuned else token
    if not digits.isdigit() or int(digits) >= len(pods):
        raise ReplayInputError(f"{path}:{number}: bad pod token {token!r} ({len(pods)} pods)")
    pod = pods[int(digits)]
    # The simulator names the k-th appended copy `<name>-tuned-<k>`, k counting all copies so far.
    return Pod(f"{pod.name}-tuned-{copies}", pod.shape) if tuned else pod


def load_orders(order_path: Path, nodes_path: Path, pods: tuple[Pod, ...], node_count: int) -> dict[int, ArrivalOrder]:
    """Per seed: pods in arrival order (`123t`: a tuned copy of row 123) and the node ranks."""
    ranks: dict[int, tuple[int, ...]] = {}
    for number, seed, tokens in _seed_lines(nodes_path):
        if len(tokens) != node_count or not all(t.isdigit() for t in tokens):
            raise ReplayInputError(f"{nodes_path}:{number}: expected {node_count} integer ranks")
        ranks[seed] = tuple(int(t) for t in tokens)
    orders: dict[int, ArrivalOrder] = {}
    for number, seed, tokens in _seed_lines(order_path):
        if seed not in ranks:
            raise ReplayInputError(f"{order_path}:{number}: seed {seed} has no line in {nodes_path.name}")
        arrivals: list[Pod] = []
        copies = 0
        for token in tokens:
            arrivals.append(_order_pod(order_path, number, token, pods, copies))
            copies += token.endswith("t")
        orders[seed] = ArrivalOrder(seed, tuple(arrivals), ranks[seed])
    return orders


def load_shipped_orders(traces: Path, trace: str, pods: tuple[Pod, ...], node_count: int) -> dict[int, ArrivalOrder]:
    """`fgd-order/openb_pod_list_<trace>.{order,nodes}.txt`; an empty dict when the trace has none."""
    folder = traces / "fgd-order"
    order, ranks = folder / f"openb_pod_list_{trace}.order.txt", folder / f"openb_pod_list_{trace}.nodes.txt"
    if not order.exists() or not ranks.exists():
        return {}
    return load_orders(order, ranks, pods, node_count)


def load_published(path: Path) -> list[PublishedRun]:
    """Published curves: columns `workload, sc_policy, tune, seed, [total_gpus,] 0..130`."""
    runs = []
    for line, row in _rows(path, ("workload", "sc_policy", "seed", "0")):
        columns = [k for k in row if k.isdigit()]
        try:
            values = tuple(float(row[k]) for k in sorted(columns, key=int))
        except (TypeError, ValueError):
            raise ReplayInputError(f"{path}:{line}: a curve value is not a number") from None
        trace = row["workload"].removeprefix("openb_pod_list_")
        runs.append(PublishedRun(trace, row["sc_policy"], _int(path, line, row, "seed"), values))
    return runs
