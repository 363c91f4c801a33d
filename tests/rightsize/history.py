"""Days of DCGM exporter history, written as OpenMetrics and backfilled into a Prometheus data directory
with ``promtool tsdb create-blocks-from openmetrics`` (Debian's ``prometheus`` package ships it).

A :class:`Gpu` is one GPU held by one pod: the labels the exporter gives it and, per scrape, SM
activity (ratio) and VRAM used (MiB) from repeating cycles, so quantiles and means can be counted by hand.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

H100_MIB = 81559
H100_MODEL = "NVIDIA H100 80GB HBM3"


@dataclass(frozen=True)
class Gpu:
    labels: dict[str, str]
    sm_cycle: tuple[float, ...]  # SM activity ratio per scrape, repeated
    vram_cycle: tuple[float, ...]  # MiB used per scrape, repeated
    total_mib: float = H100_MIB
    first: int = 0  # the scrape it starts at (a replaced pod's successor starts later)
    samples: int | None = None  # how many scrapes it has (None: all)


def gpu_labels(node: str, index: int, namespace: str, pod: str, exported: bool = False) -> dict[str, str]:
    """An exporter's labels for GPU ``index`` of ``node`` held by ``namespace/pod``. ``exported``: the
    ServiceMonitor renamed the exporter's pod labels, and the scrape added the exporter's own pod."""
    labels = {
        "gpu": str(index),
        "UUID": f"GPU-{node}-{index:04d}",
        "device": f"nvidia{index}",
        "modelName": H100_MODEL,
        "Hostname": node,
        "container": "main",
    }
    if exported:
        labels |= {"exported_namespace": namespace, "exported_pod": pod, "namespace": "gpu-operator"}
        labels |= {"pod": f"nvidia-dcgm-exporter-{node[-5:]}"}
    else:
        labels |= {"namespace": namespace, "pod": pod}
    return labels


def _label_text(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))


def _value(name: str, gpu: Gpu, i: int) -> float:
    if name == "DCGM_FI_PROF_SM_ACTIVE":
        return gpu.sm_cycle[i % len(gpu.sm_cycle)]
    used = gpu.vram_cycle[i % len(gpu.vram_cycle)]
    return used if name == "DCGM_FI_DEV_FB_USED" else gpu.total_mib - used


def openmetrics(gpus: Sequence[Gpu], start: int, samples: int, interval_s: int) -> Iterator[str]:
    """The OpenMetrics text (one line at a time) of ``samples`` scrapes from ``start``, every ``interval_s``."""
    for name in ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"):
        yield f"# TYPE {name} gauge\n"
        for gpu in gpus:
            text = _label_text(gpu.labels)
            for i in range(gpu.first, gpu.first + (gpu.samples or samples - gpu.first)):
                yield f"{name}{{{text}}} {_value(name, gpu, i):g} {start + i * interval_s}\n"
    yield "# EOF\n"


def promtool_binary() -> str | None:
    return shutil.which("promtool")


def backfill(promtool: str, lines: Iterable[str], workdir: Path) -> Path:
    """Write the OpenMetrics file and turn it into TSDB blocks under ``workdir/data``; returns that dir."""
    source = workdir / "history.om"
    with source.open("w") as out:
        out.writelines(lines)
    data = workdir / "data"
    data.mkdir(exist_ok=True)
    # Blocks of up to 3 days keep a week of history to a few blocks (faster queries than 2 h ones).
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=72h", str(source), str(data)],
        check=True,
        capture_output=True,
    )
    source.unlink()
    return data
