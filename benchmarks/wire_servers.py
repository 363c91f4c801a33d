"""The two servers benchmarks/wire.py drives: the advisor and a true no-op, under the same settings.

    python benchmarks/wire_servers.py advisor --snapshot FILE --port P [--refresh 1.0]
    python benchmarks/wire_servers.py noop --replies FILE --port P

``advisor`` is what ``gpu-advisor serve --cluster FILE`` runs (its very ``build_advisor``, same app,
same uvicorn settings, same memory settling), plus, with ``--refresh``, a telemetry source that replaces the whole
board every so many seconds with fresh readings for every GPU: each refresh stamps every reading
anew, moves a few GPUs a lot (a job starts or stops) and jitters the rest by a point or two.

``noop`` is a FastAPI app on the same uvicorn settings that reads each body and answers the pre-built
reply bytes named by the ``X-Wire-Reply`` header (fetched from the advisor beforehand, so they are the
same size): it shows what the framework, the server and the socket cost with no work at all.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path (see benchmarks/extender.py).
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import json
import math
import random
import time
from array import array

from fastapi import FastAPI, Request, Response

from extender.model.readings import GpuReading, TelemetryBoard
from extender.sources.polling import Telemetry
from gpu_advisor.serve import build_advisor, run, serve_on_configured_loop, uvicorn_config


class SyntheticRefresh(Telemetry):
    """Fresh readings for every GPU every ``interval_s``: a few move a lot, the rest jitter around
    where they were last moved to (the snapshot's readings at first).

    Those base values are kept as three flat float arrays (under 1 MiB at 5,000 nodes), not as reading
    objects: a Prometheus poll keeps nothing between polls, and a copy of the snapshot's readings held
    here (some 7 MiB) would sit in the served process's memory, in the figures the benchmark reports."""

    def __init__(self, board: TelemetryBoard, interval_s: float) -> None:
        super().__init__(board, "synthetic refresh")
        self.interval_s = interval_s
        readings = board.readings()
        self._keys = list(readings)
        self._sm = array("d", (_nan_for(r.sm_util) for r in readings.values()))
        self._used = array("d", (_nan_for(r.memory_used_mib) for r in readings.values()))
        self._free = array("d", (_nan_for(r.memory_free_mib) for r in readings.values()))
        self._rnd = random.Random(7)
        self.count = 0

    def refresh(self) -> int:
        now, rnd = time.time(), self._rnd
        sms, useds, frees = self._sm, self._used, self._free
        fresh: dict[tuple[str, str], GpuReading] = {}
        for i, key in enumerate(self._keys):
            if rnd.random() < 0.02:  # a job started or stopped on this GPU
                total = useds[i] + frees[i]
                total = 81920.0 if math.isnan(total) or not total else total
                used = rnd.choice([0.0, 4096.0, 30000.0])
                sms[i], useds[i], frees[i] = rnd.choice([0.0, 5.0, 40.0, 95.0]), used, total - used
            jitter = rnd.choice((-1.0, 0.0, 1.0))
            sm = None if math.isnan(sms[i]) else max(0.0, min(100.0, sms[i] + jitter))
            fresh[key] = GpuReading(sm, _none_for(useds[i]), _none_for(frees[i]), at=now)
        self.board.replace(fresh, now)
        self.count += 1
        return len(fresh)


def _nan_for(value: float | None) -> float:
    return math.nan if value is None else value


def _none_for(value: float) -> float | None:
    return None if math.isnan(value) else value


def serve_advisor(snapshot: str, port: int, refresh: float | None) -> int:
    # The very advisor `gpu-advisor serve --cluster FILE` builds, so its memory is the server's.
    advisor, background = build_advisor(snapshot, None, None)
    if refresh:
        assert advisor.telemetry is not None  # a snapshot's board, even when it holds no reading
        background.parts.append(SyntheticRefresh(advisor.telemetry, refresh))
    return run(advisor, background, "127.0.0.1", port, None, None)


def noop_app(replies: dict[str, bytes]) -> FastAPI:
    app = FastAPI()

    async def answer(request: Request) -> Response:
        await request.body()
        return Response(replies[request.headers.get("x-wire-reply", "")], media_type="application/json")

    app.add_api_route("/scheduler/filter", answer, methods=["POST"])
    app.add_api_route("/scheduler/prioritize", answer, methods=["POST"])
    app.add_api_route("/readyz", lambda: {"ready": True}, methods=["GET"])
    return app


def serve_noop(replies_file: str, port: int) -> int:
    import uvicorn

    replies = {key: text.encode() for key, text in json.loads(Path(replies_file).read_text()).items()}
    serve_on_configured_loop([uvicorn.Server(uvicorn_config(noop_app(replies), "127.0.0.1", port))])
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["advisor", "noop"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--snapshot", help="advisor: the cluster snapshot to serve")
    parser.add_argument("--refresh", type=float, help="advisor: replace the telemetry board every so many seconds")
    parser.add_argument("--replies", help="noop: JSON file of reply texts by X-Wire-Reply key")
    args = parser.parse_args()
    if args.kind == "advisor":
        return serve_advisor(args.snapshot, args.port, args.refresh)
    return serve_noop(args.replies, args.port)


if __name__ == "__main__":
    sys.exit(main())
