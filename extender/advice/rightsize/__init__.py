"""Right-sizing from history: which workloads hold more GPU than they use, and what to ask for instead.

Pure: the per-GPU statistics come in (``extender.sources.gpu_history`` reads them from Prometheus), the
grouping by owner, the figures and the advice go out.
"""

from extender.advice.rightsize.owners import Owner, PodFacts, owner_of_name, owner_of_pod, pod_facts
from extender.advice.rightsize.recommend import Advice, RightsizePolicy, recommend
from extender.advice.rightsize.report import RightsizeReport, rightsize, table
from extender.advice.rightsize.source import HistorySource
from extender.advice.rightsize.usage import GpuSeries, WorkloadUsage, workloads

__all__ = [
    "Advice",
    "GpuSeries",
    "HistorySource",
    "Owner",
    "PodFacts",
    "RightsizePolicy",
    "RightsizeReport",
    "WorkloadUsage",
    "owner_of_name",
    "owner_of_pod",
    "pod_facts",
    "recommend",
    "rightsize",
    "table",
    "workloads",
]
