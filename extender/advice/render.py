"""Plain-text reports for people at a terminal; pure functions from models to strings."""

from __future__ import annotations

from extender.advice.defrag.plan import DefragPlan
from extender.advice.diagnose import Diagnosis
from extender.advice.dryrun import DryRunAnswer
from extender.model.topology import GpuTopology, Link
from extender.placement import Placement

__all__ = ["diagnosis_report", "dry_run_report", "link_label", "placement_report", "topology_report"]


def link_label(link: Link, fabric: str = "NVLink") -> str:
    """``NV18`` for NVLink pairs (as nvidia-smi prints them), ``XGMI`` for an XGMI pair (as rocm-smi
    does), else the PCIe level, ``?`` when unknown."""
    if link.nvlinks and fabric != "NVLink":
        return fabric if link.nvlinks == 1 else f"{fabric}{link.nvlinks}"
    if link.nvlinks:
        return f"NV{link.nvlinks}"
    return link.pcie.value if link.pcie else "?"


def topology_report(topo: GpuTopology) -> str:
    names = [f"GPU{i}" for i in topo.indices]
    width = max(6, *(len(n) + 1 for n in names))
    header = " " * width + "".join(n.ljust(width) for n in names) + "NUMA"
    lines = [header]
    for i in topo.indices:
        cells = ["X" if i == j else link_label(topo.link(i, j), topo.vendor.link) for j in topo.indices]
        numa = topo.gpu(i).numa_node
        lines.append(
            f"GPU{i}".ljust(width) + "".join(c.ljust(width) for c in cells) + ("?" if numa is None else str(numa))
        )
    lines.append("")
    islands = topo.nvlink_islands()
    nv_islands = [isl for isl in islands if len(isl) > 1]
    if nv_islands:
        islands_text = "  ".join("{" + ",".join(map(str, isl)) + "}" for isl in nv_islands)
        lines.append(f"{topo.vendor.link} islands: ".ljust(16) + islands_text)
    else:
        lines.append(f"{topo.vendor.link} islands: ".ljust(16) + "none (PCIe only)")
    groups = topo.numa_groups()
    lines.append(
        "NUMA groups:    "
        + "  ".join(f"{'?' if node is None else node}: {{{','.join(map(str, gpus))}}}" for node, gpus in groups.items())
    )
    products = sorted({g.product for g in topo.gpus if g.product})
    if products:
        lines.append("Products:       " + ", ".join(products))
    lines.append(f"Fingerprint:    {topo.fingerprint}")
    return "\n".join(lines)


def placement_report(topo: GpuTopology, placement: Placement) -> str:
    gpus = placement.gpus
    pairs = [f"{a}-{b} {link_label(topo.link(a, b))}" for n, a in enumerate(gpus) for b in gpus[n + 1 :]]
    leaves = placement.leaves
    quality = "  ".join(
        f"{s} GPUs: {'cannot' if v is None else v} ({leaves.quality[s]:.0%} of an empty node)"
        for s, v in leaves.best_score.items()
    )
    lines = [
        f"GPUs {','.join(map(str, gpus))}  score {placement.score}  ({placement.policy})",
        "pairs:  " + ("  ".join(pairs) if pairs else "none (one GPU)"),
        f"leaves: free {{{','.join(map(str, leaves.free))}}}, largest NVLink island {leaves.largest_nvlink_island}",
        "        best set left for " + quality,
    ]
    return "\n".join(lines)


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths[:-1]) + "  {}"
    return [fmt.format(*header), *(fmt.format(*r) for r in rows)]


def dry_run_report(answer: DryRunAnswer) -> str:
    lines = [f"{answer.pod} asks for {answer.request}", f"verdict: {answer.verdict}", ""]
    if answer.ranked:
        rows = [[r.node, str(r.score), ",".join(map(str, r.gpus)) if r.gpus else "-", r.reason] for r in answer.ranked]
        lines += [*_table(rows, ["NODE", "SCORE", "GPUS", "WHY"]), ""]
    if answer.filtered:
        rows = [[f.node, f.stage, f.reason] for f in answer.filtered]
        lines += ["filtered out:", *_table(rows, ["NODE", "STAGE", "REASON"]), ""]
    for f in answer.findings:
        lines.append(f"{f.severity}: {f.code}: {f.message}")
        lines.append(f"  advice: {f.advice}")
    return "\n".join(lines).rstrip()


def diagnosis_report(result: Diagnosis) -> str:
    answer = result.answer
    lines = [f"{result.pod} ({result.phase}) asks for {result.request}"]
    lines.append(f"explained by: {answer.name} — {answer.finding}" if answer else "not explained by any step")
    for number, step in enumerate(result.steps, 1):
        mark = "→" if step is answer else ("✓" if not step.explains else " ")
        lines.append(f"{mark} {number}. {step.name}: {step.finding}")
        lines += [f"      {e}" for e in step.evidence]
    return "\n".join(lines)


def defrag_report(plan: DefragPlan, applying: bool = False) -> str:
    """A defragmentation plan as text: the verdict, the moves in order, what stays and why; ``applying``:
    its moves are being made (the lines saying each follow), else it is a dry run."""
    lines = [plan.verdict]
    for number, move in enumerate(plan.moves, 1):
        gpus = f" (GPUs {','.join(map(str, move.gpus))})" if move.gpus else ""
        after = f"; {move.stranded_after:.0f} milli stranded after" if move.stranded_after is not None else ""
        lines.append(f"  {number}. evict {move.pod} from {move.source}; it goes to {move.target}{gpus}{after}")
    if plan.left_alone:
        lines.append(f"left alone ({len(plan.left_alone)}):")
        lines += [f"  {x.pod}: {x.why}" for x in plan.left_alone[:20]]
        if len(plan.left_alone) > 20:
            lines.append(f"  … {len(plan.left_alone) - 20} more (--json lists them all)")
    done = "applying the plan" if applying else "dry run: nothing was evicted"
    lines.append(f"{done} ({plan.searched} arrangements judged, {plan.movable} pods may move)")
    return "\n".join(lines)
