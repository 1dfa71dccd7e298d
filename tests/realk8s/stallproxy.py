"""A TCP proxy in front of the real kube-apiserver that can stop answering, for tests/realk8s.

It is :class:`tests.fixtures.faultproxy.FaultProxy` (byte for byte, so TLS passes through: the API
server's certificate covers ``IP:127.0.0.1``, where the proxy listens too): ``stall(proxy)`` keeps
every connection, open or new, open but forwards nothing either way, as a proxy or load balancer
that hangs; ``resume(proxy)`` forwards again (the connections stalled meanwhile are closed: their
clients gave up on them). :func:`kubeconfig_through` writes a copy of a kubeconfig whose server is
the proxy.
"""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

from tests.fixtures.faultproxy import Fault, FaultProxy


def api_server_address(kubeconfig: Path) -> tuple[str, int]:
    """(host, port) of the server of ``kubeconfig``'s first cluster."""
    server = json.loads(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    parts = urllib.parse.urlsplit(server)
    assert parts.hostname and parts.port, server
    return parts.hostname, parts.port


def kubeconfig_through(proxy: FaultProxy, kubeconfig: Path, path: Path) -> Path:
    """A copy of ``kubeconfig`` (same user, same CA) that reaches the API server through ``proxy``."""
    config = json.loads(kubeconfig.read_text())
    port = urllib.parse.urlsplit(proxy.url).port
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path.write_text(json.dumps(config))
    return path


def stall(proxy: FaultProxy) -> None:
    proxy.set(Fault.STALL)


def resume(proxy: FaultProxy) -> None:
    proxy.set(Fault.PASS)
