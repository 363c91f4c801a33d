"""The cluster the real-Prometheus test runs: five GPU nodes, each with a DCGM exporter replaying a
real page, scraped in the ways real clusters label exporter series.

=============================  ==================================================================
job (labelling style)          how the series name the node
=============================  ==================================================================
hostname-pod                   ``Hostname`` = the exporter pod's name, no node label (GPU Operator
hostname-pod-1x                DaemonSet default); the 1x page with the exporter's old names
servicemonitor-honor-false     a ServiceMonitor (honorLabels: false): the exporter's pod labels
                               become ``exported_*``; ``instance`` = the exporter pod's IP:port
servicemonitor-honor-true      honorLabels: true; ``Hostname`` = the node (hostNetwork)
gpu-operator-instance-node     GPU Operator relabeling: ``instance`` = the node name (MIG page)
=============================  ==================================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extender.model.topology import Gpu, GpuTopology
from tests.conftest import fixture_files
from tests.telemetry.exporters import ExporterPage, label_sets

FIELDS_READ = (
    "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_DEV_GPU_UTIL",
    "dcgm_gpu_utilization",
    "DCGM_FI_DEV_FB_USED",
    "dcgm_fb_used",
    "DCGM_FI_DEV_FB_FREE",
    "dcgm_fb_free",
    "DCGM_FI_DEV_FB_RESERVED",
    "dcgm_fi_prof_gr_engine_active",
)


def page_file(name: str) -> Path:
    found = {p.name: p for p in fixture_files("telemetry")}
    return found[name]


@dataclass
class Site:
    job: str
    node: str
    page: ExporterPage
    exporter_pod: tuple[str, str, str]  # namespace, name, pod IP
    honor_labels: bool = False
    target_labels: Mapping[str, str] | None = None
    workloads: Sequence[tuple[str, str]] = ()  # (namespace, name) of 1-GPU pods on GPU 0
    product: str = "NVIDIA A100 80GB PCIe"
    memory_mib: int = 81920  # per GPU: telemetry saying more is rejected as impossible

    def topology(self) -> dict[str, Any]:
        uuids: dict[int, str] = {}
        for labels in self.page.sets():
            uuids.setdefault(int(labels["gpu"]), labels.get("UUID") or labels.get("uuid") or "")
        gpus = [Gpu(i, uuid=u, product=self.product, memory_mib=self.memory_mib) for i, u in sorted(uuids.items())]
        return GpuTopology(gpus).to_dict()  # PCIe between every pair


def _exporter_target(namespace: str, pod: str, ip: str) -> dict[str, str]:
    """Target labels a ServiceMonitor gives the DCGM exporter's endpoint."""
    return {
        "namespace": namespace,
        "pod": pod,
        "container": "nvidia-dcgm-exporter",
        "service": "nvidia-dcgm-exporter",
        "endpoint": "gpu-metrics",
        "instance": f"{ip}:9400",
    }


def sites() -> list[Site]:
    operator = page_file("dcgm-exporter_metrics_prometheus-scraped_gpu-operator472.txt")
    attributed = page_file("dcgm-exporter_metrics_pod-attributed_gpu-monitoring-tools138.txt")
    gh200 = page_file("dcgm-exporter_metrics_GH200_DRA_pr570.txt")
    one_x = page_file("dcgm-exporter_metrics_1x-names_issue188.txt")
    mig = page_file("dcgm-exporter_metrics_MIG_oldnamespace_issue272.txt")
    # The second GPU of the pod-attributed node, written as exporters write a GPU no pod holds.
    idle_gpu = {**label_sets(attributed.read_text())[0], "gpu": "1", "device": "nvidia1"}
    idle_gpu |= {"UUID": "GPU-5ea1d0c4-1f5e-4b55-9f3c-5d7b8a2e6f10", "container": "", "namespace": "", "pod": ""}
    return [
        Site(
            "hostname-pod",
            "aks-gpunp-66230965-vmss000000",  # the node and exporter pod of the real scraped page
            ExporterPage(
                operator,
                # 39 GiB used + 0.5 GiB reserved of 80 GiB; SM activity alternating 20 % / 80 % per scrape
                {
                    "DCGM_FI_PROF_SM_ACTIVE": [(0.2, 0.8)],
                    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": [0.9],
                    "DCGM_FI_DEV_GPU_UTIL": [100],
                    "DCGM_FI_DEV_FB_USED": [39936],
                    "DCGM_FI_DEV_FB_FREE": [41472],
                    "DCGM_FI_DEV_FB_RESERVED": [512],
                },
                drop=("instance", "job", "node"),  # what the Prometheus that scraped it added
            ),
            ("gpu-operator", "nvidia-dcgm-exporter-57pvc", "10.244.1.9"),
        ),
        Site(
            "hostname-pod-1x",
            "gpu-node-1x",
            ExporterPage(one_x, {"dcgm_fb_used": [1024], "dcgm_fb_free": [80896]}),
            ("monitoring", "dcgm-exporter-6ldbb", "10.244.5.5"),
        ),
        Site(
            "servicemonitor-honor-false",
            "gpu-node-b",
            ExporterPage(
                attributed,
                {
                    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": [0.88, 0.0],
                    "DCGM_FI_DEV_GPU_UTIL": [100, 0],
                    "DCGM_FI_DEV_FB_USED": [39936, 0],
                    "DCGM_FI_DEV_FB_FREE": [41984, 81920],
                },
                extra_sets=[idle_gpu],
            ),
            ("gpu-operator", "nvidia-dcgm-exporter-b7k2q", "10.244.2.7"),
            target_labels=_exporter_target("gpu-operator", "nvidia-dcgm-exporter-b7k2q", "10.244.2.7"),
            workloads=[("default", "dcgmproftester")],
        ),
        Site(
            "servicemonitor-honor-true",
            "sc-starwars-mab9-b00",  # the page's Hostname: this exporter runs with hostNetwork
            # GPU 0 is shared by two containers of one pod (two series per field), GPU 1 by none.
            ExporterPage(
                gh200,
                {
                    "DCGM_FI_DEV_GPU_UTIL": [97, 97, 0],
                    "DCGM_FI_DEV_FB_USED": [60000, 60000, 0],
                    "DCGM_FI_DEV_FB_FREE": [37280, 37280, 97280],
                },
            ),
            ("gpu-operator", "nvidia-dcgm-exporter-c9x4m", "10.244.3.7"),
            honor_labels=True,
            target_labels=_exporter_target("gpu-operator", "nvidia-dcgm-exporter-c9x4m", "10.244.3.7"),
            workloads=[("gpu-test2", "pod")],
            product="NVIDIA GH200 96GB HBM3",
            memory_mib=97280,
        ),
        Site(
            "gpu-operator-instance-node",
            "a100-mig-node",
            ExporterPage(mig, {"dcgm_fb_used": [10240, 20480, 0], "dcgm_fb_free": [30720, 20480, 40960]}),
            ("gpu-operator", "nvidia-dcgm-exporter-m1g7t", "10.244.4.7"),
            target_labels={"instance": "a100-mig-node"},
        ),
    ]


def exporter_pod(namespace: str, name: str, node: str, ip: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "nvidia-dcgm-exporter"}},
        "spec": {"nodeName": node, "containers": [{"name": "nvidia-dcgm-exporter", "resources": {}}]},
        "status": {"phase": "Running", "podIP": ip},
    }


def snapshot_doc(all_sites: Sequence[Site]) -> dict[str, Any]:
    """The advisor's cluster: the nodes (topology with the pages' GPU UUIDs) and the 1-GPU workloads."""
    nodes = [
        {
            "name": s.node,
            "topology": s.topology(),
            "labels": {"site": s.job},
            **({"free": [1]} if s.workloads else {}),
        }
        for s in all_sites
    ]
    pods = [{"name": n, "namespace": ns, "node": s.node, "gpus": 1} for s in all_sites for ns, n in s.workloads]
    return {"nodes": nodes, "pods": pods}
