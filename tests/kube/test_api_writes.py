"""The bind verb's Binding posted on the event loop (``api_writes``): as the API server sees it, over plain
HTTP and TLS with the client's own settings, answers by length, in chunks or to the connection's end,
kept-alive connections the server closed meanwhile, and every failure a message, never an exception."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from extender.cluster.claims import Binding
from extender.cluster.state import ClusterState
from extender.sources.api_writes import ApiWrites, WriteFailed
from extender.sources.invalid import InvalidObjects
from extender.sources.kube_binder import KubeBinder
from extender.sources.kube_model import KubeModel
from tests.fakes.apiserver import FakeApiServer, node
from tests.kube.test_agent_apiserver import TlsFakeApiServer, tls  # noqa: F401  (the fixture)
from tests.kube.tls_pair import TlsFiles


def pending(name: str = "p", node_name: str = "") -> dict[str, Any]:
    """A pod asking one whole GPU, not bound (or, with ``node_name``, bound there already)."""
    container = {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    return {"kind": "Pod", "metadata": meta, "spec": {"containers": [container], "nodeName": node_name}, "status": {}}


def configuration(url: str, **settings: Any) -> client.Configuration:
    cfg = client.Configuration()
    cfg.host = url
    cfg.api_key = {"authorization": "t0ken"}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    for key, value in settings.items():
        setattr(cfg, key, value)
    return cfg


def binder(cfg: client.Configuration) -> KubeBinder:
    """A replica's binder whose model holds one 8-GPU node and this replica's picks of pods p and q on it."""
    model = KubeModel(ClusterState("kube"), InvalidObjects())
    model.replace("nodes", [node("gpu-1", gpus=8)])
    model.replace("pods", [])
    for name in ("p", "q"):
        model.assume(pending(name), "gpu-1")
    return KubeBinder(client.CoreV1Api(client.ApiClient(cfg)), model)


def bind(binder: KubeBinder, names: tuple[str, ...] = ("p", "q")) -> list[str]:
    """Each pod bound in turn, on one event loop (the second on the connection the first kept)."""

    async def each() -> list[str]:
        check = lambda pod, node: None  # noqa: E731
        found = [await binder.bind_on_loop(Binding(n, "default", f"uid-{n}", "gpu-1"), check) for n in names]
        await binder.aclose()
        return found

    return asyncio.run(each())


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    with FakeApiServer() as server:
        server.put("nodes", node("gpu-1", gpus=8))
        server.put("pods", pending("p"))
        server.put("pods", pending("q"))
        yield server


def test_a_whole_gpu_pod_is_bound_with_one_post_carrying_the_token(fake: FakeApiServer) -> None:
    found = binder(configuration(fake.url))
    assert found.writes is not None
    assert bind(found) == ["", ""]
    posts = [r for r in fake.requests if r[0] == "POST"]
    assert [p[1] for p in posts] == [f"/api/v1/namespaces/default/pods/{n}/binding" for n in ("p", "q")]
    headers = {k.lower(): v for k, v in posts[0][2].items()}
    assert headers["authorization"] == "Bearer t0ken" and headers["content-type"] == "application/json"
    assert json.loads(posts[0][3])["target"] == {"apiVersion": "v1", "kind": "Node", "name": "gpu-1"}
    assert fake.bindings == [("default/p", "gpu-1"), ("default/q", "gpu-1")]


def test_over_tls_with_the_clusters_ca(tls: TlsFiles) -> None:  # noqa: F811
    with TlsFakeApiServer(tls) as fake:
        fake.put("pods", pending("p"))
        fake.put("pods", pending("q"))
        assert bind(binder(configuration(fake.url, ssl_ca_cert=str(tls.ca)))) == ["", ""]
        assert fake.bindings == [("default/p", "gpu-1"), ("default/q", "gpu-1")]


def test_a_server_certificate_not_of_the_ca_is_a_failed_binding_not_an_exception(tls: TlsFiles) -> None:  # noqa: F811
    with TlsFakeApiServer(tls) as fake:
        fake.put("pods", pending("p"))
        (why,) = bind(binder(configuration(fake.url)), ("p",))  # the system trust store lacks the test CA
        assert why.startswith("binding default/p to gpu-1 failed: cannot reach the API server") and "CERTIFICATE" in why
        assert fake.bindings == []


def test_a_refused_binding_names_the_status(fake: FakeApiServer) -> None:
    fake.put("pods", pending("p", node_name="gpu-9"))
    assert bind(binder(configuration(fake.url)), ("p",)) == ["binding default/p to gpu-1 failed: 409 Conflict"]


def test_a_server_behind_a_path_gets_it_before_every_request() -> None:
    writes = ApiWrites.of(configuration("https://10.0.0.1:6443/k8s/clusters/c-1/"))
    assert writes is not None and (writes.host, writes.port, writes.prefix) == ("10.0.0.1", 6443, "/k8s/clusters/c-1")


def test_a_proxy_leaves_the_binding_to_the_clients_own_path() -> None:
    assert ApiWrites.of(configuration("https://10.0.0.1:6443", proxy="http://proxy:3128")) is None
    assert ApiWrites.of(configuration("unix:///var/run/api.sock")) is None


ANSWERS = {
    "length": b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}",
    "chunks": b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n1;x=y\r\n}\r\n0\r\nT: 1\r\n\r\n",
    "to the end": b"HTTP/1.1 201 Created\r\nX: y\r\n\r\n{}",
}


@pytest.mark.parametrize("kind", sorted(ANSWERS))
def test_answers_by_length_in_chunks_or_to_the_end_and_a_connection_closed_meanwhile(kind: str) -> None:
    """The server answers each connection's first request and closes it: the second send finds its kept
    connection closed before any answer and sends again on a new one."""
    connections = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(await reader.readuntil(b"\r\n\r\n"))
        await reader.readexactly(2)
        writer.write(ANSWERS[kind])
        await writer.drain()
        writer.close()

    async def two() -> list[tuple[int, str, bytes]]:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        writes = ApiWrites("127.0.0.1", port, None, None)
        found = [await writes.send("POST", "/x", b"{}", {"Accept": "application/json"}, 5) for _ in range(2)]
        await writes.aclose()
        server.close()
        return found

    assert asyncio.run(two()) == [(201, "Created", b"{}")] * 2
    assert len(connections) == 2 and connections[0].startswith(b"POST /x HTTP/1.1\r\nHost: 127.0.0.1:")


def test_no_answer_is_write_failed() -> None:
    async def nothing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"garbage\r\n\r\n")
        await writer.drain()
        writer.close()

    async def one() -> None:
        server = await asyncio.start_server(nothing, "127.0.0.1", 0)
        writes = ApiWrites("127.0.0.1", server.sockets[0].getsockname()[1], None, None)
        with pytest.raises(WriteFailed, match=r"not an HTTP/1\.1 status line"):
            await writes.send("POST", "/x", b"{}", {}, 5)
        server.close()

    asyncio.run(one())
