"""What a pod's GPU resource asks are worth, in GPU-equivalents, and how tenants are named."""

from __future__ import annotations

import pytest

from extender.advice.rightsize import Owner
from extender.advice.usage import PodUsage, gpu_ask, tenant_key


@pytest.mark.parametrize(
    ("resource", "count", "replicas", "strategy", "mode", "profile", "gpus"),
    [
        ("nvidia.com/gpu", 2, 1, None, "whole", None, 2.0),  # 2 × 1
        ("amd_com_gpu", 1, 1, None, "whole", None, 1.0),
        ("nvidia_com_mig_3g_40gb", 2, 1, None, "mig", "3g.40gb", 6 / 7),  # 2 × 3 of 7 slices
        ("nvidia.com/mig-1g.10gb", 1, 1, None, "mig", "1g.10gb", 1 / 7),
        ("nvidia.com/mig-2g.12gb", 1, 1, None, "mig", "2g.12gb", 2 / 4),  # an A30 has 4 slices
        ("nvidia.com/gpu", 1, 4, "time-slicing", "time-slicing", None, 1 / 4),  # 1 of 4 shares
        ("nvidia_com_gpu_shared", 2, 2, "mps", "mps", None, 2 / 2),
    ],
)
def test_a_resource_ask_is_worth_its_share_of_a_gpu(
    resource: str, count: int, replicas: int, strategy: str | None, mode: str, profile: str | None, gpus: float
) -> None:
    ask = gpu_ask(resource, count, replicas, strategy)
    assert ask is not None and (ask.mode, ask.profile) == (mode, profile)
    assert ask.gpus == pytest.approx(gpus)


def test_other_resources_are_not_gpus() -> None:
    assert gpu_ask("nvidia.com/hostdev", 1) is None and gpu_ask("cpu", 4) is None


def test_a_tenant_is_a_namespace_a_workload_or_a_label_value() -> None:
    pod = PodUsage("ml", "a-0", Owner("ml", "StatefulSet", "a"), (), 1.0, labels={"app_kubernetes_io_team": "x"})
    assert tenant_key("namespace")(pod) == "ml" and tenant_key("workload")(pod) == "ml/StatefulSet/a"
    # kube-state-metrics exports app.kubernetes.io/team as label_app_kubernetes_io_team
    assert tenant_key("label:app.kubernetes.io/team")(pod) == "x" and tenant_key("label:team")(pod) == "(none)"
    with pytest.raises(ValueError, match="give namespace, workload or label:KEY"):
        tenant_key("label:")
