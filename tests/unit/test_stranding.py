"""The stranding term: F against the learned mix written out by hand, its level, and where a share goes."""

from __future__ import annotations

import math

import pytest

from extender.model.gpu_share import ShareRequest
from extender.model.pods import PodRequest
from extender.scoring.stranding import (
    NEUTRAL_LEVEL,
    class_key,
    copies,
    fragmentation,
    level,
    pods,
    strand,
    usable,
)
from extender.scoring.workload import Mix, MixLearner, TypicalPod, learned_from, spec_of


def share(milli: int, models: tuple[str, ...] = ()) -> ShareRequest:
    return ShareRequest("alibaba", "", 1, milli, models=models)


# Half the pods want 500 milli of one GPU and 4 CPUs, a quarter a whole GPU, a quarter no GPU.
MIX = Mix(1, (TypicalPod(4000, 1, share(500), 0.5), TypicalPod(8000, 1, None, 0.25), TypicalPod(2000, 0, None, 0.25)))


@pytest.mark.parametrize(
    ("cpu", "free", "expected"),
    [
        # 500-pods: strand the 300 (too small); whole-GPU pods: no idle GPU, all 1100 stranded; CPU pods: all 1100
        (16000, (800, 300), 0.5 * 300 + 0.25 * 1100 + 0.25 * 1100),
        # an idle GPU serves both GPU specs: only the 300 is stranded for the 500-pods
        (16000, (1000, 300), 0.5 * 300 + 0.25 * 300 + 0.25 * 1300),
        # 6000 CPUs: the whole-GPU pod (8000 CPUs) cannot come, so every free milli is stranded for it
        (6000, (1000, 300), 0.5 * 300 + 0.25 * 1300 + 0.25 * 1300),
        # unknown CPU (a node that does not say) meets every CPU need
        (None, (1000, 300), 0.5 * 300 + 0.25 * 300 + 0.25 * 1300),
    ],
)
def test_fragmentation_is_the_free_milli_each_spec_cannot_use_weighted_by_the_mix(
    cpu: int | None, free: tuple[int, ...], expected: float
) -> None:
    assert fragmentation(MIX, "G2", None, cpu, free) == pytest.approx(expected)


def test_a_model_the_spec_does_not_allow_strands_everything_for_it() -> None:
    typed = Mix(2, (TypicalPod(0, 1, share(500, ("V100M16",)), 1.0),))
    assert fragmentation(typed, "G2", None, 8000, (1000, 1000)) == 2000
    assert fragmentation(typed, "V100M16", None, 8000, (1000, 1000)) == 0


@pytest.mark.parametrize(
    ("delta", "expected"), [(0.0, 50), (40.0, 50), (41.0, 51), (-1.0, 49), (1000.0, 73), (-5000.0, 0)]
)
def test_the_level_is_fgds_quantised_sigmoid(delta: float, expected: int) -> None:
    assert level(delta) == expected == int(100 / (1 + math.exp(-delta / 1000)))
    assert level(0.0) == NEUTRAL_LEVEL


def test_a_share_goes_on_the_least_free_gpu_that_fits_and_the_level_is_the_drop_in_f() -> None:
    request = PodRequest(gpus=1, share=share(500), cpu_milli=4000)
    found = strand(MIX, "G2", None, 16000, (1000, 600, 500), request)
    assert found is not None and found.gpus == (2,) and found.free_after == (1000, 600, 0)
    before = fragmentation(MIX, "G2", None, 16000, (1000, 600, 500))
    after = fragmentation(MIX, "G2", None, 12000, (1000, 600, 0))
    assert found.delta == pytest.approx(before - after) and found.level == level(before - after)
    assert strand(MIX, "G2", None, 16000, (400, 300), request) is None


def test_whole_gpus_take_the_lowest_index_idle_ones() -> None:
    found = strand(MIX, "G2", None, 16000, (300, 1000, 1000, 1000), PodRequest(gpus=2, cpu_milli=1000))
    assert found is not None and found.gpus == (1, 2) and found.free_after == (300, 0, 0, 1000)


def test_nodes_with_equal_class_keys_get_equal_levels() -> None:
    request = PodRequest(gpus=1, share=share(500), cpu_milli=4000)
    a, b = (16000, (1000, 600, 500)), (15000, (500, 1000, 600))
    room = (4000, 0)  # what the request takes of the node's CPU and memory
    assert class_key(MIX, "G2", None, a[1], (a[0], None), room) == class_key(MIX, "G2", None, b[1], (b[0], None), room)
    assert strand(MIX, "G2", None, *a, request).level == strand(MIX, "G2", None, *b, request).level  # type: ignore[union-attr]


# A node's memory strands its GPUs as its CPU does: the 500-pods ask 32 GiB of it, the whole-GPU pods 8 GiB.
MEMORY_MIX = Mix(3, (TypicalPod(4000, 1, share(500), 0.5, 32768), TypicalPod(4000, 1, None, 0.5, 8192)))


@pytest.mark.parametrize(
    ("memory", "expected"),
    [
        # 64 GiB free: both specs come; the 500-pods cannot use the 300, the whole-GPU pods the 800 and the 300
        (65536, 0.5 * 300 + 0.5 * 1100),
        # 16 GiB free: no 500-pod can come, so all 1100 is stranded for them; whole-GPU pods as before
        (16384, 0.5 * 1100 + 0.5 * 1100),
        # 4 GiB free: neither comes, everything is stranded for both
        (4096, 0.5 * 1100 + 0.5 * 1100),
        # unknown memory (a node that does not say) meets every memory need
        (None, 0.5 * 300 + 0.5 * 1100),
    ],
)
def test_a_node_without_the_memory_a_spec_asks_strands_all_its_free_milli_for_it(
    memory: int | None, expected: float
) -> None:
    assert fragmentation(MEMORY_MIX, "G2", None, 16000, (800, 300), memory) == pytest.approx(expected)


def test_a_pod_that_uses_up_a_nodes_memory_strands_what_its_gpus_leave() -> None:
    # 40 GiB and two idle GPUs free: 40 GiB holds one 500-pod (32 GiB), which can use one idle GPU, so the
    # other is stranded for them; it holds five whole-GPU pods (8 GiB), enough for both GPUs:
    # F before = 0.5 × 1000 + 0.5 × 0 = 500. A whole-GPU pod asking 36 GiB leaves 4 GiB, below both
    # specs' needs, so the other idle GPU is stranded for both: F after = 0.5 × 1000 + 0.5 × 1000 = 1000,
    # Δ = 500 − 1000
    heavy = strand(MEMORY_MIX, "G2", None, 16000, (1000, 1000), PodRequest(gpus=1, memory_mib=36864), 40960)
    assert heavy is not None and heavy.delta == pytest.approx(-500) and heavy.level == level(-500) == 37
    # the same pod asking 4 GiB leaves 36 GiB: one 500-pod still comes, and one GPU is left for it, so
    # nothing is stranded: F after = 0, Δ = 500 − 0 (it took the GPU the 500-pods' memory could not reach)
    light = strand(MEMORY_MIX, "G2", None, 16000, (1000, 1000), PodRequest(gpus=1, memory_mib=4096), 40960)
    assert light is not None and light.delta == pytest.approx(500) and light.level == level(500) == 62


# One spec: a whole GPU and 47 GiB of the node's memory (the openb trace's most common GPU pod).
HUNGRY = Mix(4, (TypicalPod(4000, 1, None, 1.0, 48128),))


@pytest.mark.parametrize(
    ("memory", "free", "expected"),
    [
        # 192 GiB holds 4 pods of 47 GiB (4 × 48128 = 192512 ≤ 196608): every idle GPU is usable
        (196608, (1000, 1000, 1000, 1000), 0),
        # 96 GiB holds 2: they take 2 of the 4 idle GPUs, the other 2 are stranded
        (98304, (1000, 1000, 1000, 1000), 2000),
        # 96 GiB, but only one idle GPU and a 300 too small: the 300 is stranded, the idle GPU is not
        (98304, (1000, 300), 300),
        # 40 GiB holds none: all 2300 free milli are stranded
        (40960, (1000, 1000, 300), 2300),
        # unknown memory holds as many as the node has GPUs
        (None, (1000, 1000, 1000, 1000), 0),
    ],
)
def test_a_spec_can_use_only_as_many_gpus_as_the_nodes_memory_holds_pods_of_it(
    memory: int | None, free: tuple[int, ...], expected: float
) -> None:
    assert fragmentation(HUNGRY, "G2", None, 96000, free, memory) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("fitting", "gpus", "pods", "expected"),
    [
        ([300, 1000, 700], 1, 2, 1000 + 700),  # two pods take the two roomiest GPUs
        ([300, 1000, 700], 1, 5, 2000),  # more pods than GPUs: all of them
        ([1000, 1000, 1000], 2, 1, 2000),  # one 2-GPU pod takes two
        ([1000], 2, 3, 0),  # a 2-GPU pod does not fit one GPU
        ([1000, 1000], 1, 0, 0),  # no pod comes
    ],
)
def test_usable_is_what_the_pods_take_of_the_roomiest_fitting_gpus(
    fitting: list[int], gpus: int, pods: int, expected: int
) -> None:
    assert usable(fitting, gpus, pods) == expected


def test_copies_count_per_pod_count_the_needs_held_and_pods_reads_a_need_back() -> None:
    # 100 GiB (102400 MiB) on a 4-GPU node, needs 8, 32 and 128 GiB: one pod of each fits up to
    # 102400 (8 and 32 GiB: 2 needs), two up to 51200 (2), three up to 34133 (2: 3 × 32768 = 98304),
    # four up to 25600 (only 8 GiB: 1)
    held = copies((8192, 32768, 131072), 102400, 4)
    assert held == (2, 2, 2, 1)
    # 8 GiB: 12 pods, counted up to the node's 4 GPUs; 32 GiB: 3; 128 GiB: none
    assert [pods(held, need) for need in range(3)] == [4, 3, 0]
    assert copies((8192, 32768), None, 4) == (2, 2, 2, 2) and pods(copies((8192,), None, 4), 0) == 4


def test_nodes_apart_only_in_how_many_pods_their_memory_holds_have_different_class_keys() -> None:
    room = (1000, 4096)
    # 72 and 80 GiB (68 and 76 after the 4 GiB asked) each hold two 32 GiB pods, as many as the node has
    # GPUs, before and after: the same key, the same level
    rich = class_key(MEMORY_MIX, "G2", None, (1000, 1000), (16000, 73728), room)
    also_rich = class_key(MEMORY_MIX, "G2", None, (1000, 1000), (16000, 81920), room)
    # 40 GiB holds one (36 after: still one): another key, and F sees the GPU it strands
    poor = class_key(MEMORY_MIX, "G2", None, (1000, 1000), (16000, 40960), room)
    assert rich == also_rich != poor
    request = PodRequest(gpus=1, memory_mib=4096, cpu_milli=1000)
    levels = [strand(MEMORY_MIX, "G2", None, 16000, (1000, 1000), request, m) for m in (73728, 81920, 40960)]
    assert [found.level for found in levels if found is not None] == [NEUTRAL_LEVEL, NEUTRAL_LEVEL, level(500)]


def test_the_learner_keeps_each_specs_memory_figures_apart_in_proportion() -> None:
    learner = MixLearner()
    asks = [PodRequest(gpus=1, cpu_milli=4000, memory_mib=m) for m in (8192, 8192, 8192, 16384)]
    for n, request in enumerate(asks):
        learner.observe(f"ns/p{n}", request)
    # one spec (4 CPUs, a whole GPU) seen 4 times: 3 of 8 GiB, 1 of 16 GiB
    assert [(p.memory_mib, p.probability) for p in learner.current.pods] == [(8192, 0.75), (16384, 0.25)]


def test_the_learner_counts_each_pod_once_and_renews_as_the_count_doubles() -> None:
    learner = MixLearner()
    request = PodRequest(gpus=1, share=ShareRequest("alibaba", "field", 1, 500), cpu_milli=4000)
    renewed = [learner.observe(f"ns/p{n}", request) for n in range(9)]
    assert renewed == [True, True, False, True, False, False, False, True, False]  # after 1, 2, 4, 8 pods
    assert not learner.observe("ns/p0", request) and learner.observed == 9
    assert learner.current.version == 4 and learner.current.pods == (TypicalPod(4000, 1, share(500), 1.0),)
    assert spec_of(request) == (4000, 1, share(500))  # the field it came from is not part of the spec


def test_a_mix_learned_at_once_weighs_specs_by_their_count() -> None:
    small, whole = PodRequest(gpus=1, share=share(300)), PodRequest(gpus=1)
    mix = learned_from([("a", small), ("b", small), ("c", small), ("d", whole)])
    assert [(p.share, p.probability) for p in mix.pods] == [(share(300), 0.75), (None, 0.25)]


def test_a_typed_spec_of_a_rare_shape_is_left_out_of_the_mix_and_a_common_one_kept() -> None:
    common = [(f"c{n}", PodRequest(gpus=1, share=share(500))) for n in range(19)]
    typed_common = [("t", PodRequest(gpus=1, share=share(500, ("V100M16",))))]
    rare = [("r", PodRequest(gpus=1, share=share(130, ("A10",))))]  # 1 pod in 21: its shape is in the rarest 5 %
    mix = learned_from(common + typed_common + rare)
    assert [(p.share, round(p.probability, 3)) for p in mix.pods] == [
        (share(500), round(19 / 20, 3)),
        (share(500, ("V100M16",)), round(1 / 20, 3)),
    ]
    untyped_rare = learned_from([*common, ("u", PodRequest(gpus=1, share=share(130)))])
    # the rare-shape rule is for typed specs only (and with under 100 pods the 1 % cut takes nothing)
    assert share(130) in [p.share for p in untyped_rare.pods]


def test_a_pod_asking_k_gpus_counts_one_kth_in_the_mix() -> None:
    one, octet = PodRequest(gpus=1, cpu_milli=4000), PodRequest(gpus=8, cpu_milli=32000)
    mix = learned_from([("a", one), ("b", one), ("c", octet), ("d", octet)])
    # weights 2 × 1 and 2 × 1/8 = 0.25, of 2.25 in all
    assert [p.gpus for p in mix.pods] == [1, 8]
    assert [p.probability for p in mix.pods] == pytest.approx([2 / 2.25, 0.25 / 2.25])


def test_the_rarest_one_percent_of_pods_is_left_out_once_a_hundred_are_seen() -> None:
    common, odd = PodRequest(gpus=1, cpu_milli=4000), PodRequest(gpus=1, cpu_milli=60000)
    seen = [(f"c{n}", common) for n in range(98)]
    # 99 pods: 98 of one spec cover 98.99 %, short of 99 %, so the odd spec stays
    assert [p.cpu_milli for p in learned_from([*seen, ("o", odd)]).pods] == [4000, 60000]
    # 151 pods: 150 of one spec cover 99.3 %, so the odd one is the rarest 1 % and goes
    more = [(f"c{n}", common) for n in range(150)]
    assert [(p.cpu_milli, p.probability) for p in learned_from([*more, ("o", odd)]).pods] == [(4000, 1.0)]
