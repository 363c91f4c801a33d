"""Fakes at the protocol edge only — the API server (HTTP), Prometheus (HTTP), NVML (the pynvml
module) and the machines it describes — shared by the tests and the benchmarks."""
