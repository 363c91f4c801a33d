"""diagnose's allocation step for a pod that asks a share of a GPU (Alibaba milli, HAMi, Aliyun): room
is free milli per GPU on the nodes that share GPUs the pod's way, not free ``nvidia.com/gpu``.

A node has room when the share fits on its GPUs by what their pods left free (``shares.take_gpus``,
the binders' own choice) or when the advisor's filter passes it there: the second makes diagnose and
explain (the dry-run) agree whatever the convention's finer rules (HAMi's cores, a model filter), as
both read the same verdicts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from extender.cluster.shares import request_milli, take_gpus
from extender.cluster.state import NodeState
from extender.model.gpu_share import MILLI_PER_GPU
from extender.model.pods import PodRequest
from extender.scoring.verdict import Verdict

__all__ = ["share_room"]

Judged = Callable[[list[str]], Mapping[str, Verdict]]


def _fits(node: NodeState, request: PodRequest) -> bool:
    shares = node.shares
    assert shares is not None
    milli = request_milli(request.share, shares.memory_mib[0] if shares.memory_mib else None)
    return milli <= MILLI_PER_GPU and len(take_gpus(shares.free, milli, request.gpus)) >= request.gpus


def share_room(
    request: PodRequest, nodes: Mapping[str, NodeState], judged: Judged
) -> tuple[list[NodeState], str, tuple[str, ...]]:
    """(the nodes with room for the share, the finding when there are none, the evidence: each sharing
    node's free milli per GPU)."""
    share = request.share
    assert share is not None
    sharing = sorted(
        (n for n in nodes.values() if n.shares and not n.shares.problem and n.shares.convention == share.convention),
        key=lambda n: n.name,
    )
    verdicts = judged([n.name for n in sharing])
    roomy = [n for n in sharing if verdicts[n.name].fits or _fits(n, request)]
    evidence = tuple(
        f"{n.name}: milli free per GPU {','.join(map(str, n.shares.free))}" for n in sharing if n.shares is not None
    )
    if sharing:
        return roomy, f"no node has {request.describe()} free: all allocated", evidence
    # No room of the pod's kind at all, however idle the GPUs shared another way: allocation, not
    # placement, answers (the evidence names those GPUs, which a user sees idle and asks about).
    others = sorted(
        (n.name, n.shares.convention) for n in nodes.values() if n.shares and n.shares.convention != share.convention
    )
    finding = f"no node shares GPUs the {share.convention} way the pod asks ({share.source})"
    return roomy, finding, tuple(f"{name}: shares GPUs the {convention} way" for name, convention in others)
