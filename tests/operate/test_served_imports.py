"""What ``gpu-advisor serve --cluster kube`` imports: not numpy, which only ``replay`` needs (Go's random
source, ``extender.advice.replay.go_random``) and which cost the served process 15 MiB resident."""

from __future__ import annotations

import subprocess
import sys

_SERVED = """
import sys
import gpu_advisor.cli, gpu_advisor.app, gpu_advisor.serve
from extender.sources import kube_watch
from extender.sources.kube_binder import KubeBinder
from extender.http.approvals import Approvals
print("numpy" in sys.modules)
"""


def test_the_served_process_does_not_import_numpy() -> None:
    done = subprocess.run([sys.executable, "-c", _SERVED], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_replay_still_reads_gos_cooked_register() -> None:
    from extender.advice.replay.go_random import cooked

    register = cooked()
    assert len(register) == 607 and all(0 <= v < 2**64 for v in register)
