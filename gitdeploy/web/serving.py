"""Serve the dashboard with uvicorn on a socket bound beforehand (so ``:0`` tells its real port)."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

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


class _Server(uvicorn.Server):
    """uvicorn's server, stopped by our own SIGINT/SIGTERM handlers: a stop is a normal exit (0),
    not the signal raised again, and the live streams are told to end first."""

    def __init__(self, config: uvicorn.Config, stopping: threading.Event) -> None:
        super().__init__(config)
        self.stopping = stopping

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        def stop(_signum: int, _frame: FrameType | None) -> None:
            self.stopping.set()
            self.should_exit = True

        before = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)


def serve(make_app: Callable[[threading.Event], ASGIApp], sock: socket.socket) -> None:
    """Serve the app ``make_app`` builds (given the event set when it must stop) on ``sock`` until
    SIGINT or SIGTERM."""
    stopping = threading.Event()
    config = uvicorn.Config(
        make_app(stopping),
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=int(SHUTDOWN_GRACE_SECONDS),
        lifespan="off",
    )
    _Server(config, stopping).run(sockets=[sock])
