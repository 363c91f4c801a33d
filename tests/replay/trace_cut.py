"""A small cut of the default trace for the command-line tests: its first pods and nodes, with the
shipped orders and node ranks of a few seeds restricted to them (relative order kept)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from extender.advice.replay import openb


@dataclass(frozen=True)
class TraceCut:
    nodes: Path  # openb node CSV
    pods: Path  # openb pod CSV named cut.csv
    orders: Path  # folder with cut.order.txt and cut.nodes.txt


def _head(source: Path, target: Path, rows: int) -> None:
    lines = source.read_text().splitlines(keepends=True)
    target.write_text("".join(lines[: rows + 1]))  # the header, then `rows` data rows


def _seed_lines(path: Path, seeds: tuple[int, ...]) -> dict[int, list[str]]:
    out = {}
    for line in path.read_text().splitlines():
        head, _, tail = line.partition("\t")
        if head.strip().isdigit() and int(head) in seeds:
            out[int(head)] = tail.split()
    return out


def write_cut(
    traces: Path, folder: Path, pods: int = 300, nodes: int = 40, seeds: tuple[int, ...] = (42, 43)
) -> TraceCut:
    """The first `pods` pods of default (and their tuned copies, in shipped order) on the first `nodes` nodes."""
    cut = TraceCut(folder / "nodes.csv", folder / "cut.csv", folder / "orders")
    cut.orders.mkdir()
    _head(traces / "openb" / openb.NODE_LIST, cut.nodes, nodes)
    _head(openb.pod_csv(traces, "default"), cut.pods, pods)
    shipped = traces / "fgd-order"
    orders = _seed_lines(shipped / "openb_pod_list_default.order.txt", seeds)
    ranks = _seed_lines(shipped / "openb_pod_list_default.nodes.txt", seeds)
    kept = {seed: [t for t in tokens if int(t.rstrip("t")) < pods] for seed, tokens in orders.items()}
    (cut.orders / "cut.order.txt").write_text("".join(f"{s}\t{' '.join(kept[s])}\n" for s in seeds))
    (cut.orders / "cut.nodes.txt").write_text("".join(f"{s}\t{' '.join(ranks[s][:nodes])}\n" for s in seeds))
    return cut


@dataclass(frozen=True)
class TwoCuts:
    nodes: Path  # openb node CSV
    folder: Path  # openb_pod_list_large.csv (the first 300 pods) and openb_pod_list_small.csv (the first 200)
    orders: Path  # their orders, named after them


def write_two_cuts(traces: Path, folder: Path, seeds: tuple[int, ...] = (42, 43)) -> TwoCuts:
    """Two cuts of default on the same 40 nodes, named as published pod lists are, in one folder."""
    cuts = TwoCuts(folder / "large" / "nodes.csv", folder / "pods", folder / "orders")
    cuts.folder.mkdir()
    cuts.orders.mkdir()
    for name, pods in (("large", 300), ("small", 200)):
        (folder / name).mkdir()
        cut = write_cut(traces, folder / name, pods=pods, seeds=seeds)
        stem = f"openb_pod_list_{name}"
        (cuts.folder / f"{stem}.csv").write_bytes(cut.pods.read_bytes())
        for kind in ("order", "nodes"):
            (cuts.orders / f"{stem}.{kind}.txt").write_bytes((cut.orders / f"cut.{kind}.txt").read_bytes())
    return cuts
