"""Cold and cached time of one placement query per (board, k), the table build, and past 16 GPUs.

    python benchmarks/placement.py [--queries N] [--queries16 N]

table build: a fresh Wiring of the machine type (matrix, every subset's score, both policies' answers
for every free set × k): what the first sight of a machine type costs, once, at model load.
cold: a free set and k whose answer is not kept, on a machine type already seen (the wiring and its
memos kept, answers cleared): what each new allocation state costs. On boards of up to 8 GPUs that
is a table lookup plus building the answer. choice: the policy's choice alone (no leaves, no answer
object; what NVIDIA's allocator computes). cached: the same (topology, free set, k, policy) asked
again: every further node in that state. Goals: cold p99 ≤ 30 µs at 8 GPUs, ≤ 1 ms at 16;
cached ≤ 2 µs. Past 16 GPUs: first-answer time and the bounded search's gap to the exact optimum.
The machine may be shared: the load average is printed before and after; compare runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # keep this folder's scripts (benchmarks/extender.py) from shadowing the packages

import argparse
import os
import random
import statistics
import time
from itertools import combinations

from extender.model.machines import bundled_machines
from extender.model.smi_topo import parse_topo_matrix
from extender.model.topology import Gpu, GpuTopology, Link, PcieLevel
from extender.placement import POLICIES, Placer, PolicyName, Wiring
from extender.placement.best_effort import _Partitions
from extender.placement.best_sets import max_sets
from extender.placement.bounded import good_partition, good_set


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


def eight() -> dict[str, GpuTopology]:
    b = bundled_machines()
    return {
        "DGX-1 V100 (8)": parse_topo_matrix(b["dgx1-v100"]),
        "HGX H100 NVSwitch (8)": parse_topo_matrix(b["hgx-h100"]),
        "8x L40S PCIe (8)": parse_topo_matrix(b["l40s-pcie"]),
    }


def sixteen() -> dict[str, GpuTopology]:
    return {
        "2x DGX-1 mesh (16)": dgx1_pair(),
        "NVSwitch HGX-2 (16)": nvswitch(16, 6),
        "PCIe tree (16)": pcie(16),
        "random asymmetric (16)": random_asymmetric(16, seed=7),
    }


POLICY_NAMES: tuple[PolicyName, ...] = ("ideal", "nvidia-best-effort")


def free_sets(n: int, k: int, count: int, rnd: random.Random) -> list[list[int]]:
    return [sorted(rnd.sample(range(n), rnd.randint(k, n))) for _ in range(count)]


def measure(topo: GpuTopology, k: int, sets: list[list[int]], policy: PolicyName) -> dict[str, list[float]]:
    """Seconds per query: CPU time of this thread (what the query costs, whoever else runs) and wall
    time (what a caller waits, preemption by other processes included)."""
    placer = Placer()
    placer.wiring(topo)  # first sight of the machine type: not part of a cold query
    wiring = Wiring(topo)  # its own memos: the choice is timed apart from the full answer
    out: dict[str, list[float]] = {c: [] for c in ("cold", "cold wall", "choice", "cached", "cached wall")}
    for free in sets:
        placer.forget_answers()
        w0, c0 = time.perf_counter(), time.thread_time()
        placer.best_placement(topo, k, free=free, policy=policy)
        out["cold"].append(time.thread_time() - c0)
        out["cold wall"].append(time.perf_counter() - w0)
        mask = wiring.matrix.mask_of(free, "free")
        c0 = time.thread_time()
        if wiring.table is not None:
            wiring.table.choices[policy][k][mask]
        else:
            POLICIES[policy].choose(wiring, mask, 0, k)
        out["choice"].append(time.thread_time() - c0)
        reps = 200
        w0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(reps):
            placer.best_placement(topo, k, free=free, policy=policy)
        out["cached"].append((time.thread_time() - c0) / reps)
        out["cached wall"].append((time.perf_counter() - w0) / reps)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def table_builds(boards: dict[str, GpuTopology]) -> None:
    print("\ntable build per machine type (a fresh Wiring: matrix, subset scores, every answer), 7 builds")
    for name, topo in boards.items():
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            Wiring(topo)
            times.append(time.perf_counter() - t0)
        print(f"  {name:<24} median {statistics.median(times) * 1e3:6.1f} ms   max {max(times) * 1e3:6.1f} ms")


def per_k(boards: dict[str, GpuTopology], ks: list[int], count: int, rnd: random.Random) -> None:
    print(f"\n{count} random free sets per (board, k, policy); µs, p50/p99; CPU time unless marked wall")
    print(
        f"{'board':<24}{'policy':<20}{'k':>3}"
        + "".join(f"{c:>18}" for c in ("cold", "cold wall", "choice", "cached", "cached wall"))
    )
    for name, topo in boards.items():
        for policy in POLICY_NAMES:
            for k in ks:
                f = measure(topo, k, free_sets(len(topo.indices), k, count, rnd), policy)
                cells = "".join(f"{statistics.median(v) * 1e6:>9.1f}/{pct(v, 0.99) * 1e6:<8.1f}" for v in f.values())
                print(f"{name:<24}{policy:<20}{k:>3}{cells}")


def beyond_sixteen(rnd: random.Random) -> None:
    print("\npast 16 GPUs (bounded search): first answer on a fresh engine, ms, over 5 free sets per k")
    boards = {
        "NVSwitch (40)": nvswitch(40, 18),
        "random (40)": random_asymmetric(40, 3),
        "random (64)": random_asymmetric(64, 3),
    }
    for name, topo in boards.items():
        for policy in POLICY_NAMES:
            cells = []
            for k in (2, 4, 8, 16):
                times = []
                for free in free_sets(len(topo.indices), max(k, 17), 5, rnd):
                    t0 = time.perf_counter()
                    Placer().best_placement(topo, k, free=free, policy=policy)
                    times.append(time.perf_counter() - t0)
                cells.append(f"k={k} {statistics.median(times) * 1e3:.1f}/{max(times) * 1e3:.1f}")
            print(f"  {name:<16}{policy:<20}" + "   ".join(cells) + "  (p50/max)")


def gaps(rnd: random.Random) -> None:
    print("\nbounded search vs exhaustive on 16-GPU boards (30 free sets of 8-16 GPUs, k in 2,3,4,8 each)")
    boards = {**sixteen(), **{f"random (16) seed {s}": random_asymmetric(16, s) for s in range(4)}}
    for name, topo in boards.items():
        w = Wiring(topo, tables=False)
        m, set_gap, part_gap = w.matrix, [], []
        for _ in range(30):
            free = sorted(rnd.sample(range(16), rnd.randint(8, 16)))
            k, mask = rnd.choice([2, 3, 4, 8]), sum(1 << p for p in free)
            exact = max_sets(m, mask, k, all_ties=False)[0]
            set_gap.append((exact - m.score(good_set(m.w, free, k))) / exact if exact else 0.0)
            exact = _Partitions(w, k, 0).solve(mask, len(free) % k != 0)
            found = sum(m.score(g) for g in good_partition(m.w, free, k))
            part_gap.append((exact - found) / exact if exact else 0.0)
        print(
            f"  {name:<26} best set: mean {statistics.mean(set_gap):6.2%} max {max(set_gap):6.2%}"
            f"   partition total: mean {statistics.mean(part_gap):6.2%} max {max(part_gap):6.2%}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200, help="free sets per (8-GPU board, k, policy)")
    parser.add_argument("--queries16", type=int, default=30, help="free sets per (16-GPU board, k, policy)")
    args = parser.parse_args()
    rnd = random.Random(2026)
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()), f"on {os.cpu_count()} CPUs")
    table_builds({**eight(), **sixteen()})
    per_k(eight(), list(range(1, 9)), args.queries, rnd)
    per_k(sixteen(), [1, 2, 3, 4, 8], args.queries16, rnd)
    beyond_sixteen(rnd)
    gaps(rnd)
    print("\nload average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
