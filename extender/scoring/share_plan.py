"""Gathering for shared GPUs: the plan of a request on a node that offers GPU sharing, judged by what
the placement strands (``stranding``) against the learned mix (``workload``).

Refusals name the field that asked (``alibabacloud.com/gpu-milli``, ``nvidia.com/gpumem`` …), so
``kubectl describe pod`` says which share did not fit where. Components the node cannot inform (set,
fragmentation of the wiring, NUMA) are neutral. Packing (binpack) is, for a GPU pod, whether the node
already holds GPU pods (fill nodes in use before opening an idle one; how full is the stranding term's
business), and for a pod that asks no GPU, how few GPUs the node has free (its CPU is best taken where
it can strand the fewest GPUs): 1000 / (1000 + free milli). Spread mode takes 1 − packing.
"""

from __future__ import annotations

from extender.cluster.shares import GpuShares, request_milli
from extender.cluster.state import NodeState
from extender.model.gpu_share import MILLI_PER_GPU
from extender.model.pods import PodRequest
from extender.scoring.formula import NEUTRAL
from extender.scoring.plan import Plan
from extender.scoring.policy import ScoringPolicy
from extender.scoring.stranding import Strand, strand
from extender.scoring.workload import Mix

__all__ = ["plan_cpu_only", "plan_shared"]


def _memory(shares: GpuShares) -> int | None:
    return shares.memory_mib[0] if shares.memory_mib else None


def _components(shares: GpuShares, found: Strand, policy: ScoringPolicy, gpu_pod: bool = True) -> dict[str, float]:
    used = (1.0 if shares.in_use else 0.0) if gpu_pod else MILLI_PER_GPU / (MILLI_PER_GPU + shares.free_total)
    return {
        "set": NEUTRAL,
        "fragmentation": NEUTRAL,
        "numa": NEUTRAL,
        "packing": used if policy.mode == "binpack" else 1.0 - used,
        "stranding": found.level / 100.0,
    }


# A node refuses a share shape for a reason its own state does not enter ("offers no GPU sharing" on every
# whole-GPU node): one plan per reason, shared by every node and kept on each node state's memo (25,000
# copies of the same refusal were 4 MiB at 5,000 mixed nodes). A refusal plan is never changed after.
_REFUSED: dict[str, Plan] = {}


def _refused(reason: str) -> Plan:
    found = _REFUSED.get(reason)
    if found is None:
        if len(_REFUSED) >= 65_536:  # a bound: at worst a refusal made anew
            _REFUSED.clear()
        found = _REFUSED[reason] = Plan(False, reason, unresolvable=True)
    return found


def _refusal(node: NodeState, shares: GpuShares | None, request: PodRequest, milli: int) -> Plan | None:
    share = request.share
    asked = f"{request.describe()} ({share.source})" if share is not None else request.describe()
    if shares is None:
        return _refused(f"offers no GPU sharing; pod asks {asked}")
    if shares.problem:
        return _refused(f"GPU sharing unreadable: {shares.problem}")
    if share is not None and share.convention != shares.convention:
        # Each convention's own scheduler and device plugin hand out its shares: they never mix.
        return _refused(f"shares GPUs the {shares.convention} way; pod asks {asked}")
    model = node.gpu_model
    if share is not None and (share.models or share.excluded_models) and not share.allows(model or ""):
        allowed = "|".join(share.models) or f"not {'|'.join(share.excluded_models)}"
        return _refused(f"GPU model {model or 'unknown'} is not allowed: {share.source} asks {allowed}")
    if milli > MILLI_PER_GPU:
        size = f"{_memory(shares)} MiB" if _memory(shares) else "unknown size"
        return _refused(f"{asked} is more than one of its GPUs ({size})")
    if len(shares.free) < request.gpus:
        return _refused(f"has {len(shares.free)} GPUs in all, pod needs {request.gpus}")
    return None


def _free_words(free: tuple[int, ...]) -> str:
    return ",".join(map(str, free))


def plan_shared(node: NodeState, request: PodRequest, policy: ScoringPolicy, mix: Mix) -> Plan:
    """The plan of a shared (or Alibaba whole-GPU) request on this node."""
    shares = node.shares
    milli = request_milli(request.share, _memory(shares) if shares else None)
    refused = _refusal(node, shares, request, milli)
    if refused is not None:
        return refused
    assert shares is not None
    found = strand(mix, node.gpu_model, _memory(shares), node.cpu_free, shares.free, request, node.memory_free)
    if found is None:
        most = max(range(len(shares.free)), key=shares.free.__getitem__)
        need = (
            f"{request.gpus} idle GPUs" if request.gpus > 1 or milli >= MILLI_PER_GPU else f"a GPU with {milli} milli"
        )
        return Plan(
            False,
            f"no room for {need} ({request.share.source if request.share else 'whole GPUs'}): "
            f"milli free per GPU {_free_words(shares.free)} (most on GPU {most}: {shares.free[most]})",
        )
    if milli < MILLI_PER_GPU:
        gpu = found.gpus[0]
        what = f"shares GPU {gpu}: {milli} of its {shares.free[gpu]} free milli, {found.free_after[gpu]} stays free"
    else:
        what = f"GPUs {'-'.join(map(str, found.gpus))} whole"
    reason = f"{what}; milli free per GPU after: {_free_words(found.free_after)}; strands {_strands(found)}"
    return Plan(True, reason, gpus=found.gpus, components=_components(shares, found, policy), level=found.level)


def _strands(found: Strand) -> str:
    if abs(found.delta) < 0.5:
        return "nothing new (level 50)"
    side = "less" if found.delta > 0 else "more"
    return f"{abs(found.delta):.0f} milli {side} than before against the learned mix (level {found.level})"


def plan_cpu_only(node: NodeState, request: PodRequest, policy: ScoringPolicy, mix: Mix) -> Plan:
    """A pod asking no GPU on a sharing node: what its CPU strands of the GPUs (it always passes)."""
    shares = node.shares
    if shares is None or shares.problem or not mix.pods:
        return Plan(True, "pod asks for no GPU: not judged")
    found = strand(mix, node.gpu_model, _memory(shares), node.cpu_free, shares.free, request, node.memory_free)
    assert found is not None
    reason = f"pod asks for no GPU; its {request.cpu_milli} milli-CPU strands {_strands(found)}"
    return Plan(True, reason, components=_components(shares, found, policy, gpu_pod=False), level=found.level)
