"""Loading the trace, the shipped orders and the published results; malformed input names file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.advice.replay import openb


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_pods_load_with_five_or_eleven_columns(tmp_path: Path) -> None:
    short = _write(tmp_path / "a.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,2048,1,500\n")
    full = _write(
        tmp_path / "b.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\np0,1000,2048,0,0,,LS,Running,0,1,0\np1,2000,4096,2,1000,G2|T4,LS,Running,0,1,0\n",
    )
    (pod,) = openb.load_pods(short)
    assert (pod.name, pod.shape.cpu_milli, pod.shape.gpu_request, pod.shape.gpu_spec) == ("p0", 1000, 500, "")
    assert [p.shape.gpu_spec for p in openb.load_pods(full)] == ["", "G2|T4"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,cpu_milli,memory_mib,num_gpu\n", r"a\.csv:1: missing column\(s\) gpu_milli"),
        ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,x,1,500\n", r"a\.csv:2: memory_mib 'x'"),
        ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,1,1\np1,1,1,2,500\n", r"a\.csv:3: gpu_milli 500"),
    ],
)
def test_malformed_pod_lists_are_reported_with_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(openb.ReplayInputError, match=message):
        openb.load_pods(_write(tmp_path / "a.csv", text))


def test_orders_expand_tuned_tokens_into_named_copies(tmp_path: Path) -> None:
    pods = openb.load_pods(
        _write(tmp_path / "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,0,0\nb,2,1,1,300\n")
    )
    order = _write(tmp_path / "o.txt", "42\t1 0 1t 1t 0t\n")
    ranks = _write(tmp_path / "n.txt", "42\t2 0 1\n")
    loaded = openb.load_orders(order, ranks, pods, node_count=3)[42]
    assert [p.name for p in loaded.pods] == ["b", "a", "b-tuned-0", "b-tuned-1", "a-tuned-2"]
    assert loaded.pods[2].shape == pods[1].shape
    assert loaded.ranks == (2, 0, 1)


@pytest.mark.parametrize(
    ("order", "ranks", "message"),
    [
        ("42\t0 7\n", "42\t0 1 2\n", r"o\.txt:1: bad pod token '7'"),
        ("42\t0\n", "42\t0 1\n", r"n\.txt:1: expected 3 integer ranks"),
        ("42 0 1\n", "42\t0 1 2\n", r"o\.txt:1: expected 'seed<TAB>tokens'"),
        ("43\t0\n", "42\t0 1 2\n", r"o\.txt:1: seed 43 has no line"),
    ],
)
def test_malformed_orders_are_reported_with_file_and_line(tmp_path: Path, order: str, ranks: str, message: str) -> None:
    pods = openb.load_pods(_write(tmp_path / "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,0,0\n"))
    with pytest.raises(openb.ReplayInputError, match=message):
        openb.load_orders(_write(tmp_path / "o.txt", order), _write(tmp_path / "n.txt", ranks), pods, 3)


def test_traces_folder_defaults_beside_the_checkout_and_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(openb.TRACES_ENV, raising=False)
    assert openb.traces_dir(tmp_path / "repo") == tmp_path / "shared" / "traces"
    monkeypatch.setenv(openb.TRACES_ENV, str(tmp_path / "elsewhere"))
    assert openb.traces_dir() == tmp_path / "elsewhere"


def test_published_results_parse_into_curves(tmp_path: Path) -> None:
    csv = _write(
        tmp_path / "r.csv",
        "workload,sc_policy,tune,seed,total_gpus,0,1,2\nopenb_pod_list_default,06-FGD,1.3,42,6212,0.1,1.2,2.0\n",
    )
    (run,) = openb.load_published(csv)
    assert (run.trace, run.policy, run.seed, run.values) == ("default", "06-FGD", 42, (0.1, 1.2, 2.0))
