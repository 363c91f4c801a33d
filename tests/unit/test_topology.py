"""The topology model: derived views, fingerprint, and an exact versioned JSON round trip."""

from __future__ import annotations

import dataclasses
from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.model.topology import Gpu, GpuTopology, Link, MigInstance, PcieLevel, TopologyError

LEVELS = st.one_of(st.none(), st.sampled_from(list(PcieLevel)))
TEXT = st.one_of(st.none(), st.text(min_size=1, max_size=12))
SMALL_INT = st.one_of(st.none(), st.integers(min_value=0, max_value=2**20))


@st.composite
def topologies(draw: st.DrawFn) -> GpuTopology:
    n = draw(st.integers(min_value=1, max_value=10))
    indices = sorted(draw(st.sets(st.integers(min_value=0, max_value=40), min_size=n, max_size=n)))
    gpus = []
    for i in indices:
        mig = draw(
            st.one_of(
                st.none(),
                st.lists(
                    st.builds(MigInstance, st.sampled_from(["1g.5gb", "3g.40gb"]), TEXT, SMALL_INT), max_size=3
                ).map(tuple),
            )
        )
        gpus.append(
            Gpu(
                i,
                draw(TEXT),
                draw(TEXT),
                draw(TEXT),
                draw(SMALL_INT),
                draw(st.one_of(st.none(), st.integers(0, 7))),
                mig,
            )
        )
    links = [Link(a, b, draw(st.integers(0, 18)), draw(LEVELS)) for a, b in combinations(indices, 2)]
    return GpuTopology(gpus, links, clique=draw(TEXT))


@given(topologies())
def test_json_round_trip_is_exact(topo: GpuTopology) -> None:
    assert GpuTopology.from_json(topo.to_json()) == topo
    assert GpuTopology.from_json(topo.to_json(indent=2)).to_json() == topo.to_json()


@given(topologies())
def test_fingerprint_ignores_uuids_bus_ids_and_products(topo: GpuTopology) -> None:
    renamed = GpuTopology(
        [dataclasses.replace(g, uuid=f"GPU-other-{g.index}", pci_bus_id=None, product="Other") for g in topo.gpus],
        topo.links,
    )
    assert renamed.fingerprint == topo.fingerprint


def test_fingerprint_changes_with_the_wiring() -> None:
    a = GpuTopology([Gpu(0), Gpu(1)], [Link(0, 1, 2, PcieLevel.NODE)])
    b = GpuTopology([Gpu(0), Gpu(1)], [Link(0, 1, 1, PcieLevel.NODE)])
    c = GpuTopology([Gpu(0), Gpu(1)], [Link(0, 1, 2, PcieLevel.SYS)])
    assert len({a.fingerprint, b.fingerprint, c.fingerprint}) == 3


def test_every_pair_has_one_edge_and_missing_pairs_are_unknown() -> None:
    topo = GpuTopology([Gpu(0), Gpu(1), Gpu(2)], [Link(1, 0, 4, PcieLevel.PIX)])
    assert topo.graph.number_of_edges() == 3
    assert topo.link(0, 1) == Link(0, 1, 4, PcieLevel.PIX), "links are stored with a < b"
    assert topo.link(2, 0) == Link(0, 2, 0, None)


def test_nvlink_islands_are_components_largest_first_and_numa_groups_keep_unknowns() -> None:
    topo = GpuTopology(
        [Gpu(0, numa_node=0), Gpu(1, numa_node=0), Gpu(2, numa_node=1), Gpu(3), Gpu(4, numa_node=1)],
        [Link(0, 1, 4), Link(2, 4, 2), Link(4, 3, 1)],
    )
    assert topo.nvlink_islands() == [[2, 3, 4], [0, 1]]
    assert topo.numa_groups() == {0: [0, 1], 1: [2, 4], None: [3]}


def test_a_hand_written_document_needs_only_indices_and_links() -> None:
    topo = GpuTopology.from_json(
        '{"gpus": [{"index": 0}, {"index": 1}], "links": [{"a": 0, "b": 1, "nvlinks": 2, "pcie": "node"}]}'
    )
    assert topo.link(0, 1) == Link(0, 1, 2, PcieLevel.NODE)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ('{"version": 7, "gpus": [{"index": 0}]}', "version 7 is not supported"),
        ('{"gpus": []}', "non-empty list 'gpus'"),
        ('{"gpus": [{"index": 0}, {"index": 0}]}', "duplicate GPU index"),
        ('{"gpus": [{"index": "0"}]}', "gpus[0]: 'index' must be int"),
        ('{"gpus": [{"index": true}]}', "gpus[0]: 'index' must be int"),
        ('{"gpus": [{"index": 0}], "links": [{"a": 0, "b": 3}]}', "names a GPU that is not in the topology"),
        (
            '{"gpus": [{"index": 0}, {"index": 1}], "links": [{"a": 0, "b": 1, "pcie": "QPI"}]}',
            "pcie 'QPI' is not one of",
        ),
        ('{"gpus": [{"index": 0}, {"index": 1}], "links": [{"a": 0, "b": 1}, {"a": 1, "b": 0}]}', "listed twice"),
        ("[1, 2]", "must be an object"),
    ],
)
def test_bad_documents_say_what_is_wrong(doc: str, message: str) -> None:
    with pytest.raises(TopologyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        GpuTopology.from_json(doc)


def _pair(vendor: str) -> GpuTopology:
    return GpuTopology([Gpu(0), Gpu(1)], [Link(0, 1, 7, PcieLevel.SYS)], vendor=vendor)


@pytest.mark.parametrize(("vendor", "fabric"), [("nvidia", "nvlink"), ("amd", "xgmi")])
def test_the_document_names_the_link_kind_and_counts_links_under_a_vendor_neutral_field(
    vendor: str, fabric: str
) -> None:
    doc = _pair(vendor).to_dict()
    assert doc["fabric"] == fabric
    # gpu_links is the count; nvlinks, its old name, is written beside it so that a server from before
    # the rename still sees the XGMI or NVLink pair as linked during a mixed-version rollout
    assert doc["links"] == [{"a": 0, "b": 1, "gpu_links": 7, "nvlinks": 7, "pcie": "SYS"}]


def test_documents_with_either_name_read_alike_and_names_that_disagree_are_refused() -> None:
    old = '{"gpus": [{"index": 0}, {"index": 1}], "links": [{"a": 0, "b": 1, "nvlinks": 7}], "vendor": "amd"}'
    new = '{"gpus": [{"index": 0}, {"index": 1}], "links": [{"a": 0, "b": 1, "gpu_links": 7}], "vendor": "amd"}'
    assert GpuTopology.from_json(old).link(0, 1).nvlinks == GpuTopology.from_json(new).link(0, 1).nvlinks == 7
    both = '{"gpus": [{"index": 0}, {"index": 1}], "links": [{"a": 0, "b": 1, "gpu_links": 7, "nvlinks": 4}]}'
    with pytest.raises(TopologyError, match="gpu_links 7 and nvlinks 4 disagree"):
        GpuTopology.from_json(both)
