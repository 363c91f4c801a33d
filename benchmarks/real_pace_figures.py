"""The pure parts of ``benchmarks/real_pace.py``: the pace from bind times, CPU per pod from /proc
readings, the two kube-scheduler configurations made from the printed one, and the printed table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

# The processes whose CPU is read, in the table's order.
PROCESSES = ("kube-scheduler", "kube-apiserver", "etcd", "gpu-advisor")


def pods_per_second(bind_times: list[float]) -> float:
    """Pods bound per second from the first binding to the last: the first binding opens the window,
    so n bindings make n - 1 intervals (3,000 bindings over 29.99 s: 2,999 / 29.99 = 100.0)."""
    if len(bind_times) < 2:
        raise ValueError(f"the pace needs at least two bindings, got {len(bind_times)}")
    first, last = min(bind_times), max(bind_times)
    if last <= first:
        raise ValueError("every binding was seen at the same instant: no window to divide by")
    return (len(bind_times) - 1) / (last - first)


def cpu_seconds(stat: str, ticks_per_second: int) -> float:
    """User + system CPU seconds from the text of /proc/PID/stat. The command name (field 2) may hold
    spaces and parentheses, so fields are counted after its last ')': utime and stime are fields 14
    and 15, the 12th and 13th after it."""
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / ticks_per_second


def rss_mib(status: str) -> float:
    """Resident memory in MiB from the text of /proc/PID/status (VmRSS is in kB)."""
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ValueError("no VmRSS line: the process has exited")


def cpu_ms_per_pod(before: dict[str, float], after: dict[str, float], pods: int) -> dict[str, float]:
    """CPU milliseconds per bound pod of each process read both times (a process missing from either
    reading is left out: it did not run for this configuration)."""
    return {name: (after[name] - before[name]) * 1000 / pods for name in before if name in after}


def scheduler_config(printed: str, kubeconfig: str, *, with_extender: bool, kube_binds: bool = False) -> str:
    """The printed KubeSchedulerConfiguration made runnable here: kube-scheduler ignores --kubeconfig
    once --config is given, so its client's kubeconfig goes into clientConnection; leader election is
    off (one kube-scheduler per configuration, and no Lease writes in the measured window); without
    the extender, the very same profile minus its extenders entry."""
    config: dict[str, Any] = yaml.safe_load(printed)
    config.setdefault("clientConnection", {})["kubeconfig"] = kubeconfig
    config["leaderElection"] = {"leaderElect": False}
    if not with_extender:
        config.pop("extenders", None)
    elif kube_binds:  # for the split only: kube-scheduler posts the Binding itself, as without the extender
        config["extenders"][0].pop("bindVerb", None)
    return yaml.safe_dump(config, sort_keys=False)


@dataclass
class Measured:
    """One configuration at one size: what the harness saw."""

    pods_per_second: float
    cpu_ms_per_pod: dict[str, float]
    window_seconds: float
    advisor_rss_mib: float | None = None
    connections: tuple[int, int] | None = None  # (calls, connections) the extender served, where it counts them


@dataclass
class SizeResult:
    nodes: int
    pods: int
    with_advisor: Measured
    without: Measured
    noop: Measured | None = None  # the printed profile against a true no-op extender (``--noop``)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.with_advisor.pods_per_second / self.without.pods_per_second

    @property
    def noop_ratio(self) -> float | None:
        """The no-op extender's pace over the pace without the extender: what any extender could reach."""
        return None if self.noop is None else self.noop.pods_per_second / self.without.pods_per_second


def _all_four(cpu: dict[str, float]) -> float:
    return sum(cpu.get(name, 0.0) for name in PROCESSES)


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def table(results: list[SizeResult]) -> str:
    """A Markdown table, one row per size: the pace with and without the extender, their ratio, CPU ms
    per bound pod of each process (with / without), and the advisor's resident memory."""
    cpu_heads = [f"{name} ms/pod (with / without)" for name in (*PROCESSES, "all four")]
    heads = ["nodes", "pods", "pods/s with advisor", "pods/s without", "ratio", *cpu_heads, "advisor RSS MiB"]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---:|" * len(heads)]
    for result in results:
        with_cpu, without_cpu = result.with_advisor.cpu_ms_per_pod, result.without.cpu_ms_per_pod
        cells = [f"{result.nodes:,}", f"{result.pods:,}"]
        cells += [f"{result.with_advisor.pods_per_second:.1f}", f"{result.without.pods_per_second:.1f}"]
        cells.append(f"{result.ratio:.2f}")
        for name in PROCESSES:
            cells.append(f"{_ms(with_cpu.get(name))} / {_ms(without_cpu.get(name))}")
        cells.append(f"{_ms(_all_four(with_cpu))} / {_ms(_all_four(without_cpu))}")
        rss = result.with_advisor.advisor_rss_mib
        cells.append("—" if rss is None else f"{rss:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "".join(_noop_line(result) for result in results)


def _noop_line(result: SizeResult) -> str:
    """The no-op extender's run, when there was one: its pace, its ratio, and CPU ms per bound pod."""
    if result.noop is None or result.noop_ratio is None:
        return ""
    cpu = result.noop.cpu_ms_per_pod
    spent = ", ".join(f"{name.replace('gpu-advisor', 'no-op')} {_ms(cpu.get(name))}" for name in PROCESSES)
    served = result.noop.connections
    opened = "" if served is None else f"; {served[1]:,} connections for {served[0]:,} calls"
    return (
        f"\n{result.nodes:,} nodes, the no-op extender: {result.noop.pods_per_second:.1f} pods/s, "
        f"ratio {result.noop_ratio:.2f}; CPU ms/pod: {spent}, all four {_all_four(cpu):.2f}{opened}"
    )
