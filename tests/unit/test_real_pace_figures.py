"""The real-control-plane pace harness's arithmetic and configurations (``benchmarks/real_pace_figures.py``);
the harness itself needs the real binaries and is not run here."""

from __future__ import annotations

import pytest
import yaml

from benchmarks.real_pace_figures import (
    Measured,
    SizeResult,
    cpu_ms_per_pod,
    cpu_seconds,
    pods_per_second,
    rss_mib,
    scheduler_config,
    table,
)

PRINTED = """
# a comment the rewrite drops
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  qps: 300
  burst: 600
leaderElection:
  leaderElect: true
  resourceNamespace: gpu-advisor
profiles:
  - schedulerName: gpu-advisor
    percentageOfNodesToScore: 100
extenders:
  - urlPrefix: "https://127.0.0.1:9443/scheduler"
    bindVerb: bind
    weight: 131
"""


def test_the_pace_counts_intervals_from_the_first_binding_to_the_last() -> None:
    # 5 bindings over 2 s: 4 intervals / 2 s = 2 pods/s, whatever their order
    assert pods_per_second([10.0, 12.0, 10.5, 11.0, 11.5]) == 2.0


@pytest.mark.parametrize("times", [[], [1.0], [3.0, 3.0]])
def test_no_pace_without_a_window(times: list[float]) -> None:
    with pytest.raises(ValueError):
        pods_per_second(times)


def test_cpu_seconds_are_counted_after_a_command_name_with_spaces_and_parentheses() -> None:
    # utime 250 + stime 50 ticks at 100 a second = 3.0 s
    stat = "4242 (kube (sched) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 55 0"
    assert cpu_seconds(stat, 100) == 3.0


def test_resident_memory_is_read_from_vmrss_in_kib() -> None:
    assert rss_mib("Name:\tpython\nVmRSS:\t  184320 kB\nThreads:\t9\n") == 180.0
    with pytest.raises(ValueError):
        rss_mib("Name:\tzombie\n")


def test_cpu_per_pod_leaves_out_a_process_that_ran_for_one_configuration_only() -> None:
    before = {"etcd": 10.0, "kube-scheduler": 1.0}
    after = {"etcd": 13.0, "kube-scheduler": 7.0, "gpu-advisor": 5.0}
    # etcd: 3 s over 1,000 pods = 3 ms; kube-scheduler: 6 s / 1,000 = 6 ms
    assert cpu_ms_per_pod(before, after, 1000) == {"etcd": 3.0, "kube-scheduler": 6.0}


def test_with_the_extender_the_printed_profile_only_gains_its_kubeconfig_and_loses_leader_election() -> None:
    config = yaml.safe_load(scheduler_config(PRINTED, "/k/admin.kubeconfig", with_extender=True))
    printed = yaml.safe_load(PRINTED)
    assert config["clientConnection"] == {"qps": 300, "burst": 600, "kubeconfig": "/k/admin.kubeconfig"}
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["profiles"] == printed["profiles"] and config["extenders"] == printed["extenders"]


def test_without_the_extender_only_the_extenders_entry_goes() -> None:
    with_it = yaml.safe_load(scheduler_config(PRINTED, "/k", with_extender=True))
    without = yaml.safe_load(scheduler_config(PRINTED, "/k", with_extender=False))
    assert "extenders" not in without
    assert without == {key: value for key, value in with_it.items() if key != "extenders"}


def test_the_table_shows_the_ratio_and_each_process_with_and_without() -> None:
    with_advisor = Measured(50.0, {"kube-scheduler": 9.6, "etcd": 2.0, "gpu-advisor": 4.0}, 60.0, 181.4)
    without = Measured(100.0, {"kube-scheduler": 6.0, "etcd": 1.5}, 30.0)
    row = table([SizeResult(1000, 3000, with_advisor, without)]).splitlines()[-1]
    # 50 / 100 = 0.50; all four: 9.6 + 2.0 + 4.0 = 15.6 against 6.0 + 1.5 = 7.5
    assert row == (
        "| 1,000 | 3,000 | 50.0 | 100.0 | 0.50 | 9.60 / 6.00 | — / — | 2.00 / 1.50 | 4.00 / — | 15.60 / 7.50 | 181 |"
    )


def test_the_no_op_extender_line_shows_its_pace_over_the_pace_without() -> None:
    with_advisor = Measured(50.0, {"gpu-advisor": 4.0}, 60.0, 181.4)
    without = Measured(100.0, {"kube-scheduler": 6.0}, 30.0)
    noop = Measured(80.0, {"kube-scheduler": 7.0, "gpu-advisor": 1.0}, 37.5)
    last = table([SizeResult(1000, 3000, with_advisor, without, noop=noop)]).splitlines()[-1]
    # 80 / 100 = 0.80; all four: 7.0 + 1.0 = 8.0 (the no-op's own CPU where the advisor's would be)
    assert last == (
        "1,000 nodes, the no-op extender: 80.0 pods/s, ratio 0.80; CPU ms/pod: kube-scheduler 7.00, "
        "kube-apiserver —, etcd —, no-op 1.00, all four 8.00"
    )


def test_the_no_op_line_says_how_many_connections_served_its_calls() -> None:
    noop = Measured(80.0, {}, 37.5, connections=(6000, 1500))
    result = SizeResult(1000, 3000, Measured(50.0, {}, 60.0), Measured(100.0, {}, 30.0), noop=noop)
    assert table([result]).splitlines()[-1].endswith("; 1,500 connections for 6,000 calls")
