"""Serve the dashboard with uvicorn on a socket bound beforehand (so ``:0`` tells its real port)."""

from __future__ import annotations

import socket

import uvicorn
from starlette.types import ASGIApp

from gitdeploy.errors import PermanentError

SHUTDOWN_GRACE_SECONDS = 2.0
"""Open live streams never end by themselves: a stop waits this long for them, then closes them."""


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (an empty host: every IPv4 interface)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host or "0.0.0.0", port))
    except OSError as failed:
        sock.close()
        raise PermanentError(
            f"cannot listen on {host or '0.0.0.0'}:{port}: {failed.strerror}",
            hint="pick another address with --listen (for example 127.0.0.1:0 for any free port)",
        ) from failed
    sock.listen(128)
    return sock


def url_of(sock: socket.socket) -> str:
    """``http://HOST:PORT/`` of a bound socket (a wildcard address shown as localhost)."""
    host, port = sock.getsockname()[:2]
    shown = "localhost" if host in ("0.0.0.0", "::") else (f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}/"


def serve(app: ASGIApp, sock: socket.socket) -> None:
    """Serve ``app`` on ``sock`` until SIGINT or SIGTERM."""
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=int(SHUTDOWN_GRACE_SECONDS),
        lifespan="off",
    )
    uvicorn.Server(config).run(sockets=[sock])
