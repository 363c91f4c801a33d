"""A kubeconfig read for the agent's own API client, for running it outside a cluster.

As kubectl reads it: ``--kubeconfig``, else every file in ``$KUBECONFIG`` (merged: the first file to name a
cluster, user or context wins, and the first ``current-context``), else ``~/.kube/config``; relative file
paths are relative to the kubeconfig. Understood: the server URL, ``certificate-authority(-data)``,
``insecure-skip-tls-verify``, and a user's ``token``, ``tokenFile``, ``client-certificate(-data)`` with
``client-key(-data)``, or ``username``/``password``. Anything else that changes how to connect (``exec``,
``auth-provider``, ``tls-server-name``, ``proxy-url``) raises ``NeedsKubernetesClient``, so the caller can
use the full client for it.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from pathlib import Path
from typing import Any

from extender.agent.api_target import ApiTarget, token_file

__all__ = ["KubeconfigError", "NeedsKubernetesClient", "kubeconfig_paths", "kubeconfig_target"]

_FULL_CLIENT_USER = ("exec", "auth-provider")
_FULL_CLIENT_CLUSTER = ("tls-server-name", "proxy-url")


class KubeconfigError(ValueError):
    """A kubeconfig that is missing or does not say how to reach a cluster."""


class NeedsKubernetesClient(Exception):
    """The kubeconfig uses a way of connecting that only the kubernetes client implements."""


def kubeconfig_paths(explicit: str | None, environ: dict[str, str] | None = None) -> list[Path]:
    env = os.environ if environ is None else environ
    if explicit:
        return [Path(explicit).expanduser()]
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    return [Path(p).expanduser() for p in listed] or [Path("~/.kube/config").expanduser()]


def _read(path: Path) -> dict[str, Any]:
    text = path.read_text()
    try:
        import json

        doc = json.loads(text)  # kubeconfigs written by tools are often JSON: no YAML parser needed
    except ValueError:
        import yaml

        try:
            doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            raise KubeconfigError(f"kubeconfig {path} is not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict):
        raise KubeconfigError(f"kubeconfig {path} is not a kubeconfig (no mapping at the top)")
    for section in ("clusters", "users", "contexts"):
        for entry in doc.get(section) or []:
            if isinstance(entry, dict):
                entry["_dir"] = path.parent  # relative paths are relative to the file that names them
    return doc


def _merged(paths: list[Path]) -> dict[str, Any]:
    found = [p for p in paths if p.is_file()]
    if not found:
        raise KubeconfigError(f"no kubeconfig at {', '.join(map(str, paths))}")
    merged: dict[str, Any] = {"clusters": {}, "users": {}, "contexts": {}, "current-context": None}
    for doc in map(_read, found):
        merged["current-context"] = merged["current-context"] or doc.get("current-context")
        for section in ("clusters", "users", "contexts"):
            for entry in doc.get(section) or []:
                if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                    merged[section].setdefault(entry["name"], entry)
    return merged


def _entry(merged: dict[str, Any], section: str, name: Any) -> tuple[dict[str, Any], Path]:
    entry = merged[section].get(name) if isinstance(name, str) else None
    if entry is None:
        raise KubeconfigError(f"kubeconfig names {section[:-1]} {name!r}, which it does not define")
    body = entry.get(section[:-1]) or {}
    if not isinstance(body, dict):
        raise KubeconfigError(f"kubeconfig {section[:-1]} {name!r} is not a mapping")
    return body, entry["_dir"]


def _file_or_data(where: dict[str, Any], key: str, base: Path) -> tuple[Path | None, bytes | None]:
    if where.get(f"{key}-data"):
        return None, base64.b64decode(where[f"{key}-data"])
    if where.get(key):
        return base / Path(where[key]).expanduser(), None
    return None, None


def _tls(cluster: dict[str, Any], user: dict[str, Any], cluster_dir: Path, user_dir: Path) -> ssl.SSLContext:
    ca_file, ca_data = _file_or_data(cluster, "certificate-authority", cluster_dir)
    context = ssl.create_default_context(
        cafile=str(ca_file) if ca_file else None, cadata=ca_data.decode() if ca_data else None
    )
    if cluster.get("insecure-skip-tls-verify") is True:
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    cert_file, cert_data = _file_or_data(user, "client-certificate", user_dir)
    key_file, key_data = _file_or_data(user, "client-key", user_dir)
    if (cert_file or cert_data) and (key_file or key_data):
        _load_client_pair(context, cert_file, cert_data, key_file, key_data)
    return context


def _load_client_pair(
    context: ssl.SSLContext, cert_file: Path | None, cert: bytes | None, key_file: Path | None, key: bytes | None
) -> None:
    """``ssl`` reads a client pair only from files: inline data goes through a private temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        if cert is not None:
            cert_file = Path(tmp, "client.crt")
            cert_file.write_bytes(cert)
        if key is not None:
            key_file = Path(tmp, "client.key")
            key_file.write_bytes(key)
        context.load_cert_chain(str(cert_file), str(key_file))


def kubeconfig_target(explicit: str | None = None) -> ApiTarget:
    """The current context's server and credentials."""
    merged = _merged(kubeconfig_paths(explicit))
    if not merged["current-context"]:
        raise KubeconfigError("kubeconfig has no current-context")
    context, _ = _entry(merged, "contexts", merged["current-context"])
    cluster, cluster_dir = _entry(merged, "clusters", context.get("cluster"))
    user, user_dir = _entry(merged, "users", context.get("user")) if context.get("user") else ({}, Path("."))
    if any(k in user for k in _FULL_CLIENT_USER) or any(k in cluster for k in _FULL_CLIENT_CLUSTER):
        raise NeedsKubernetesClient
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeconfigError(f"kubeconfig cluster {context.get('cluster')!r} has no server")
    tls = _tls(cluster, user, cluster_dir, user_dir) if server.startswith("https:") else None
    if user.get("token"):
        token = str(user["token"])
        return ApiTarget(server, tls, bearer=lambda: token)
    if user.get("tokenFile"):
        return ApiTarget(server, tls, bearer=token_file(user_dir / Path(user["tokenFile"]).expanduser()))
    if user.get("username") and user.get("password"):
        return ApiTarget(server, tls, basic=(str(user["username"]), str(user["password"])))
    return ApiTarget(server, tls)
