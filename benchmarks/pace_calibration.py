"""What benchmarks/scheduler_pace.py cannot see, read off real runs: the rest of a real control plane's CPU.

The stand-in plays kube-scheduler's calls against the real advisor and measures the advisor's CPU per
pod. On a real 2-core machine the pace also pays for kube-scheduler's own work (its filter plugins on
every node, encoding each call's candidate names, TLS, the binding goroutines), kube-apiserver's (the
Binding, the watch events it sends every watcher) and etcd's. benchmarks/real_pace.py measured those
per bound pod, with and without the extender, with the advisor's filter passing its best node only
(the default), with other work on the machine stopped: there both configurations kept the two cores
busy (1.85-1.9 cores), so the pods bound per second follow the CPU spent per pod, and

    ratio ≈ CPU without the extender / (CPU of the others with it + the advisor's CPU)

where the advisor's CPU is the one this stand-in measures, with the others' figures below. Between the
two node counts measured, each figure is interpolated linearly; outside them no estimate is given.
The figures belong to the machine they were read on (2 vCPUs, AMD EPYC): rerun benchmarks/real_pace.py
there and put its per-process CPU here to calibrate the stand-in for another.
"""

from __future__ import annotations

__all__ = ["REAL_CPU_MS", "real_ratio_estimate"]

# nodes: (etcd + kube-apiserver + kube-scheduler without the extender, the same three with it), CPU ms per
# bound pod, the mean of the real runs (benchmarks/real_pace.py; docs/performance.md lists them).
REAL_CPU_MS: dict[int, tuple[float, float]] = {
    1000: (7.97, 11.32),  # four runs, 3,000 pods: 8.38/12.08, 8.29/11.67, 7.70/10.71, 7.50/10.83
    5000: (0.0, 0.0),
}


def real_ratio_estimate(nodes: int, advisor_cpu_ms: float) -> float | None:
    """kube-scheduler's pods/s with the advisor over without it, as a real 2-core control plane would
    bind them, given the advisor's CPU per pod; None outside the node counts measured."""
    counts = sorted(REAL_CPU_MS)
    if not counts[0] <= nodes <= counts[-1]:
        return None
    low = max(n for n in counts if n <= nodes)
    high = min(n for n in counts if n >= nodes)
    share = 0.0 if high == low else (nodes - low) / (high - low)
    without, others = (a + share * (b - a) for a, b in zip(REAL_CPU_MS[low], REAL_CPU_MS[high], strict=True))
    return without / (others + advisor_cpu_ms)
