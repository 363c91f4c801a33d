"""The MIG profile table: each product's profiles as NVIDIA documents them, and the lookups built on it."""

from __future__ import annotations

import pytest

from extender.model.mig_profiles import MIG_PRODUCTS, all_profiles, mig_product_for, profile_memory_gb


@pytest.mark.parametrize(
    ("label", "memory_gb", "product", "smallest", "largest"),
    [
        ("NVIDIA-A30", None, "A30", "1g.6gb", "4g.24gb"),
        ("NVIDIA-A100-SXM4-40GB", None, "A100 40GB", "1g.5gb", "7g.40gb"),
        ("NVIDIA-A100-SXM4-80GB", None, "A100 80GB", "1g.10gb", "7g.80gb"),
        ("NVIDIA-H100-80GB-HBM3", None, "H100 80GB", "1g.10gb", "7g.80gb"),
        ("NVIDIA-H100-NVL", 94, "H100 NVL / H100 94GB", "1g.12gb", "7g.94gb"),
        ("NVIDIA-GH200-480GB", None, "H100 96GB / GH200", "1g.12gb", "7g.96gb"),
        ("NVIDIA-GH200-144G-HBM3e", None, "GH200 144GB HBM3e", "1g.18gb", "7g.144gb"),
        ("NVIDIA-H200", None, "H200 141GB / H200 NVL", "1g.18gb", "7g.141gb"),
        ("NVIDIA-B200", None, "B200", "1g.23gb", "7g.180gb"),
        ("Tesla-V100-SXM2-16GB", None, None, None, None),
    ],
)
def test_each_product_label_finds_its_profiles(
    label: str, memory_gb: float | None, product: str | None, smallest: str | None, largest: str | None
) -> None:
    found = mig_product_for(label, memory_gb)
    assert (found.name if found else None) == product
    if found:
        assert (found.profiles[0].name, found.profiles[-1].name) == (smallest, largest)


def test_every_profile_s_memory_is_at_most_its_gpus_and_counts_fill_at_most_the_gpu() -> None:
    for product in MIG_PRODUCTS:
        whole = max(p.slices for p in product.profiles)  # 7 slices (4 on A30 and RTX PRO)
        for p in product.profiles:
            assert p.memory_gb <= product.memory_gb, (product.name, p.name)
            # e.g. 3g.40gb × 2 = 6 of 7 slices; 1g.10gb × 7 = 7 of 7.
            assert p.slices * p.count <= whole, (product.name, p.name)


def test_every_profile_once_smallest_first_and_memory_by_name() -> None:
    names = all_profiles()
    assert names[:3] == ("1g.5gb", "1g.6gb", "1g.10gb") and names[-1] == "7g.186gb" and len(names) == len(set(names))
    assert (profile_memory_gb("3g.40gb"), profile_memory_gb("gpu")) == (40, 0)
