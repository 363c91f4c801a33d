"""Real machines, described the way NVML would report them, for the fake ``pynvml``.

The wiring is written out by hand from each machine's documentation (not derived from the
``nvidia-smi topo -m`` fixtures), so comparing the two is a real check.
"""

from __future__ import annotations

from itertools import combinations

from tests.fakes.nvml import GPU, SWITCH, FakeGpu, FakeMachine, FakeMig


def _pcie_by_socket(sockets: list[int], switch_pairs: set[tuple[int, int]] = frozenset()) -> dict[tuple[int, int], str]:  # type: ignore[assignment]
    levels = {}
    for a, b in combinations(range(len(sockets)), 2):
        if (a, b) in switch_pairs:
            levels[a, b] = "PIX"
        else:
            levels[a, b] = "NODE" if sockets[a] == sockets[b] else "SYS"
    return levels


def _gpu_to_gpu(pairs: dict[tuple[int, int], int], buses: list[str]) -> dict[int, list[tuple[int, str | None]]]:
    links: dict[int, list[tuple[int, str | None]]] = {i: [] for i in range(len(buses))}
    for (a, b), count in pairs.items():
        links[a] += [(GPU, buses[b])] * count
        links[b] += [(GPU, buses[a])] * count
    return links


# NVIDIA DGX-1 (Volta): hybrid cube mesh, 6 NVLinks per V100; GPU pairs 0/1, 2/3, 4/5, 6/7 share a PLX switch.
DGX1_BUSES = [f"00000000:{b}:00.0" for b in ("06", "07", "0A", "0B", "85", "86", "89", "8A")]
DGX1_NVLINKS = {
    (0, 1): 1,
    (0, 2): 1,
    (0, 3): 2,
    (0, 4): 2,
    (1, 2): 2,
    (1, 3): 1,
    (1, 5): 2,
    (2, 3): 2,
    (2, 6): 1,
    (3, 7): 1,
    (4, 5): 1,
    (4, 6): 1,
    (4, 7): 2,
    (5, 6): 2,
    (5, 7): 1,
    (6, 7): 2,
}


def dgx1_v100() -> FakeMachine:
    links = _gpu_to_gpu(DGX1_NVLINKS, DGX1_BUSES)
    sockets = [0, 0, 0, 0, 1, 1, 1, 1]
    gpus = [
        FakeGpu(
            "Tesla V100-SXM2-16GB",
            f"GPU-0d1f{i:04x}-v100-dgx1-0000-00000000000{i}",
            DGX1_BUSES[i],
            16160,
            sockets[i],
            links[i],
        )
        for i in range(8)
    ]
    return FakeMachine(gpus, _pcie_by_socket(sockets, {(0, 1), (2, 3), (4, 5), (6, 7)}))


# HGX H100 8-GPU: 18 NVLink4 links per GPU, every one ending at one of four NVSwitch chips.
HGX_H100_BUSES = [f"00000000:{b}:00.0" for b in ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")]


def hgx_h100() -> FakeMachine:
    sockets = [0, 0, 0, 0, 1, 1, 1, 1]
    gpus = [
        FakeGpu(
            "NVIDIA H100 80GB HBM3",
            f"GPU-4c2e{i:04x}-h100-hgx0-0000-00000000000{i}",
            HGX_H100_BUSES[i],
            81559,
            sockets[i],
            [(SWITCH, None)] * 18,
        )
        for i in range(8)
    ]
    return FakeMachine(gpus, _pcie_by_socket(sockets))


# 8x L40S PCIe server: no NVLink at all (NVML answers NotSupported), NODE within a socket, SYS across.
L40S_BUSES = [f"00000000:{b}:00.0" for b in ("17", "31", "4B", "65", "97", "B1", "CA", "E3")]


def l40s_pcie() -> FakeMachine:
    sockets = [0, 0, 0, 0, 1, 1, 1, 1]
    gpus = [
        FakeGpu(
            "NVIDIA L40S",
            f"GPU-1a5e{i:04x}-l40s-pcie-0000-00000000000{i}",
            L40S_BUSES[i],
            46068,
            sockets[i],
            nvlink_supported=False,
        )
        for i in range(8)
    ]
    return FakeMachine(gpus, _pcie_by_socket(sockets))


# One A100 40GB PCIe with MIG enabled, split into 7x 1g.5gb (UUIDs from a real `nvidia-smi -L`).
A100_MIG_UUIDS = [
    "MIG-fb42055e-9e53-5764-9278-438605a3014c",
    "MIG-3d4db13e-c42d-5555-98f4-8b50389791bc",
    "MIG-de819d17-9382-56a2-b9ca-aec36c88014f",
    "MIG-50ab4b32-92db-5567-bf6d-fac646fe29f2",
    "MIG-7b6b1b6e-5101-58a4-b5f5-21563789e62e",
    "MIG-14549027-dd49-5cc0-bca4-55e67011bd85",
    "MIG-37e055e8-8890-567f-a646-ebf9fde3ce7a",
]


def a100_mig() -> FakeMachine:
    gpu = FakeGpu(
        "NVIDIA A100 40GB PCIe",
        "GPU-48aeb943-9458-4282-da24-e5f49e0db44b",
        "00000000:3B:00.0",
        40960,
        0,
        nvlink_supported=False,
        mig=[FakeMig("1g.5gb", u, 4864) for u in A100_MIG_UUIDS],
    )
    return FakeMachine([gpu], {})
