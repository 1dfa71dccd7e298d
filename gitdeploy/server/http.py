"""gitdeploy's HTTP endpoints, served by the standard library in a background thread.

* ``GET /healthz``: 200 while the process runs (the liveness probe).
* ``GET /readyz``: 200 once :class:`Readiness` says the repository was read and the leader Lease
  decided; 503 with a one-line reason before that (the readiness probe).
* ``GET /metrics``: :meth:`Metrics.render` in the Prometheus text format.
* ``POST /hooks/git``: GitHub and GitLab push webhooks (:mod:`gitdeploy.server.webhook`). A verified
  push to the tracked repository and branch calls ``on_push`` once; everything else is answered
  without side effects.

Usage from the loop::

    server = HttpServer(metrics=metrics, readiness=readiness, host="", port=8080,
                        webhook=WebhookSettings(secret=read_secret_file(path), repo_url=url, branch="main"),
                        on_push=lambda event: wake_up.set())
    server.start()          # returns at once; serves from a daemon thread
    ...
    server.stop()

``on_push`` runs on the request's thread and should only hand the event over (set an Event, put it
on a queue); it must not fetch by itself, so the sender gets its answer within milliseconds.
"""

from __future__ import annotations

import errno
import logging
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Final

from gitdeploy.errors import PermanentError
from gitdeploy.server.metrics import CONTENT_TYPE, Metrics
from gitdeploy.server.webhook import (
    DEFAULT_MAX_BODY_BYTES,
    Ignored,
    Provider,
    PushEvent,
    Rejected,
    check_headers,
    normalize_branch,
    parse_delivery,
    push_matches,
)

log = logging.getLogger(__name__)

HOOK_PATH: Final = "/hooks/git"
REQUEST_TIMEOUT_SECONDS: Final = 10.0
"""A client that sends nothing for this long is disconnected, so slow senders cannot hold threads."""
DISCARD_LIMIT_BYTES: Final = 1024 * 1024
DISCARD_TIMEOUT_SECONDS: Final = 1.0
"""An unwanted body is drained for at most this long in all (see :meth:`_Handler._discard`)."""
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


def read_secret_file(path: Path | str) -> bytes:
    """The webhook secret stored in ``path`` (a mounted Secret key), without a trailing newline."""
    secret = Path(path).read_bytes().rstrip(b"\r\n")
    if not secret:
        raise ValueError(f"the webhook secret file {path} is empty")
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], app: HttpServer) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.app = app
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's fully qualified name, which can stall for
        # seconds on a pod without working reverse DNS; the name is never used here.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)


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
    ) -> None:
        if webhook is not None and on_push is None:
            raise ValueError("webhook settings given without an on_push callback")
        self.metrics = metrics
        self.readiness = readiness
        self.webhook = webhook
        self._on_push = on_push
        self._host = host
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._push_lock = threading.Lock()
        self._last_triggered: dict[str, str] = {}
        self.body_slots = threading.BoundedSemaphore(webhook.max_concurrent_bodies if webhook else 1)
        """One per webhook body being read (see :data:`MAX_CONCURRENT_BODIES`)."""

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port); only valid after :meth:`start`."""
        if self._server is None:
            raise RuntimeError("the server is not started")
        host, port = self._server.server_address[:2]
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
        """Bind and serve from a daemon thread. An address that cannot be bound (in use, not
        this machine's, a privileged port) is a :class:`PermanentError` saying what to do."""
        if self._server is not None:
            raise RuntimeError("the server is already started")
        try:
            self._server = _Server((self._host, self._port), self)
        except OSError as problem:
            raise _bind_error(self._host, self._port, problem) from problem
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.5},
            name="gitdeploy-http",
            daemon=True,
        )
        self._thread.start()
        log.info("serving health, metrics and webhooks on %s", self.url)

    def stop(self) -> None:
        """Stop serving and close the socket. Safe to call twice."""
        server, thread = self._server, self._thread
        if server is None:
            return
        # serve_forever notices a shutdown request only when its select() returns: connect to it
        # so that happens at once instead of after up to a poll interval.
        stopper = threading.Thread(target=server.shutdown, name="gitdeploy-http-stop", daemon=True)
        stopper.start()
        while stopper.is_alive():
            _wake(self.url)
            stopper.join(timeout=0.01)
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = None
        self._thread = None

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


def _wake(url: str) -> None:
    host, _, port = url.removeprefix("http://").rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=0.1):
            pass
    except OSError:
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = REQUEST_TIMEOUT_SECONDS
    # Headers and body go out in two writes; without TCP_NODELAY the second waits for a delayed ACK
    # (about 40 ms on Linux), which a webhook sender would see on every delivery.
    disable_nagle_algorithm = True
    server_version = "gitdeploy"
    sys_version = ""

    # -- routing --------------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        app = self.server.app
        if path == "/healthz":
            self._reply(HTTPStatus.OK, "ok")
        elif path == "/readyz":
            state = app.readiness.state()
            self._reply(HTTPStatus.OK if state.ready else HTTPStatus.SERVICE_UNAVAILABLE, state.reason)
        elif path == "/metrics":
            self._send(HTTPStatus.OK, app.metrics.render(), CONTENT_TYPE)
        elif path == HOOK_PATH:
            self._reply(HTTPStatus.METHOD_NOT_ALLOWED, "use POST", allow="POST")
        else:
            self._reply(HTTPStatus.NOT_FOUND, "not found")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        app = self.server.app
        if path != HOOK_PATH or app.webhook is None:
            self.close_connection = True
            if path in ("/healthz", "/readyz", "/metrics"):
                self._reply(HTTPStatus.METHOD_NOT_ALLOWED, "use GET", allow="GET")
            elif path == HOOK_PATH:
                self._reply(HTTPStatus.NOT_FOUND, "webhook receiver not configured")
            else:
                self._reply(HTTPStatus.NOT_FOUND, "not found")
            self._discard(self._content_length())
            return
        length = self._body_length(app.webhook.max_body_bytes)
        if length is None:
            return
        headers = dict(self.headers.items())
        refused = check_headers(headers, app.webhook.secret)
        if refused is not None:  # nothing of an unauthenticated body is read
            self._refuse(refused.status, refused.reason, refused.provider)
            return
        if not app.body_slots.acquire(blocking=False):
            self._refuse(
                HTTPStatus.SERVICE_UNAVAILABLE,
                f"{app.webhook.max_concurrent_bodies} deliveries are being read already; retry later",
                Provider.UNKNOWN,
            )
            return
        app.metrics.webhook_bodies_reading.inc()
        try:
            body = self._read_body(length, app.webhook.body_timeout_seconds)
        finally:
            app.metrics.webhook_bodies_reading.dec()
            app.body_slots.release()
        if body is None:
            return
        status, message = app.handle_delivery(headers, body)
        self._reply(status, message)

    def _refuse(self, status: HTTPStatus, reason: str, provider: Provider) -> None:
        """Answer ``status`` and close the connection, draining only a little of the body."""
        self._answer_refusal(status, reason, provider)
        self._discard(self._content_length())

    def _answer_refusal(self, status: HTTPStatus, reason: str, provider: Provider) -> None:
        self.close_connection = True
        self.server.app.metrics.webhook_delivery(provider, "rejected")
        log.warning("webhook delivery refused (%d): %s", status, reason)
        self._reply(status, reason)

    def _content_length(self) -> int:
        length = self.headers.get("Content-Length", "")
        return int(length) if length.isdigit() else 0

    def _body_length(self, limit: int) -> int | None:
        """The body's length from the headers, or None after answering 411/413/400 without
        reading the body."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            self._reply(HTTPStatus.LENGTH_REQUIRED, "send a Content-Length; chunked bodies are not accepted")
            return None
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            self.close_connection = True
            self._reply(HTTPStatus.LENGTH_REQUIRED, "Content-Length required")
            return None
        try:
            length = int(length_text)
            if length < 0:
                raise ValueError(length_text)
        except ValueError:
            self.close_connection = True
            self._reply(HTTPStatus.BAD_REQUEST, "invalid Content-Length")
            return None
        if length > limit:
            self._refuse_too_large(limit)
            self._discard(length)
            return None
        return length

    def _read_body(self, length: int, timeout: float) -> bytes | None:
        """The body of ``length`` bytes, or None after answering 408 when it did not all arrive
        within ``timeout`` seconds."""
        body = self._read_within(length, timeout, keep=True)
        if body is None:
            self.close_connection = True
            log.warning("webhook delivery refused (408): the body did not arrive within %.0f s", timeout)
            self._reply(HTTPStatus.REQUEST_TIMEOUT, f"the body did not arrive within {timeout:.0f} s")
        return body

    def _read_within(self, length: int, timeout: float, *, keep: bool) -> bytes | None:
        """Read ``length`` bytes of body within ``timeout`` seconds in all; None when the sender
        is slower, or stops. With ``keep`` False, the bytes are dropped as they arrive."""
        deadline = time.monotonic() + timeout
        chunks: list[bytes] = []
        remaining = length
        try:
            while remaining > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.connection.settimeout(left)
                chunk = self.rfile.read1(min(remaining, 65536))
                if not chunk:
                    return None
                remaining -= len(chunk)
                if keep:
                    chunks.append(chunk)
        except OSError:  # a timeout, or the sender went away
            return None
        finally:
            self.connection.settimeout(self.timeout)
        return b"".join(chunks)

    def handle_expect_100(self) -> bool:
        # A sender that asks before sending a too large or unauthenticated body is refused before
        # it sends it.
        app = self.server.app
        length_text = self.headers.get("Content-Length", "")
        limit = app.webhook.max_body_bytes if app.webhook is not None else 0
        if self.command == "POST" and length_text.isdigit() and int(length_text) > limit > 0:
            self._refuse_too_large(limit)
            return False
        if self.command == "POST" and app.webhook is not None:
            refused = check_headers(dict(self.headers.items()), app.webhook.secret)
            if refused is not None:  # no body follows: nothing to drain
                self._answer_refusal(refused.status, refused.reason, refused.provider)
                return False
        return super().handle_expect_100()

    def _refuse_too_large(self, limit: int) -> None:
        # The body is not read: the connection is closed so its bytes are never taken for a request.
        self.close_connection = True
        self.server.app.metrics.webhook_delivery(Provider.UNKNOWN, "rejected")
        log.warning("webhook delivery refused (413): Content-Length above %d bytes", limit)
        self._reply(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body larger than {limit} bytes")

    def _discard(self, length: int) -> None:
        """Read and drop up to :data:`DISCARD_LIMIT_BYTES` of an unwanted body, for at most
        :data:`DISCARD_TIMEOUT_SECONDS` in all.

        Closing a socket with unread bytes makes the kernel reset the connection, and a reset can
        destroy the answer before the client reads it; draining a bounded amount avoids that for
        ordinary clients without letting a huge or trickling body keep the thread busy.
        """
        self._read_within(min(length, DISCARD_LIMIT_BYTES), DISCARD_TIMEOUT_SECONDS, keep=False)

    def do_HEAD(self) -> None:
        self.do_GET()

    # -- responses ------------------------------------------------------------------------------

    def _reply(self, status: HTTPStatus, message: str, *, allow: str | None = None) -> None:
        line = " ".join(message.split()) + "\n"
        self._send(status, line.encode("utf-8"), "text/plain; charset=utf-8", allow=allow)

    def _send(self, status: HTTPStatus, body: bytes, content_type: str, *, allow: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        if allow is not None:
            self.send_header("Allow", allow)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        # Access lines (probes every few seconds, scrapes) go to debug, not to stderr.
        log.debug("%s %s", self.address_string(), format % args)
