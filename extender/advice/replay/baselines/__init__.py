"""The six policies of the FGD paper's evaluation (PROTOCOL.md section 3), one module each."""

from __future__ import annotations

from collections.abc import Callable

from extender.advice.replay.baselines.best_fit import BestFit
from extender.advice.replay.baselines.dot_product import DotProduct
from extender.advice.replay.baselines.fgd import Fgd
from extender.advice.replay.baselines.gpu_clustering import GpuClustering
from extender.advice.replay.baselines.gpu_packing import GpuPacking
from extender.advice.replay.baselines.random_pick import RandomPick
from extender.advice.replay.scorer import Scorer

# Published names (`analysis_*_discrete.csv` writes them as `01-Random` .. `06-FGD`).
POLICIES: dict[str, Callable[[], Scorer]] = {
    "Random": RandomPick,
    "DotProd": DotProduct,
    "GpuClustering": GpuClustering,
    "GpuPacking": GpuPacking,
    "BestFit": BestFit,
    "FGD": Fgd,
}
PUBLISHED_LABELS = {name: f"{index:02d}-{name}" for index, name in enumerate(POLICIES, start=1)}

__all__ = ["POLICIES", "PUBLISHED_LABELS", "BestFit", "DotProduct", "Fgd", "GpuClustering", "GpuPacking", "RandomPick"]
