"""Cold and cached time of one placement query, for 8- and 16-GPU machines.

    python benchmarks/placement.py [--queries N]

first: a fresh placement engine per query: the first node of a machine type the extender ever sees.
cold: a free set and k not asked before, on a machine type already seen (per-machine memos kept, answers
cleared): what each new allocation state costs. cached: the same (topology, free set, k, policy) asked
again: every further node in that state. Goals at 16 GPUs: cached ≤ 5 µs, cold ≤ 1 ms.
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # keep this folder's scripts (benchmarks/extender.py) from shadowing the packages

import argparse
import random
import statistics
import time
from itertools import combinations

from extender.model.machines import bundled_machines
from extender.model.smi_topo import parse_topo_matrix
from extender.model.topology import Gpu, GpuTopology, Link, PcieLevel
from extender.placement import Placer, PolicyName


def nvswitch(n: int, links: int) -> GpuTopology:
    """An n-GPU NVSwitch board (HGX-2 style at 16): every pair joined, two sockets."""
    sock = [0 if i < n // 2 else 1 for i in range(n)]
    return GpuTopology(
        [Gpu(i, numa_node=sock[i]) for i in range(n)],
        [
            Link(a, b, links, PcieLevel.NODE if sock[a] == sock[b] else PcieLevel.SYS)
            for a, b in combinations(range(n), 2)
        ],
    )


def pcie(n: int) -> GpuTopology:
    """n PCIe GPUs: pairs behind one switch PIX, four per host bridge PXB/NODE, sockets SYS."""

    def level(a: int, b: int) -> PcieLevel:
        if a // 2 == b // 2:
            return PcieLevel.PIX
        if a // 4 == b // 4:
            return PcieLevel.PXB
        return PcieLevel.NODE if a // (n // 2) == b // (n // 2) else PcieLevel.SYS

    return GpuTopology([Gpu(i) for i in range(n)], [Link(a, b, 0, level(a, b)) for a, b in combinations(range(n), 2)])


def dgx1_pair() -> GpuTopology:
    """Two DGX-1 meshes side by side as one 16-GPU node (each half a hybrid cube mesh, SYS between)."""
    one = parse_topo_matrix(bundled_machines()["dgx1-v100"])
    links = [Link(lk.a + off, lk.b + off, lk.nvlinks, lk.pcie) for off in (0, 8) for lk in one.links]
    links += [Link(a, b, 0, PcieLevel.SYS) for a in range(8) for b in range(8, 16)]
    return GpuTopology([Gpu(i) for i in range(16)], links)


def random_asymmetric(n: int, seed: int) -> GpuTopology:
    rnd = random.Random(seed)
    levels = list(PcieLevel)
    return GpuTopology(
        [Gpu(i) for i in range(n)],
        [Link(a, b, rnd.choice([0, 0, 0, 1, 2, 4]), rnd.choice(levels)) for a, b in combinations(range(n), 2)],
    )


def machines() -> dict[str, GpuTopology]:
    b = bundled_machines()
    return {
        "DGX-1 V100 (8)": parse_topo_matrix(b["dgx1-v100"]),
        "HGX H100 NVSwitch (8)": parse_topo_matrix(b["hgx-h100"]),
        "8x L40S PCIe (8)": parse_topo_matrix(b["l40s-pcie"]),
        "2x DGX-1 mesh (16)": dgx1_pair(),
        "NVSwitch HGX-2 (16)": nvswitch(16, 6),
        "PCIe tree (16)": pcie(16),
        "random asymmetric (16)": random_asymmetric(16, seed=7),
    }


def queries(topo: GpuTopology, count: int, rnd: random.Random) -> list[tuple[list[int], int]]:
    n = len(topo.indices)
    out = []
    for _ in range(count):
        free = sorted(rnd.sample(range(n), rnd.randint(max(2, n // 2), n)))
        k = rnd.choice([k for k in (1, 2, 3, 4, 8) if k <= len(free)])
        out.append((free, k))
    return out


def measure(
    topo: GpuTopology, qs: list[tuple[list[int], int]], policy: PolicyName
) -> tuple[list[float], list[float], list[float]]:
    first, cold, cached = [], [], []
    for free, k in qs:
        placer = Placer()  # nothing remembered
        t0 = time.perf_counter()
        placer.best_placement(topo, k, free=free, policy=policy)
        first.append(time.perf_counter() - t0)
    placer = Placer()
    for free, k in qs:
        placer.forget_answers()
        t0 = time.perf_counter()
        placer.best_placement(topo, k, free=free, policy=policy)
        cold.append(time.perf_counter() - t0)
        reps = 200
        t0 = time.perf_counter()
        for _ in range(reps):
            placer.best_placement(topo, k, free=free, policy=policy)
        cached.append((time.perf_counter() - t0) / reps)
    return first, cold, cached


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=40, help="random (free set, k) queries per machine")
    args = parser.parse_args()
    rnd = random.Random(2026)
    print(f"{args.queries} random (free set, k in 1,2,3,4,8) queries per machine and policy")
    print(
        f"{'machine':<24}{'policy':<20}{'first p50':>11}{'first max':>11}"
        f"{'cold p50':>11}{'cold p99':>11}{'cached p50':>12}{'cached p99':>12}"
    )
    for name, topo in machines().items():
        qs = queries(topo, args.queries, rnd)
        policies: tuple[PolicyName, ...] = ("ideal", "nvidia-best-effort")
        for policy in policies:
            first, cold, cached = measure(topo, qs, policy)
            print(
                f"{name:<24}{policy:<20}{statistics.median(first) * 1e3:>9.3f}ms{max(first) * 1e3:>9.3f}ms"
                f"{statistics.median(cold) * 1e3:>9.3f}ms{pct(cold, 0.99) * 1e3:>9.3f}ms"
                f"{statistics.median(cached) * 1e6:>10.2f}µs{pct(cached, 0.99) * 1e6:>10.2f}µs"
            )


if __name__ == "__main__":
    main()
