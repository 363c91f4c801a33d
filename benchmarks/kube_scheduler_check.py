"""The 40-node / ~293-pod input of the real-cluster check, rebuilt from the default openb trace.

    python benchmarks/kube_scheduler_check.py OUT_DIR

The check's exact node and pod lists were not published; this builds a reproducible stand-in:
- nodes: every (1213/40)-th row of the GPU node list, starting at row 3 (40 nodes, 202 GPUs: the
  systematic sample whose GPU count comes closest to the check's 201);
- pods: the default trace in seed 42's shipped arrival order, keeping the pods whose `gpu_spec`
  admits a model of those nodes, until arrived GPU demand would pass 100 % of their capacity;
- orders: one pod order for every seed 0..20, with node ranks (the plain replay's tie-break) the
  list order for seed 0 and a seeded shuffle for the others.
Writes OUT_DIR/nodes.csv, OUT_DIR/check40.csv and OUT_DIR/orders/check40.{order,nodes}.txt.
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import csv
import random
from collections import Counter

from extender.advice.replay import openb

NODES, OFFSET, SEED, ORDERS = 40, 3, 42, 21


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("check40")
    traces = openb.traces_dir()
    node_rows = list(csv.DictReader((traces / "openb" / openb.NODE_LIST).open()))
    chosen = [node_rows[i * len(node_rows) // NODES + OFFSET] for i in range(NODES)]
    models = {row["model"] for row in chosen}
    capacity = sum(int(row["gpu"]) for row in chosen) * 1000
    pod_path = openb.pod_csv(traces, "default")
    pod_rows = list(csv.DictReader(pod_path.open()))
    order_line = next(
        line.split("\t")[1].split()
        for line in (traces / "fgd-order" / "openb_pod_list_default.order.txt").read_text().splitlines()
        if line.startswith(f"{SEED}\t")
    )
    kept: list[dict[str, str]] = []
    arrived = 0
    for token in order_line:
        if token.endswith("t"):
            continue  # tuned copies repeat a row; the check created each pod once
        row = pod_rows[int(token)]
        spec = row["gpu_spec"]
        if int(row["num_gpu"]) and spec and not models & set(spec.split("|")):
            continue
        demand = int(row["num_gpu"]) * int(row["gpu_milli"])
        if round((arrived + demand) * 100 / capacity) > 100:
            break
        arrived += demand
        kept.append(row)
    (out / "orders").mkdir(parents=True, exist_ok=True)
    fields = list(node_rows[0])
    with (out / "nodes.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(chosen)
    with (out / "check40.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, list(pod_rows[0]))
        writer.writeheader()
        writer.writerows(kept)
    tokens = " ".join(str(i) for i in range(len(kept)))
    ranks = [list(range(NODES))] + [random.Random(s).sample(range(NODES), NODES) for s in range(1, ORDERS)]
    (out / "orders" / "check40.order.txt").write_text("".join(f"{s}\t{tokens}\n" for s in range(ORDERS)))
    (out / "orders" / "check40.nodes.txt").write_text(
        "".join(f"{s}\t{' '.join(map(str, r))}\n" for s, r in enumerate(ranks))
    )

    def kind(row: dict[str, str]) -> str:
        gpus, milli = int(row["num_gpu"]), int(row["gpu_milli"])
        return "CPU-only" if not gpus else "share" if gpus == 1 and milli < 1000 else f"{gpus}-GPU"

    print(f"{NODES} nodes, {capacity // 1000} GPUs {dict(Counter(r['model'] for r in chosen))}")
    print(f"{len(kept)} pods {dict(Counter(kind(r) for r in kept))}, {arrived * 100 / capacity:.1f} % of GPU capacity")
    return 0


if __name__ == "__main__":
    sys.exit(main())
