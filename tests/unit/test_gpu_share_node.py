"""What nodes offer for sharing: the openb node list, HAMi's register annotation, gpushare's capacity."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from extender.model.gpu_share_node import NodeShareError, SharedGpu, node_gpu_shares

OPENB_NODE = """
apiVersion: v1
kind: Node
metadata:
  labels:
    alibabacloud.com/gpu-card-model: P100
    kubernetes.io/hostname: openb-node-0000
  name: openb-node-0000
status:
  allocatable: {alibabacloud.com/gpu-count: '2', alibabacloud.com/gpu-milli: '2000', cpu: 64000m, memory: 262144Mi}
  capacity: {alibabacloud.com/gpu-count: '2', alibabacloud.com/gpu-milli: '2000', cpu: 64000m, memory: 262144Mi}
"""

HAMI_LEGACY = (  # docs/develop/protocol.md
    "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
    "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
)
HAMI_JSON = (  # pkg/device/nvidia tests; Go drops a false health and a 0 index
    '[{"id":"GPU-0","count":5,"devmem":8192,"devcore":100,"type":"NVIDIA-Tesla P4","numa":0,"health":true},'
    '{"id":"GPU-1","index":1,"count":5,"devmem":8192,"devcore":100,"type":"NVIDIA-Tesla P4"}]'
)


def hami_node(register: str) -> dict[str, Any]:
    return {"metadata": {"annotations": {"hami.io/node-nvidia-register": register}}}


def test_openb_node_offers_two_p100s_of_1000_milli() -> None:
    assert node_gpu_shares(yaml.safe_load(OPENB_NODE)) == (
        SharedGpu("alibaba", 0, "P100"),
        SharedGpu("alibaba", 1, "P100"),
    )


def test_hami_node_register_annotation_in_both_formats() -> None:
    legacy = node_gpu_shares(hami_node(HAMI_LEGACY))
    assert [(g.index, g.model, g.memory_mib, g.split, g.healthy) for g in legacy] == [
        (0, "NVIDIA-Tesla V100-PCIE-32GB", 32768, 10, True),
        (1, "NVIDIA-Tesla V100-PCIE-32GB", 32768, 10, True),
    ]
    current = node_gpu_shares(hami_node(HAMI_JSON))
    assert current == (
        SharedGpu("hami", 0, "NVIDIA-Tesla P4", 8192, 5, 100, "GPU-0", True),
        SharedGpu("hami", 1, "NVIDIA-Tesla P4", 8192, 5, 100, "GPU-1", False),
    )


def test_gpushare_node_splits_its_gpu_mem_evenly_over_its_gpus() -> None:
    node = {"status": {"capacity": {"aliyun.com/gpu-mem": "30", "aliyun.com/gpu-count": "2"}}}
    assert [g.memory_mib for g in node_gpu_shares(node)] == [30 // 2 * 1024] * 2  # 15 GiB: a floored 16 GB card


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ({"status": {"capacity": {"aliyun.com/gpu-mem": "30"}}}, 'capacity["aliyun.com/gpu-count"]: missing or 0'),
        ({"status": {"allocatable": {"alibabacloud.com/gpu-count": "-2"}}}, "gpu-count\"]: '-2' is negative"),
        (hami_node("[{"), 'metadata.annotations["hami.io/node-nvidia-register"]: not JSON'),
        (hami_node("GPU-0,10,32768:"), 'register"]: a device has neither 7 nor 9 comma-separated fields'),
        (hami_node('[{"devmem": "lots"}]'), "register\"][0].devmem: 'lots' is not a number"),
    ],
)
def test_a_malformed_node_is_refused_naming_its_field(node: dict[str, Any], message: str) -> None:
    with pytest.raises(NodeShareError) as caught:
        node_gpu_shares(node)
    assert message in str(caught.value)
