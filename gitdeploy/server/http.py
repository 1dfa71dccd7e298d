"""gitdeploy's HTTP endpoints, served by uvicorn in a background thread.

* ``GET /healthz``: 200 while the process runs (the liveness probe).
* ``GET /readyz``: 200 once :class:`Readiness` says the repository was read and the leader Lease
  decided; 503 with a one-line reason before that (the readiness probe).
* ``GET /metrics``: :meth:`Metrics.render` in the Prometheus text format.
* ``POST /hooks/git``: GitHub and GitLab push webhooks (:mod:`gitdeploy.server.webhook`). A verified
  push to the tracked repository and branch calls ``on_push`` once; everything else is answered
  without side effects.
* every other path: the ``fallback`` ASGI app when one is given (``gitdeploy run`` serves the
  dashboard there), else 404.

The answers are decided in :mod:`gitdeploy.server.endpoints`, an ASGI app; uvicorn (h11) parses HTTP.

Usage from the loop::

    secret = read_secret_file(path, "--webhook-secret-file")
    server = HttpServer(metrics=metrics, readiness=readiness, host="", port=8080,
                        webhook=WebhookSettings(secret=secret, repo_url=url, branch="main"),
                        on_push=lambda event: wake_up.set())
    server.start()          # returns once it listens; serves from a daemon thread
    ...
    server.stop()

``on_push`` runs on the server's event loop and should only hand the event over (set an Event, put
it on a queue); it must not fetch by itself, so the sender gets its answer within milliseconds.
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Final

import uvicorn
from starlette.types import ASGIApp

from gitdeploy.errors import PermanentError
from gitdeploy.server.endpoints import HOOK_PATH, Endpoints
from gitdeploy.server.metrics import Metrics
from gitdeploy.server.protocol import with_head_deadline
from gitdeploy.server.webhook import (
    DEFAULT_MAX_BODY_BYTES,
    Ignored,
    PushEvent,
    Rejected,
    normalize_branch,
    parse_delivery,
    push_matches,
)

log = logging.getLogger(__name__)

__all__ = [
    "HOOK_PATH",
    "HttpServer",
    "Readiness",
    "WebhookSettings",
    "parse_listen_address",
    "read_secret_file",
]

REQUEST_TIMEOUT_SECONDS: Final = 10.0
"""An idle kept-alive connection is closed after this long, and so is one whose request head (line
and headers) is not complete this long after it connected: idle or trickling clients cannot hold
sockets (see :mod:`gitdeploy.server.protocol`)."""
SHUTDOWN_GRACE_SECONDS: Final = 2
"""A stop waits this long for requests in flight (the dashboard's live streams), then closes them."""
MAX_CONCURRENT_BODIES: Final = 4
"""Webhook bodies read at once; a delivery beyond them is answered 503 without its body being read,
so unauthenticated senders can make gitdeploy hold at most this many bodies (5 MiB each)."""
BODY_TIMEOUT_SECONDS: Final = 10.0
"""A webhook body must arrive within this long in all, so a sender trickling bytes cannot hold a
body slot (the per-read timeout alone would let one byte every few seconds go on for days)."""


@dataclass(frozen=True)
class ReadinessState:
    ready: bool
    reason: str
    """``"ok"`` when ready, else one line saying what is still missing."""


class Readiness:
    """Whether gitdeploy is ready to serve: the config repository was read and the Lease decided.

    "Decided" means this process knows whether it leads or follows; a follower is ready too, so a
    rolling update of gitdeploy itself can make progress while the old pod still holds the Lease.
    Thread-safe: the loop sets it, the HTTP server reads it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._repo_read = False
        self._lease_decided = False

    def set_repo_read(self, read: bool = True) -> None:
        """Say that the config repository was (or, with ``False``, is no longer) read."""
        with self._lock:
            self._repo_read = read

    def set_lease_decided(self, decided: bool = True) -> None:
        """Say that this process knows whether it holds the leader Lease."""
        with self._lock:
            self._lease_decided = decided

    def state(self) -> ReadinessState:
        with self._lock:
            missing = [
                what
                for what, done in (
                    ("the config repository was not read yet", self._repo_read),
                    ("the leader Lease is not decided yet", self._lease_decided),
                )
                if not done
            ]
        if missing:
            return ReadinessState(False, "not ready: " + "; ".join(missing))
        return ReadinessState(True, "ok")


@dataclass(frozen=True)
class WebhookSettings:
    """What ``POST /hooks/git`` accepts: deliveries signed with ``secret`` for this repo and branch."""

    secret: bytes
    repo_url: str
    branch: str
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_concurrent_bodies: int = MAX_CONCURRENT_BODIES
    body_timeout_seconds: float = BODY_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        if not self.secret:
            raise ValueError("the webhook secret is empty; give a secret or leave the webhook off")
        if self.max_body_bytes <= 0 or self.max_concurrent_bodies <= 0 or self.body_timeout_seconds <= 0:
            raise ValueError(
                "max_body_bytes, max_concurrent_bodies and body_timeout_seconds must be positive"
            )

    def __repr__(self) -> str:
        return (
            f"WebhookSettings(secret=***, repo_url={self.repo_url!r}, branch={self.branch!r}, "
            f"max_body_bytes={self.max_body_bytes}, max_concurrent_bodies={self.max_concurrent_bodies})"
        )


def read_secret_file(path: Path | str, option: str, *, min_bytes: int = 1) -> bytes:
    """The secret stored in ``path`` (a mounted Secret key), without its trailing newline; a file
    that cannot be read, or holds fewer than ``min_bytes``, is refused naming ``option`` (the flag
    that gave it, e.g. ``--webhook-secret-file``)."""
    try:
        secret = Path(path).read_bytes().rstrip(b"\r\n")
    except OSError as failed:
        raise PermanentError(
            f"cannot read {option} {path}: {failed.strerror or failed}",
            hint=f"give {option} a readable file holding the secret, e.g. a mounted Secret key",
        ) from failed
    if len(secret) < min_bytes:
        size = "empty" if not secret else f"{len(secret)} bytes; at least {min_bytes} are needed"
        raise PermanentError(
            f"{option} {path} is {size}",
            hint=f"make one with: head -c 32 /dev/urandom | base64 > {path}",
        )
    return secret


def _bind_error(host: str, port: int, problem: OSError) -> PermanentError:
    address = f"[{host}]:{port}" if ":" in host else f"{host or '0.0.0.0'}:{port}"
    if problem.errno == errno.EADDRINUSE:
        return PermanentError(
            f"cannot listen on {address}: the address is already in use (another `gitdeploy run`, "
            "or another program, listens there)",
            hint=f"stop it (`ss -ltnp 'sport = :{port}'` shows which process it is) or give "
            "--listen another port, e.g. --listen :8081",
        )
    if problem.errno == errno.EACCES:
        return PermanentError(
            f"cannot listen on {address}: permission denied (ports below 1024 need privileges)",
            hint="give --listen a port of 1024 or more, e.g. --listen :8080",
        )
    return PermanentError(
        f"cannot listen on {address}: {problem.strerror or problem}",
        hint="give --listen an address of this machine (e.g. --listen :8080 for every interface, "
        "--listen 127.0.0.1:8080 for this machine only)",
    )


def parse_listen_address(text: str) -> tuple[str, int]:
    """Split a ``--listen`` value: ``:8080``, ``0.0.0.0:8080``, ``localhost:0``, ``[::]:8080``.

    An empty host means every IPv4 interface.

    >>> parse_listen_address(":8080")
    ('', 8080)
    >>> parse_listen_address("[::1]:9000")
    ('::1', 9000)
    """
    host, sep, port_text = text.strip().rpartition(":")
    if not sep or not port_text.isdigit():
        raise ValueError(f"listen address {text!r} is not host:port (for example :8080)")
    port = int(port_text)
    if port > 65535:
        raise ValueError(f"port {port} in {text!r} is out of range")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"write an IPv6 address in brackets: [{host}]:{port}")
    return host, port


OnPush = Callable[[PushEvent], None]
MakeApp = Callable[[threading.Event], ASGIApp]
"""Builds the app for the other paths, given the event set when the server stops (so that its
open streams end)."""


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as problem:
        sock.close()
        raise _bind_error(host, port, problem) from problem
    return sock


class _Uvicorn(uvicorn.Server):
    """uvicorn's server, told apart from a process-wide one: it never installs signal handlers
    (it runs in a thread) and it says when it listens."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.listening.set()


class HttpServer:
    """Health, readiness, metrics and the webhook receiver on one port.

    ``port=0`` picks a free port (tests); :attr:`url` tells which. Without ``webhook`` settings,
    ``POST /hooks/git`` answers 404. A push for the same branch and commit as the last one that
    triggered is answered 202 without calling ``on_push`` again (a redelivery or a replay).
    """

    def __init__(
        self,
        *,
        metrics: Metrics,
        readiness: Readiness,
        host: str = "",
        port: int = 8080,
        webhook: WebhookSettings | None = None,
        on_push: OnPush | None = None,
        fallback: MakeApp | None = None,
        head_timeout_seconds: float = REQUEST_TIMEOUT_SECONDS,
    ) -> None:
        if webhook is not None and on_push is None:
            raise ValueError("webhook settings given without an on_push callback")
        self.metrics = metrics
        self.readiness = readiness
        self.webhook = webhook
        self._on_push = on_push
        self._host = host
        self._port = port
        self._fallback = fallback
        self._head_timeout = head_timeout_seconds
        self._sock: socket.socket | None = None
        self._server: _Uvicorn | None = None
        self._thread: threading.Thread | None = None
        self.stopping = threading.Event()
        """Set when :meth:`stop` begins: the fallback app's live streams end."""
        self._push_lock = threading.Lock()
        self._last_triggered: dict[str, str] = {}
        self.body_slots = threading.BoundedSemaphore(webhook.max_concurrent_bodies if webhook else 1)
        """One per webhook body being read (see :data:`MAX_CONCURRENT_BODIES`)."""

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port); only valid after :meth:`start`."""
        if self._sock is None:
            raise RuntimeError("the server is not started")
        host, port = self._sock.getsockname()[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        """``http://host:port`` to reach the server (a wildcard bind is reached on loopback)."""
        host, port = self.address
        if host in ("", "0.0.0.0"):
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{port}"

    def start(self) -> None:
        """Bind, and serve from a daemon thread once listening. An address that cannot be bound
        (in use, not this machine's, a privileged port) is a :class:`PermanentError` saying what
        to do."""
        if self._server is not None:
            raise RuntimeError("the server is already started")
        self._sock = sock = _bind(self._host, self._port)
        self.stopping.clear()
        fallback = self._fallback(self.stopping) if self._fallback is not None else None
        config = uvicorn.Config(
            Endpoints(self, fallback),
            http=with_head_deadline(self._head_timeout),
            lifespan="off",
            log_config=None,
            log_level="warning",
            access_log=False,
            server_header=False,
            headers=[("Server", "gitdeploy")],
            timeout_keep_alive=int(REQUEST_TIMEOUT_SECONDS),
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
        self._server = server = _Uvicorn(config)
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="gitdeploy-http", daemon=True
        )
        self._thread.start()
        while not server.listening.wait(0.01):
            if not self._thread.is_alive():
                self._server = self._thread = None
                sock.close()
                raise RuntimeError("the HTTP server stopped while starting; see the log")
        log.info("serving health, metrics and webhooks on %s", self.url)

    def stop(self) -> None:
        """Stop serving and close the socket. Safe to call twice."""
        server, thread, sock = self._server, self._thread, self._sock
        if server is None:
            return
        self.stopping.set()
        server.should_exit = True
        if thread is not None:
            thread.join(timeout=SHUTDOWN_GRACE_SECONDS + 5)
        if sock is not None:
            sock.close()
        self._server = None
        self._thread = None
        self._sock = None

    def __enter__(self) -> HttpServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the webhook decision, kept apart from the HTTP plumbing ---------------------------------

    def handle_delivery(self, headers: dict[str, str], body: bytes) -> tuple[HTTPStatus, str]:
        """Verify a delivery, call ``on_push`` for a new matching push, and say what to answer."""
        settings = self.webhook
        if settings is None or self._on_push is None:
            return HTTPStatus.NOT_FOUND, "webhook receiver not configured"
        verdict = parse_delivery(headers, body, settings.secret, max_body_bytes=settings.max_body_bytes)
        if isinstance(verdict, Rejected):
            self.metrics.webhook_delivery(verdict.provider, "rejected")
            log.warning("webhook delivery refused (%d): %s", verdict.status, verdict.reason)
            return verdict.status, verdict.reason
        if isinstance(verdict, Ignored):
            self.metrics.webhook_delivery(verdict.provider, "ignored")
            log.debug("webhook delivery ignored: %s", verdict.reason)
            return verdict.status, verdict.reason
        if not push_matches(verdict, settings.repo_url, settings.branch):
            self.metrics.webhook_delivery(verdict.provider, "not-tracked")
            log.info(
                "webhook push to %s of %s ignored: gitdeploy tracks branch %s of another repository",
                verdict.branch,
                verdict.repo_urls[0],
                normalize_branch(settings.branch),
            )
            return HTTPStatus.ACCEPTED, "push ignored: not the tracked repository and branch"
        with self._push_lock:
            if self._last_triggered.get(verdict.branch) == verdict.after:
                duplicate = True
            else:
                duplicate = False
                self._last_triggered[verdict.branch] = verdict.after
        if duplicate:
            self.metrics.webhook_delivery(verdict.provider, "duplicate")
            log.info("webhook push of %s already triggered a fetch; ignored", verdict.after[:12])
            return HTTPStatus.ACCEPTED, f"push of {verdict.after} already triggered a fetch"
        try:
            self._on_push(verdict)
        except Exception:
            with self._push_lock:
                if self._last_triggered.get(verdict.branch) == verdict.after:
                    del self._last_triggered[verdict.branch]
            self.metrics.webhook_delivery(verdict.provider, "error")
            log.exception("webhook push of %s: the fetch could not be triggered", verdict.after[:12])
            return HTTPStatus.INTERNAL_SERVER_ERROR, "the fetch could not be triggered; see gitdeploy's log"
        self.metrics.webhook_delivery(verdict.provider, "triggered")
        log.info(
            "webhook push of %s to %s (%s delivery %s): fetch triggered",
            verdict.after[:12],
            verdict.branch,
            verdict.provider,
            verdict.delivery_id or "-",
        )
        return HTTPStatus.OK, f"fetch triggered for {verdict.after}"
