"""A GPU pod kube-scheduler will not ask the advisor about is warned (denied under enforce) or routed.

kube-scheduler's rule (pkg/scheduler/extender.go IsInterested): an extender without managedResources is
asked about every pod; one with them only about pods whose containers or initContainers name one of them
in requests or limits. The schedulers that call the advisor come from `serve --scheduler-config`."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from extender.advice.replay.advisor_policy import replay_node_object
from extender.cluster.state import ClusterState, node_state
from extender.http.advisor import Advisor
from extender.scoring import ScoringPolicy
from gpu_advisor.app import create_app
from gpu_advisor.cli import main
from gpu_advisor.cli.scheduler_config import scheduler_config
from gpu_advisor.cli.serve import load_reach
from tests.contract.test_extender_contract import check_golden
from tests.dra.objects import pending_pod
from tests.dra.test_dra_gpus import snapshot as dra_snapshot
from tests.webhook.test_admission_api import apply_patch
from webhook.admission import AdmissionSettings
from webhook.reach import AdvisorReach, SchedulerConfigError, interested, named_resources

KUBE = Path(__file__).parents[1] / "data" / "kube"
ALIBABA = {"alibabacloud.com/gpu-milli": "500", "alibabacloud.com/gpu-count": "1"}
GPU_AND_MIG = frozenset({"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"})


def spec(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"containers": containers, **({"initContainers": init} if init else {})}


def asks(section: str, **resources: str) -> dict[str, Any]:
    return {"name": "c", "resources": {section: {k.replace("_", "/", 1): v for k, v in resources.items()}}}


@pytest.mark.parametrize(
    ("managed", "pod_spec", "expected"),
    [
        pytest.param(frozenset(), spec([{"name": "c"}]), True, id="no managedResources: every pod, even CPU-only"),
        pytest.param(GPU_AND_MIG, spec([asks("limits", **{"nvidia.com_gpu": "1"})]), True, id="limits name it"),
        pytest.param(GPU_AND_MIG, spec([asks("requests", **{"nvidia.com_gpu": "1"})]), True, id="requests name it"),
        pytest.param(
            GPU_AND_MIG, spec([asks("limits", **{"nvidia.com_gpu": "0"})]), True, id="the name counts, even at 0"
        ),
        pytest.param(
            GPU_AND_MIG,
            spec([{"name": "c"}], init=[asks("limits", **{"nvidia.com_mig-1g.10gb": "1"})]),
            True,
            id="an initContainer names it",
        ),
        pytest.param(GPU_AND_MIG, spec([asks("limits", cpu="1")]), False, id="names none: not asked"),
        pytest.param(
            GPU_AND_MIG, spec([asks("limits", **{"amd.com_gpu": "1"})]), False, id="another vendor's: not asked"
        ),
        pytest.param(
            GPU_AND_MIG, spec([asks("limits", **{"aliyun.com_gpu-mem": "4"})]), False, id="Aliyun memory: not asked"
        ),
        pytest.param(GPU_AND_MIG, spec([{"name": "c"}]), False, id="Alibaba annotations name no resource"),
    ],
)
def test_kube_schedulers_is_interested_rule(managed: frozenset[str], pod_spec: dict[str, Any], expected: bool) -> None:
    assert interested(managed, named_resources(pod_spec)) is expected


def config(text: str) -> AdvisorReach:
    return AdvisorReach.from_configs([("sched.yaml", d) for d in yaml.safe_load_all(text)])


def test_the_printed_configuration_names_the_gpu_advisor_profile_and_its_managed_resources() -> None:
    reach = config(scheduler_config(managed=True))
    assert list(reach.schedulers) == ["gpu-advisor"]
    (managed,) = reach.extenders("gpu-advisor")
    assert {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "amd.com/gpu"} <= managed
    assert reach.extenders("gpu-advisor") != AdvisorReach.default().extenders("gpu-advisor")
    # the printed default has none: every pod, as with no file at all
    assert config(scheduler_config()).extenders("gpu-advisor") == (frozenset(),)
    assert config(scheduler_config()).extenders("gpu-advisor") == AdvisorReach.default().extenders("gpu-advisor")


def test_extenders_apply_to_every_profile_and_a_config_without_profiles_is_the_default_scheduler() -> None:
    extender = 'extenders: [{urlPrefix: "http://gpu-advisor.gpu-advisor.svc:8080/scheduler", filterVerb: filter}]'
    head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    two = config(head + "profiles: [{schedulerName: a}, {schedulerName: b}]\n" + extender)
    assert two.schedulers == {"a": (frozenset(),), "b": (frozenset(),)}
    assert list(config(head + extender).schedulers) == ["default-scheduler"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "sched.yaml: not a KubeSchedulerConfiguration object"),
        ("kind: Pod\napiVersion: v1", "kind 'Pod', apiVersion 'v1': not a KubeSchedulerConfiguration"),
        (
            "kind: KubeSchedulerConfiguration\napiVersion: kubescheduler.config.k8s.io/v1\nprofiles: 3",
            "profiles must be a list of objects",
        ),
        (
            "kind: KubeSchedulerConfiguration\napiVersion: kubescheduler.config.k8s.io/v1\n"
            "extenders: [{urlPrefix: 'http://127.0.0.1:42641', filterVerb: filter}]",  # HAMi's, not ours
            "no extender with a filterVerb and a urlPrefix ending in /scheduler",
        ),
        (
            "kind: KubeSchedulerConfiguration\napiVersion: kubescheduler.config.k8s.io/v1\n"
            "extenders: [{urlPrefix: 'http://a/scheduler', filterVerb: filter, managedResources: [gpu]}]",
            "extenders[0].managedResources must be a list of {name: RESOURCE}",
        ),
    ],
)
def test_a_configuration_the_advisor_cannot_read_is_refused_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(SchedulerConfigError, match=re.escape(message)):
        config(text)


# -- the webhook: AdmissionReviews as a real kube-apiserver v1.36 sent them -------------------------------


@pytest.fixture
def advisor() -> Advisor:
    """Two idle Alibaba-sharing G2 nodes (as the openb replay builds them): a 500-milli share fits."""
    state = ClusterState("shared")
    state.replace_all([node_state(replay_node_object(n, "G2", 96_000, 786_432, 8), (), state.machines) for n in "ab"])
    return Advisor(state, None, ScoringPolicy(), clock=lambda: 0.0)


def captured(endpoint: str, pod_spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((KUBE / f"admission-{endpoint}-pod-create.json").read_text())
    obj = body["request"]["object"]
    obj["spec"] = {**obj["spec"], **pod_spec}
    obj["metadata"]["annotations"] = annotations or {}
    return body


def alibaba_share(scheduler: str) -> dict[str, Any]:
    """The real-cluster case: a 500-milli Alibaba share, which names no resource kube-scheduler knows."""
    return {"schedulerName": scheduler, "containers": [{"name": "c", "image": "busybox", "resources": {}}]}


PRINTED = AdmissionSettings(reach=config(scheduler_config(managed=True)))  # --managed-resources: GPU resources only


@pytest.mark.parametrize(
    ("case", "endpoint", "settings", "pod_spec"),
    [
        ("default-scheduler-warned", "validate", AdmissionSettings(), alibaba_share("default-scheduler")),
        ("default-scheduler-denied", "validate/enforce", AdmissionSettings(), alibaba_share("default-scheduler")),
        ("managed-resources-warned", "validate", PRINTED, alibaba_share("gpu-advisor")),
        ("managed-resources-denied", "validate/enforce", PRINTED, alibaba_share("gpu-advisor")),
        ("reaches-without-managed-resources", "validate/enforce", AdmissionSettings(reach=config(
            scheduler_config())), alibaba_share("gpu-advisor")),
    ],
)  # fmt: skip
def test_a_gpu_pod_that_will_not_reach_the_advisor_is_warned_or_denied(
    advisor: Advisor, case: str, endpoint: str, settings: AdmissionSettings, pod_spec: dict[str, Any]
) -> None:
    body = captured("validate", pod_spec, ALIBABA)
    with TestClient(create_app(advisor, settings)) as client:
        reply = client.post(f"/admission/{endpoint}", json=body).json()
    assert all(len(w) <= 120 and w.isascii() for w in reply["response"].get("warnings", []))
    check_golden(f"admission-reach.{case}.reply.json", reply)


def test_route_gpu_pods_to_routes_a_share_that_names_the_default_scheduler(advisor: Advisor) -> None:
    body = captured("mutate", alibaba_share("default-scheduler"), ALIBABA)
    pod = copy.deepcopy(body["request"]["object"])
    settings = AdmissionSettings(route_gpu_pods_to="gpu-advisor")
    with TestClient(create_app(advisor, settings)) as client:
        reply = client.post("/admission/mutate", json=body).json()
        routed = apply_patch(pod, reply["response"])
        assert routed["spec"]["schedulerName"] == "gpu-advisor"
        assert "gpu-advisor.io/advice" not in routed["metadata"]["annotations"]  # routed: it reaches the advisor
        again = captured("validate", routed["spec"], routed["metadata"]["annotations"])
        assert "warnings" not in client.post("/admission/validate/enforce", json=again).json()["response"]
    check_golden("admission-reach.routed.reply.json", reply)


def test_an_update_of_a_pod_is_not_judged_again_for_its_scheduler(advisor: Advisor) -> None:
    body = captured("validate", alibaba_share("default-scheduler"), ALIBABA)
    body["request"]["operation"] = "UPDATE"
    body["request"]["oldObject"] = copy.deepcopy(body["request"]["object"])
    with TestClient(create_app(advisor)) as client:
        reply = client.post("/admission/validate/enforce", json=body).json()["response"]
    assert reply["allowed"] is True and "warnings" not in reply


# -- serve --scheduler-config: read once at start-up ---------------------------------------------------------


def test_serve_reads_the_schedulers_from_every_file_it_is_given(tmp_path: Path) -> None:
    printed, second = tmp_path / "gpu-advisor.yaml", tmp_path / "default.yaml"
    printed.write_text(scheduler_config())
    second.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n---\n"  # a stray document
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "extenders: [{urlPrefix: 'https://gpu-advisor.gpu-advisor.svc:8443/scheduler/', filterVerb: filter}]\n"
    )
    with pytest.raises(SchedulerConfigError, match=re.escape("default.yaml: no extender with a filterVerb")):
        load_reach([str(printed), str(second)], None)  # the first document of default.yaml calls nothing
    second.write_text(second.read_text().split("---\n")[1])
    reach = load_reach([str(printed), str(second)], "default-scheduler")
    assert reach is not None and sorted(reach.schedulers) == ["default-scheduler", "gpu-advisor"]
    assert load_reach([], "anything") is None  # no file: the printed default, and the route


@pytest.mark.parametrize(
    ("files", "route", "message"),
    [
        (["missing.yaml"], None, "--scheduler-config missing.yaml: No such file or directory"),
        (["bad.yaml"], None, "--scheduler-config bad.yaml is not YAML"),
        (["printed.yaml"], "volcano", "--route-gpu-pods-to volcano: no profile of --scheduler-config by that name"),
    ],
)
def test_serve_refuses_a_scheduler_config_it_cannot_use_before_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    files: list[str], route: str | None, message: str,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.yaml").write_text("profiles: [unclosed\n")
    (tmp_path / "printed.yaml").write_text(scheduler_config())
    args = ["serve", *(a for f in files for a in ("--scheduler-config", f))]
    assert main([*args, *(("--route-gpu-pods-to", route) if route else ())]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpu-advisor: error: ") and message in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("claim", "scheduler", "settings", "warned"),
    [
        ({"resourceClaimTemplateName": "one-gpu"}, "default-scheduler", AdmissionSettings(), True),
        ({"resourceClaimTemplateName": "one-gpu"}, "gpu-advisor", PRINTED, True),  # names no managed resource
        ({"resourceClaimTemplateName": "one-gpu"}, "gpu-advisor", AdmissionSettings(), False),
        ({"resourceClaimName": "nobody-made-this"}, "default-scheduler", AdmissionSettings(), False),  # no GPUs known
    ],
)
def test_a_pod_asking_gpus_only_through_a_dra_claim_must_reach_the_advisor_too(
    claim: dict[str, str], scheduler: str, settings: AdmissionSettings, warned: bool
) -> None:
    snap = dra_snapshot(allocated=False)
    advisor = Advisor(snap.cluster("dra"), None, ScoringPolicy(), clock=lambda: 0.0)
    pod = pending_pod(claim)
    pod["spec"]["schedulerName"] = scheduler
    body = captured("validate", pod["spec"])
    body["request"]["object"]["metadata"]["namespace"] = body["request"]["namespace"] = "default"  # the claims'
    with TestClient(create_app(advisor, settings)) as client:
        reply = client.post("/admission/validate", json=body).json()["response"]
    codes = {w.split(":")[0] for w in reply.get("warnings", [])}
    assert ("scheduler-skips-advisor" in codes) is warned
