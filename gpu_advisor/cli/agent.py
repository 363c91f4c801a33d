"""``gpu-advisor agent``: the node agent that publishes this node's GPU topology and free GPUs."""

from __future__ import annotations

import argparse

from gpu_advisor.cli.exits import CliError

__all__ = ["register"]


def _agent(args: argparse.Namespace) -> int:
    import os
    import signal

    from extender.agent.apiserver import node_writer
    from extender.agent.gpu_reader import READERS
    from extender.agent.loop import Agent
    from extender.agent.podresources_client import PodResourcesClient

    node = args.node or os.environ.get("NODE_NAME")
    if not node:
        raise CliError("name the node: --node NAME, or NODE_NAME from the downward API")
    api = node_writer(args.kubeconfig)  # no kubernetes client in this process unless the kubeconfig needs it
    reader = READERS[args.gpus]
    agent = Agent(
        node, api, lambda: PodResourcesClient(args.socket), reader.load, min_interval_s=args.min_interval, reader=reader
    )
    server = agent.serve_http(args.host, args.port)
    signal.signal(signal.SIGTERM, lambda *_: agent.stop())
    try:
        agent.run(args.poll)
    except KeyboardInterrupt:
        pass
    finally:
        agent.stop()
        server.shutdown()
        server.server_close()
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from extender.agent.podresources_client import DEFAULT_SOCKET

    agent = commands.add_parser("agent", help="node agent: publish this node's GPU topology and free GPUs")
    agent.add_argument("--node", help="this Node's name (default: $NODE_NAME)")
    agent.add_argument(
        "--socket", default=DEFAULT_SOCKET, help=f"kubelet PodResources socket (default {DEFAULT_SOCKET})"
    )
    agent.add_argument(
        "--min-interval", type=float, default=10.0, help="at most one Node write per this many seconds (default 10)"
    )
    agent.add_argument(
        "--poll", type=float, default=2.0, help="seconds between looks at NVML and the kubelet (default 2)"
    )
    agent.add_argument("--host", default="0.0.0.0", help="address for /metrics, /healthz, /readyz (default 0.0.0.0)")
    agent.add_argument("--port", type=int, default=9401, help="port for /metrics, /healthz, /readyz (default 9401)")
    agent.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster)")
    agent.add_argument(
        "--gpus",
        choices=("nvidia", "amd"),
        default="nvidia",
        help="read the GPUs through NVML (nvidia, default) or the amdsmi library (amd: AMD Instinct nodes)",
    )
    agent.set_defaults(handler=_agent)
