"""A true no-op extender for the real-cluster pace (``real_pace.py --noop``): the floor of any extender
served as the advisor serves its verbs.

The same server as ``gpu-advisor serve``'s verbs port (uvicorn with the advisor's settings and served
protocol, HTTPS requiring a client certificate the advisor's CA signed), the same printed profile pointing
at it, and the same Binding post on the event loop (``ApiWrites``, a kept-alive connection with the
kubeconfig's server and credentials). What it leaves out is all the advisor thinks: the filter passes the
first name kube-scheduler sent (its own NodeResourcesFit passed only nodes with room, so that node fits),
found in the body's bytes without parsing it; the bind verb posts the Binding it is asked for, unchecked.

So the pace of kube-scheduler with this no-op, beside its pace without the extender, is the most any
extender on this wire can give, on the same machine in the same run.

    python -m benchmarks.real_noop --kubeconfig K --certs DIR --port P   # DIR: ``gpu-advisor certs create``'s
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from extender.cluster.claims import Binding
from extender.sources.api_writes import ApiWrites, WriteFailed
from extender.sources.kube_binder import binding_body, binding_path

__all__ = ["CALLS_LINE", "binding_request", "first_candidate", "main"]

CALLS_LINE = "no-op extender: calls"
_NAMES = b'"NodeNames":['
_TIMEOUT_S = 30.0


def first_candidate(body: bytes) -> str | None:
    """The first of the filter call's ``NodeNames`` (kube-scheduler with ``nodeCacheCapable`` sends names;
    none sent, or an empty list: None). Names of Nodes are DNS subdomains, so no escapes to undo."""
    at = body.find(_NAMES)
    if at < 0 or body[at + len(_NAMES) : at + len(_NAMES) + 1] != b'"':
        return None
    start = at + len(_NAMES) + 1
    end = body.find(b'"', start)
    return body[start:end].decode() if end > start else None


def filter_reply(node: str | None) -> bytes:
    """The advisor's answer shape (``best_node``) passing ``node`` alone; no node: an error kube-scheduler
    reads as the extender's."""
    if node is None:
        return b'{"Nodes":null,"NodeNames":null,"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":"no names"}'
    head = '{"Nodes":null,"NodeNames":[' + json.dumps(node) + "]"
    return (head + ',"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""}').encode()


def binding_request(body: bytes) -> tuple[str, bytes]:
    """The API path and Binding body for kube-scheduler's ExtenderBindingArgs, as the advisor posts them
    (``kube_binder``)."""
    args = json.loads(body)
    binding = Binding(args["PodName"], args["PodNamespace"], args["PodUID"], args["Node"])
    return binding_path(binding), json.dumps(binding_body(binding, {}), separators=(",", ":")).encode()


class NoopExtender:
    """The ASGI app: filter and bind on raw bytes, nothing kept."""

    def __init__(self, writes: ApiWrites, headers: dict[str, str]) -> None:
        self.writes, self.headers = writes, headers
        self.calls = 0
        self.clients: set[tuple[str, int]] = set()  # kube-scheduler's connections: one client port each

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        self.calls += 1
        if scope.get("client"):
            self.clients.add(tuple(scope["client"]))
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["path"].endswith("/filter"):
            status, answer = 200, filter_reply(first_candidate(body))
        elif scope["path"].endswith("/bind"):
            status, answer = 200, await self._bind(body)
        else:
            status, answer = 404, b'{"detail":"not found"}'
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    async def _lifespan(self, receive: Any, send: Any) -> None:
        """Says, as the server stops, how many calls came on how many connections (uvicorn raises the
        stopping signal again once it has shut down, so nothing after ``serve`` runs)."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                # Each connection was a TLS handshake with kube-scheduler's client certificate checked.
                print(f"{CALLS_LINE} {self.calls} connections {len(self.clients)}", flush=True)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _bind(self, body: bytes) -> bytes:
        path, raw = binding_request(body)
        try:
            status, reason, _ = await self.writes.send("POST", path, raw, self.headers, _TIMEOUT_S)
        except (WriteFailed, TimeoutError) as exc:
            return json.dumps({"Error": f"binding failed: {exc}"}).encode()
        return b'{"Error":""}' if 200 <= status < 300 else json.dumps({"Error": f"{status} {reason}"}).encode()


def _writes(kubeconfig: str) -> tuple[ApiWrites, dict[str, str]]:
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)  # type: ignore[no-untyped-call]
    writes = ApiWrites.of(configuration)
    if writes is None:
        raise SystemExit("the kubeconfig names a proxy or a server that is not http(s)")
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    token = configuration.get_api_key_with_prefix("authorization")
    if token:
        headers["Authorization"] = token
    return writes, headers


def main() -> int:
    import uvicorn

    from gpu_advisor.servers import uvicorn_config
    from webhook.certs import CertReloader

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--certs", type=Path, required=True, help="tls.crt, tls.key and ca.crt")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    writes, headers = _writes(args.kubeconfig)
    cert, key, ca = (str(args.certs / name) for name in ("tls.crt", "tls.key", "ca.crt"))
    reloader = CertReloader(Path(cert), Path(key), client_ca=Path(ca))
    app = NoopExtender(writes, headers)
    settings = uvicorn_config(app, "127.0.0.1", args.port, ssl_certfile=cert, ssl_keyfile=key)
    settings.load()
    settings.ssl = reloader.context  # the advisor's very TLS context: client certificate required
    asyncio.run(uvicorn.Server(settings).serve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
