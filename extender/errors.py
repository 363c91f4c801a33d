"""Every error gpu-advisor raises on purpose, in one tree; the message is always for a person.

::

    GpuAdvisorError
    ├── InputError                what was given cannot be used: HTTP 422, CLI exit 2
    │   ├── MalformedInput        not even the format asked for: HTTP 400, CLI exit 2
    │   │   ├── BadRequest        an HTTP body: too large (413), not JSON (extender.http.requests)
    │   │   ├── BadReview         not an AdmissionReview v1 request (webhook.admission)
    │   │   └── ManifestError     a manifest that is not YAML or JSON (extender.http.manifests)
    │   ├── TopologyError         a topology document or topo -m matrix (extender.model.topology)
    │   ├── PodSpecError          a pod's GPU request or gpu-advisor knob (extender.model.pods)
    │   ├── SnapshotError         a cluster snapshot (extender.sources.snapshot)
    │   ├── NodeShareError        a node's GPU-sharing labels or annotations (extender.model.gpu_share_node)
    │   ├── PolicyError           a scoring policy (extender.scoring)
    │   ├── PrometheusUrlError    a --prometheus URL that is not one (extender.sources.prometheus)
    │   ├── DryRunError           a manifest that parses but cannot be judged (extender.advice.dryrun)
    │   └── ReplayInputError      a trace the replay cannot read (extender.advice.replay)
    ├── SourceError               a system we read from did not answer: HTTP 503, CLI exit 2
    │   ├── ApiServerError        the Kubernetes API server (extender.sources.kube)
    │   └── NvmlUnavailable       no NVML library or driver (extender.sources.nvml)
    ├── NoAnswer                  a valid question without an answer: HTTP 409, CLI exit 3
    │   └── PlacementImpossible   no GPU set of that size is free (extender.placement)
    └── UsageError                options that do not go together: CLI exit 2
        ├── ServeError            the server cannot start as asked (gpu_advisor.serve)
        └── CliError              a command's own message and exit code (gpu_advisor.cli)

Each protocol has one mapper: ``extender.http.requests.problem_for`` (status and ``{"detail": message}``)
and ``gpu_advisor.cli.exits.report`` (one line on stderr and the exit code). The input and no-answer
branches stay ``ValueError``s and the source branch a ``RuntimeError``, as the classes were before the tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the node agent imports this tree and must not pay for pydantic
    from pydantic import ValidationError

__all__ = [
    "GpuAdvisorError",
    "InputError",
    "MalformedInput",
    "NoAnswer",
    "SourceError",
    "UsageError",
    "validation_problems",
]


class GpuAdvisorError(Exception):
    """The root: anything gpu-advisor raises on purpose."""

    http_status = 500
    exit_code = 2


class InputError(GpuAdvisorError, ValueError):
    """Input that was read but cannot be used; the message says what and where."""

    http_status = 422


class MalformedInput(InputError):
    """Input that is not even the format asked for."""

    http_status = 400


class SourceError(GpuAdvisorError, RuntimeError):
    """A system gpu-advisor reads from (API server, NVML, Prometheus) did not answer."""

    http_status = 503


class NoAnswer(GpuAdvisorError, ValueError):
    """A valid question with no answer, such as a GPU count no free set can meet."""

    http_status = 409
    exit_code = 3


class UsageError(GpuAdvisorError):
    """Options that cannot be honoured together, or a process that cannot start as asked."""


def validation_problems(exc: ValidationError, top: str = "body", limit: int | None = 5) -> str:
    """A pydantic error as one line, ``where: what; where: what``, the first ``limit`` of them."""
    errors = exc.errors()[:limit] if limit is not None else exc.errors()
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or top}: {e['msg']}" for e in errors)
