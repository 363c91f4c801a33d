"""Normalisation constants the simulator's scorers share (`gpushareutils.MaxSpecCpu/MaxSpecGpu`)."""

from __future__ import annotations

MAX_SPEC_CPU = 128_000  # milli-CPU of the largest node
MAX_SPEC_GPU = 8_000  # milli-GPU of the largest node (8 GPUs)
MAX_SCORE = 100
