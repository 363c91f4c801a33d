"""`gpu-advisor replay` refuses bad input with one line naming the problem and exit 2, never a traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gpu_advisor.cli import main

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,2,G2\nn1,16000,131072,1,T4\n"
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,4000,8192,1,500,\np1,8000,16384,1,1000,T4\n"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A two-node cluster and two pods, good; each case spoils one thing."""
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    (tmp_path / "orders").mkdir()
    (tmp_path / "orders" / "pods.order.txt").write_text("42\t1 0 0t\n")
    (tmp_path / "orders" / "pods.nodes.txt").write_text("42\t1 0\n")
    return tmp_path


def _base(d: Path) -> list[str]:
    return ["replay", "--nodes", str(d / "nodes.csv"), "--pods", str(d / "pods.csv"), "--policies", "BestFit"]


def _write(name: str, text: str) -> Callable[[Path], None]:
    def spoil(folder: Path) -> None:
        (folder / name).write_text(text)

    return spoil


CASES: list[tuple[str, Callable[[Path], None], Callable[[Path], list[str]], str]] = [
    ("a missing node file", lambda d: (d / "nodes.csv").unlink(), _base, "nodes.csv: cannot read"),
    ("a node CSV without a model column", _write("nodes.csv", "sn,cpu_milli,memory_mib,gpu\nn0,1,1,1\n"), _base,
     "nodes.csv:1: missing column(s) model"),
    ("a pod CSV with a word for a number",
     _write("pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,x,1,1,1\n"), _base,
     "pods.csv:2: cpu_milli 'x' is not an integer"),
    ("a share over 1000 milli",
     _write("pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1500\n"), _base,
     "pods.csv:2: gpu_milli 1500 with num_gpu 1"),
    ("an unknown policy", lambda d: None, lambda d: [*_base(d)[:-1], "BestFit,Tetris"],
     "--policies: no policy 'Tetris'"),
    ("a seed that is not a number", lambda d: None, lambda d: [*_base(d), "--seeds", "42,x"],
     "--seeds: 'x' is not a seed"),
    ("an empty seed range", lambda d: None, lambda d: [*_base(d), "--seeds", "51-42"],
     "--seeds: the range 51-42 is empty"),
    ("zero processes", lambda d: None, lambda d: [*_base(d), "--jobs", "0"],
     "--jobs: '0' is not a number of processes"),
    ("a seed with no shipped order", lambda d: None,
     lambda d: [*_base(d), "--orders", str(d / "orders"), "--seeds", "42,43"],
     "no arrival order for seed 43 (shipped seeds: 42)"),
    ("an orders folder without this pod file's orders", lambda d: (d / "orders" / "pods.nodes.txt").unlink(),
     lambda d: [*_base(d), "--orders", str(d / "orders")], "pods.nodes.txt: missing"),
    ("an order naming a pod the file lacks", _write("orders/pods.order.txt", "42\t0 7\n"),
     lambda d: [*_base(d), "--orders", str(d / "orders")], "pods.order.txt:1: bad pod token '7' (2 pods)"),
    ("ranks for the wrong number of nodes", _write("orders/pods.nodes.txt", "42\t0 1 2\n"),
     lambda d: [*_base(d), "--orders", str(d / "orders")], "pods.nodes.txt:1: expected 2 integer ranks"),
    ("a JSON file in a folder that does not exist", lambda d: None,
     lambda d: [*_base(d), "--json", str(d / "no" / "r.json")], "--json: "),
    ("pods YAML that does not parse", _write("pods.yaml", "kind: Pod\n  spec: [\n"),
     lambda d: [*_base(d)[:3], "--pods", str(d / "pods.yaml")], "pods.yaml: not YAML or JSON"),
    ("a YAML file with no Pod in it", _write("pods.yaml", "kind: Node\nmetadata: {name: n}\n"),
     lambda d: [*_base(d)[:3], "--pods", str(d / "pods.yaml")], "pods.yaml: no Pod objects"),
    ("a Pod with a malformed share", _write("pods.yaml", "kind: Pod\nmetadata:\n  name: p\n  annotations:\n"
     "    alibabacloud.com/gpu-milli: '-5'\n    alibabacloud.com/gpu-count: '1'\nspec: {containers: []}\n"),
     lambda d: [*_base(d)[:3], "--pods", str(d / "pods.yaml")], 'gpu-milli"]: \'-5\' is negative'),
    ("a snapshot that is not one", _write("snap.yaml", "just words\n"),
     lambda d: ["replay", "--nodes", str(d / "snap.yaml"), "--pods", str(d / "pods.csv")],
     "snap.yaml: a snapshot must"),
    ("--compare-published for a trace the paper did not run", lambda d: None,
     lambda d: [*_base(d), "--compare-published"], "--compare-published: "),
    ("a limit file that is missing", lambda d: None,
     lambda d: [*_base(d), "--limit", str(d / "limit.json")], "limit.json: cannot read"),
    ("a limit file that is not JSON", _write("limit.json", "42: 3.09\n"),
     lambda d: [*_base(d), "--limit", str(d / "limit.json")], "limit.json: not JSON"),
    ("a limit that is not a percentage", _write("limit.json", '{"seeds": {"42": 130}}'),
     lambda d: [*_base(d), "--limit", str(d / "limit.json")], "seed 42: 130 is not a percentage"),
    ("a limit for another trace", _write("limit.json", '{"trace": "default", "seeds": {"42": 3.09}}'),
     lambda d: [*_base(d), "--limit", str(d / "limit.json")], "the bound is for trace 'default', the pods are 'pods'"),
    ("a limit sharing no seed with the replay", _write("limit.json", '{"seeds": {"7": 3.09}}'),
     lambda d: [*_base(d), "--limit", str(d / "limit.json")], "no bound for any replayed seed (the file has seeds 7)"),
    ("a hold limit of zero", _write("policy.yaml", "reserve_hold_limit_s: 0\n"),
     lambda d: [*_base(d), "--policy", str(d / "policy.yaml")],
     "reserve_hold_limit_s: Input should be greater than 0"),
    ("a hold limit that is a word", _write("policy.yaml", "reserve_hold_limit_s: soon\n"),
     lambda d: [*_base(d), "--policy", str(d / "policy.yaml")], "reserve_hold_limit_s"),
    ("a scoring policy file that is missing", lambda d: None,
     lambda d: [*_base(d), "--policy", str(d / "policy.yaml")], "is neither a file (--policy FILE"),
    ("no moves per 100 arrivals", lambda d: None, lambda d: [*_base(d), "--defrag", "0"],
     "--defrag: '0' is not a number of moves per 100 arrivals (1 or more)"),
    ("a negative number of moves", lambda d: None, lambda d: [*_base(d), "--defrag=-1"],
     "--defrag: '-1' is not a number of moves per 100 arrivals"),
    ("moves that are a word", lambda d: None, lambda d: [*_base(d), "--defrag", "some"],
     "--defrag: 'some' is not a number of moves per 100 arrivals"),
    ("an arrival interval of zero", lambda d: None, lambda d: [*_base(d), "--arrival-interval", "0"],
     "--arrival-interval: '0' is not a number of seconds above 0"),
    ("an arrival interval that is a word", lambda d: None, lambda d: [*_base(d), "--arrival-interval", "nan"],
     "--arrival-interval: 'nan' is not a number of seconds above 0"),
]  # fmt: skip


@pytest.mark.parametrize(("spoil", "args", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(
    files: Path,
    capsys: pytest.CaptureFixture[str],
    spoil: Callable[[Path], None],
    args: Callable[[Path], list[str]],
    message: str,
) -> None:
    spoil(files)
    assert main(args(files)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-advisor: error: ")
    assert message in lines[0]
