"""One error tree: every error gpu-advisor raises on purpose has a branch, and each protocol one mapper."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from extender.advice.dryrun import DryRunError
from extender.advice.replay.openb import ReplayInputError
from extender.errors import (
    GpuAdvisorError,
    InputError,
    MalformedInput,
    NoAnswer,
    SourceError,
    UsageError,
    validation_problems,
)
from extender.http.manifests import ManifestError
from extender.http.requests import BadRequest, problem_for
from extender.model.gpu_share_node import NodeShareError
from extender.model.pods import PodSpecError
from extender.model.topology import TopologyError
from extender.placement import PlacementImpossible
from extender.scoring import PolicyError
from extender.sources.kube import ApiServerError
from extender.sources.nvml import NvmlUnavailable
from extender.sources.prometheus import PrometheusUrlError
from extender.sources.snapshot import SnapshotError
from gpu_advisor.cli.exits import CliError, report
from gpu_advisor.serve import ServeError
from webhook.admission import BadReview

# class, its branch, HTTP status, CLI exit code
TREE = [
    (BadRequest(413, "too big"), MalformedInput, 413, 2),
    (BadReview("not a review"), MalformedInput, 400, 2),
    (ManifestError("line 3"), MalformedInput, 400, 2),
    (TopologyError("ragged"), InputError, 422, 2),
    (PodSpecError("gpus: -1"), InputError, 422, 2),
    (SnapshotError("no nodes"), InputError, 422, 2),
    (PolicyError("weights.set"), InputError, 422, 2),
    (DryRunError("no kind"), InputError, 422, 2),
    (NodeShareError("gpushare"), InputError, 422, 2),
    (PrometheusUrlError("ftp://x"), InputError, 422, 2),
    (ReplayInputError("no column"), InputError, 422, 2),
    (ApiServerError("403"), SourceError, 503, 2),
    (NvmlUnavailable("no driver"), SourceError, 503, 2),
    (PlacementImpossible("only 2 free"), NoAnswer, 409, 3),
    (ServeError("--tls-cert alone"), UsageError, 500, 2),
    (CliError("no node"), UsageError, 500, 2),
    (CliError("no set", 3), UsageError, 500, 3),
]


@pytest.mark.parametrize(("error", "branch", "status", "code"), TREE, ids=lambda v: type(v).__name__)
def test_every_error_sits_on_its_branch_with_its_status_and_exit_code(
    error: GpuAdvisorError, branch: type, status: int, code: int
) -> None:
    assert isinstance(error, branch) and isinstance(error, GpuAdvisorError)
    assert error.http_status == status
    assert error.exit_code == code


def test_input_and_no_answer_errors_are_still_value_errors_and_source_errors_runtime_errors() -> None:
    assert isinstance(TopologyError("x"), ValueError) and isinstance(PlacementImpossible("x"), ValueError)
    assert isinstance(NvmlUnavailable("x"), RuntimeError)


def test_the_http_mapper_answers_the_status_and_the_message_as_detail() -> None:
    reply = problem_for(SnapshotError("snapshot: a snapshot needs a list 'nodes'"))
    assert reply.status_code == 422
    assert json.loads(bytes(reply.body)) == {"detail": "snapshot: a snapshot needs a list 'nodes'"}
    assert problem_for(BadRequest(413, "body is over the 10-byte limit")).status_code == 413


def test_the_cli_mapper_prints_one_line_and_returns_the_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert report(PlacementImpossible("asked for 4 GPUs but only 2 of 8 are free")) == 3
    assert report(ApiServerError("cannot list the cluster: API server answered 403 Forbidden")) == 2
    assert capsys.readouterr().err == (
        "gpu-advisor: error: asked for 4 GPUs but only 2 of 8 are free\n"
        "gpu-advisor: error: cannot list the cluster: API server answered 403 Forbidden\n"
    )


class _Weights(BaseModel):
    a: int
    b: int
    c: int


def test_pydantic_errors_read_as_one_line_of_where_and_what() -> None:
    with pytest.raises(ValidationError) as caught:
        _Weights.model_validate({"a": "x", "b": "y", "c": "z"})
    assert validation_problems(caught.value, limit=2) == (
        "a: Input should be a valid integer, unable to parse string as an integer; "
        "b: Input should be a valid integer, unable to parse string as an integer"
    )
    with pytest.raises(ValidationError) as caught:
        _Weights.model_validate([])
    assert (
        validation_problems(caught.value, top="(top)")
        == "(top): Input should be a valid dictionary or instance of _Weights"
    )
