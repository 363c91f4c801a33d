"""Shared-GPU requests as HAMi, Alibaba's GPU share (the openb trace) and Aliyun's gpushare write them.

The pods are the projects' own examples (HAMi ``examples/nvidia/*.yaml`` and ``docs/develop``; the FGD
simulator's ``data/pod_csv_to_yaml.py`` output and ``data/node_yaml``; gpushare's ``samples/1.yaml``,
``docs/userguide.md`` and ``docs/designs/designs.md``), copied as small literals.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from extender.model.gpu_share import ShareRequest, milli_of, share_request


def pod(limits: dict[str, Any] | None = None, annotations: dict[str, Any] | None = None) -> dict[str, Any]:
    container = {"name": "main", "image": "ubuntu:22.04", "resources": {"limits": limits or {}}}
    return {"metadata": {"name": "p", "annotations": annotations or {}}, "spec": {"containers": [container]}}


# -- HAMi: nvidia.com/gpu beside gpumem, gpumem-percentage, gpucores -------------------------------------

HAMI_DEFAULT_USE = """
apiVersion: v1
kind: Pod
metadata:
  name: gpu-pod
spec:
  containers:
    - name: ubuntu-container
      image: ubuntu:22.04
      command: ["bash", "-c", "sleep 86400"]
      resources:
        limits:
          nvidia.com/gpu: 1 # declare how many physical GPUs the pod needs
          nvidia.com/gpumem: 3000 # identifies 3000M GPU memory each physical GPU allocates to the pod
          nvidia.com/gpucores: 30 # identifies 30% GPU GPU core each physical GPU allocates to the pod
"""

HAMI_MEMORY_FRACTION = """
apiVersion: v1
kind: Pod
metadata:
  name: gpu-pod
spec:
  containers:
    - name: ubuntu-container
      image: ubuntu:18.04
      resources:
        limits:
          nvidia.com/gpu: 2 # declare how many physical GPUs the pod needs
          nvidia.com/gpumem-percentage: 50 # identifies 50% GPU memory each physical GPU allocates to the pod
          nvidia.com/gpucores: 30
"""

HAMI_EXCLUSIVE_CARD = """
apiVersion: v1
kind: Pod
metadata:
  name: gpu-pod1
spec:
  containers:
    - name: ubuntu-container
      image: ubuntu:18.04
      resources:
        limits:
          nvidia.com/gpu: 2
          nvidia.com/gpumem-percentage: 100
          nvidia.com/gpucores: 100
"""

HAMI_CARD_TYPE = """
apiVersion: v1
kind: Pod
metadata:
  name: gpu-pod
  annotations:
    nvidia.com/use-gputype: "A100,V100"
spec:
  containers:
    - name: ubuntu-container
      image: ubuntu:18.04
      resources:
        limits:
          nvidia.com/gpu: 2
"""


def test_hami_default_use_asks_3000_mib_and_30_percent_of_the_sms_of_one_gpu() -> None:
    request = share_request(yaml.safe_load(HAMI_DEFAULT_USE))
    assert request == ShareRequest(
        "hami", 'spec.containers[0].resources.limits["nvidia.com/gpumem"]', gpus=1, memory_mib=3000, cores_percent=30
    )
    assert request is not None and milli_of(request, 81920) == 37  # ⌈3000 × 1000 / 81920⌉ = ⌈36.6⌉


def test_hami_memory_fraction_asks_half_of_each_of_two_gpus() -> None:
    request = share_request(yaml.safe_load(HAMI_MEMORY_FRACTION))
    assert request is not None
    assert (request.gpus, request.memory_mib, request.memory_percent, request.cores_percent) == (2, None, 50, 30)
    assert milli_of(request, 40960) == 500  # 50 % × 10


def test_hami_sharing_card_pods_40_60_and_60_40_fill_one_card_between_them() -> None:
    # use_sharing_card.yaml: HAMi puts both on one GPU, so cores below 100 must not add to the milli share
    first = share_request(pod({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 40, "nvidia.com/gpucores": 60}))
    second = share_request(pod({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 60, "nvidia.com/gpucores": 40}))
    assert first is not None and second is not None
    assert milli_of(first, 16384) + milli_of(second, 16384) == 400 + 600 == 1000


def test_hami_exclusive_card_takes_whole_gpus() -> None:
    request = share_request(yaml.safe_load(HAMI_EXCLUSIVE_CARD))
    assert request is not None and (request.gpus, request.memory_percent, request.cores_percent) == (2, 100, 100)
    assert milli_of(request, 24576) == 1000


def test_hami_whole_gpus_alone_are_not_a_share() -> None:
    assert share_request(yaml.safe_load(HAMI_CARD_TYPE)) is None


def test_hami_use_gputype_keeps_models_containing_a_listed_name_ignoring_case() -> None:
    manifest = yaml.safe_load(HAMI_CARD_TYPE)
    manifest["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"] = 8000
    manifest["metadata"]["annotations"]["nvidia.com/nouse-gputype"] = "v100-pcie"
    request = share_request(manifest)
    assert request is not None and request.models == ("A100", "V100")
    assert request.allows("NVIDIA A100-SXM4-80GB") and request.allows("NVIDIA-Tesla V100-SXM2-32GB")
    assert not request.allows("NVIDIA-Tesla V100-PCIE-32GB")  # excluded by nouse-gputype
    assert not request.allows("NVIDIA-Tesla T4")


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        # gpumem wins over the percentage (HAMi's Fit reads the percentage only when gpumem is 0)
        ({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000, "nvidia.com/gpumem-percentage": 50}, (1, 4000, None, 0)),
        # neither memory field: defaultMemory 0 means all of it; cores unasked become 100 only when memory is all
        ({"nvidia.com/gpu": 1, "nvidia.com/gpucores": 20}, (1, None, 100, 20)),
        ({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 100}, (1, None, 100, 100)),
        ({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 30}, (1, None, 30, 0)),
        # 0 in a memory field means unset
        ({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 0, "nvidia.com/gpumem-percentage": 25}, (1, None, 25, 0)),
        # a share without nvidia.com/gpu gets HAMi's defaultGPUNum, 1
        ({"nvidia.com/gpumem": "2048"}, (1, 2048, None, 0)),
    ],
)
def test_hami_defaults_and_precedence(limits: dict[str, Any], expected: tuple[Any, ...]) -> None:
    request = share_request(pod(limits))
    assert request is not None
    assert (request.gpus, request.memory_mib, request.memory_percent, request.cores_percent) == expected


def test_hami_reads_requests_when_there_are_no_limits() -> None:
    manifest = pod()
    manifest["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 8000}}
    request = share_request(manifest)
    assert request is not None and request.memory_mib == 8000
    assert request.source == 'spec.containers[0].resources.requests["nvidia.com/gpumem"]'


def test_hami_containers_with_one_share_add_up_their_gpus() -> None:
    manifest = pod({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000})
    manifest["spec"]["containers"].append(
        {"name": "b", "resources": {"limits": {"nvidia.com/gpu": 2, "nvidia.com/gpumem": 3000}}}
    )
    request = share_request(manifest)
    assert request is not None and request.gpus == 1 + 2


# -- Alibaba GPU share: annotations, as the FGD simulator writes openb pods -----------------------------

OPENB_SHARING_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: openb-pod-0017
  namespace: paib-gpu
  annotations:
    alibabacloud.com/gpu-milli: '460'
    alibabacloud.com/gpu-count: '1'
    alibabacloud.com/gpu-card-model: V100M16|V100M32
spec:
  containers:
  - name: main
    image: tensorflow:latest
    resources:
      requests: {cpu: 8000m, memory: 30720Mi}
      limits: {cpu: 8000m, memory: 30720Mi}
"""


def test_openb_sharing_pod_asks_460_milli_of_one_v100() -> None:
    request = share_request(yaml.safe_load(OPENB_SHARING_POD))
    assert request == ShareRequest(
        "alibaba", 'metadata.annotations["alibabacloud.com/gpu-milli"]', 1, 460, models=("V100M16", "V100M32")
    )
    assert milli_of(request, 16160) == milli_of(request, 81251) == 460  # milli is per GPU, whatever its memory
    assert request.allows("V100M32") and not request.allows("V100") and not request.allows("v100m16")


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({"alibabacloud.com/gpu-milli": "1000", "alibabacloud.com/gpu-count": "8"}, (8, 1000)),  # 8 whole GPUs
        ({"alibabacloud.com/gpu-milli": 50, "alibabacloud.com/gpu-count": 1}, (1, 50)),  # the trace's smallest
        ({}, None),  # a CPU-only openb pod carries no GPU annotation
        ({"alibabacloud.com/gpu-milli": "0", "alibabacloud.com/gpu-count": "0"}, None),
    ],
)
def test_alibaba_counts_and_milli(annotations: dict[str, Any], expected: tuple[int, int] | None) -> None:
    request = share_request(pod(annotations=annotations))
    assert (None if request is None else (request.gpus, request.milli)) == expected


# -- Aliyun gpushare: aliyun.com/gpu-mem in container limits, on one GPU -------------------------------

GPUSHARE_SAMPLE = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: binpack-1
spec:
  replicas: 1
  template:
    metadata:
      labels:
        app: binpack-1
    spec:
      containers:
      - name: binpack-1
        image: cheyang/gpu-player:v2
        resources:
          limits:
            # GiB
            aliyun.com/gpu-mem: 2
"""


def test_gpushare_sample_asks_2_gib_of_one_gpu() -> None:
    template = yaml.safe_load(GPUSHARE_SAMPLE)["spec"]["template"]
    request = share_request(template)
    assert request == ShareRequest(
        "aliyun", 'spec.containers[0].resources.limits["aliyun.com/gpu-mem"]', 1, memory_mib=2048
    )
    assert milli_of(request, 16384) == 125  # 2 × 1024 × 1000 / 16384


def test_gpushare_with_a_mib_device_plugin_reads_the_design_example_of_8138() -> None:
    # designs.md: gpu-mem=8138 on cards of 16276 (the device plugin run with --memory-unit=MiB)
    request = share_request(pod({"aliyun.com/gpu-mem": 8138}), aliyun_unit_mib=1)
    assert request is not None and request.memory_mib == 8138
    assert milli_of(request, 16276) == 500  # 8138 × 1000 / 16276


def test_gpushare_sums_containers_and_takes_the_largest_init_container() -> None:
    manifest = pod({"aliyun.com/gpu-mem": 2})
    manifest["spec"]["containers"].append({"name": "b", "resources": {"limits": {"aliyun.com/gpu-mem": 1}}})
    manifest["spec"]["initContainers"] = [{"name": "warm", "resources": {"limits": {"aliyun.com/gpu-mem": 4}}}]
    request = share_request(manifest)
    assert request is not None and request.memory_mib == max(2 + 1, 4) * 1024
    manifest["spec"]["initContainers"][0]["restartPolicy"] = "Always"  # a sidecar runs beside them: it adds
    request = share_request(manifest)
    assert request is not None and request.memory_mib == (2 + 1 + 4) * 1024


# -- one share on one GPU, in milli ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "gpu_mib", "milli"),
    [
        (ShareRequest("hami", "", memory_mib=20000), 81920, 245),  # ⌈20000 × 1000 / 81920⌉ = ⌈244.1⌉
        (ShareRequest("hami", "", memory_percent=25), 81920, 250),  # 25 × 10
        (ShareRequest("aliyun", "", memory_mib=8 * 1024), 16 * 1024, 500),  # 8192 × 1000 / 16384
        (ShareRequest("aliyun", "", memory_mib=8 * 1024), 16160, 507),  # V100 16 GB: ⌈8192000 / 16160⌉ = ⌈506.9⌉
        (ShareRequest("alibaba", "", milli=350), 15109, 350),
        (ShareRequest("hami", "", memory_mib=3000, cores_percent=100), 81920, 1000),  # cores 100: the card alone
        (ShareRequest("hami", "", memory_mib=12000), 11441, 1049),  # ⌈1048.8⌉ > 1000: does not fit this card
    ],
)
def test_milli_of_one_gpu_rounds_up(request_: ShareRequest, gpu_mib: int, milli: int) -> None:
    assert milli_of(request_, gpu_mib) == milli


def test_milli_of_needs_a_gpu_with_memory() -> None:
    with pytest.raises(ValueError, match="gpu_memory_mib must be positive"):
        milli_of(ShareRequest("hami", "", memory_mib=1), 0)
