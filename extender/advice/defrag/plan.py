"""What a defragmentation plan says: its moves in order, where the pending pod goes, what stays and why."""

from __future__ import annotations

from pydantic import BaseModel, Field

from extender.errors import InputError

__all__ = ["Applied", "DefragError", "DefragPlan", "LeftAlone", "Move"]


class DefragError(InputError):
    """A plan cannot be asked for like this (a pod that fits already, an unknown node, a bad budget)."""


class Move(BaseModel):
    pod: str = Field(description="namespace/name of the pod evicted")
    source: str = Field(description="the node it leaves")
    target: str = Field(description="the node the advisor would place its replacement on, after the moves before")
    gpus: list[int] | None = Field(description="the GPUs it would take there (None: not known)")
    reason: str = Field(description="the advisor's verdict on the target")
    stranded_after: float | None = Field(None, description="fleet plans: milli-GPU stranded after this move")


class LeftAlone(BaseModel):
    pod: str
    why: str


class DefragPlan(BaseModel):
    goal: str = Field(description="'pod namespace/name' (make it placeable) or 'fleet' (strand less)")
    found: bool = Field(description="the goal is met within the budget (fleet: at least one move helps)")
    verdict: str = Field(description="one line: the plan, or why there is none")
    budget: int
    moves: list[Move]
    placed_on: str | None = Field(None, description="pod plans: where the pending pod goes after the moves")
    stranded_before: float | None = Field(None, description="fleet plans: milli-GPU stranded now")
    stranded_after: float | None = Field(None, description="fleet plans: after the moves")
    searched: int = Field(description="arrangements of the cluster judged")
    movable: int = Field(description="pods a plan may move")
    left_alone: list[LeftAlone] = Field(description="GPU pods no plan moves, and why")


class Applied(BaseModel):
    """What ``--apply`` made of a plan: the pods evicted in order, and where and why it stopped."""

    evicted: list[str] = Field(description="namespace/name of each pod evicted, in plan order")
    stopped_at: str | None = Field(description="the move not made (None: every move was made)")
    why: str = Field(description="why that move was not made")
