"""The ASGI app behind :class:`gitdeploy.server.http.HttpServer`: probes, metrics and the webhook
receiver, and every other path handed to an optional app (the dashboard).

uvicorn (with h11) parses HTTP; this module decides the answers, as the standard-library handler it
replaced did: a webhook body is read only once its headers could be authentic and a body slot is
free, within :data:`BODY_TIMEOUT_SECONDS` in all; a refused request is answered at once and its
connection closed after a bounded drain (:func:`_reply_and_drain`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from http import HTTPStatus
from typing import TYPE_CHECKING, Final

from starlette.types import ASGIApp, Receive, Scope, Send

from gitdeploy.server.metrics import CONTENT_TYPE
from gitdeploy.server.webhook import Provider, check_headers

if TYPE_CHECKING:
    from gitdeploy.server.http import HttpServer

log = logging.getLogger("gitdeploy.server.http")

HOOK_PATH: Final = "/hooks/git"
PROBES: Final = ("/healthz", "/readyz", "/metrics")
DISCARD_LIMIT_BYTES: Final = 1024 * 1024
DISCARD_TIMEOUT_SECONDS: Final = 1.0
"""An unwanted body is drained for at most this long in all (see :func:`_reply_and_drain`)."""
TEXT: Final = "text/plain; charset=utf-8"


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers, names lowercased (a repeated header: its last value)."""
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}


def _head(
    status: int, content_type: str, length: int, *, allow: str | None, close: bool
) -> dict[str, object]:
    headers = [
        (b"Content-Type", content_type.encode()),
        (b"Content-Length", str(length).encode()),
        (b"Cache-Control", b"no-store"),
    ]
    if allow is not None:
        headers.append((b"Allow", allow.encode()))
    if close:
        headers.append((b"Connection", b"close"))
    return {"type": "http.response.start", "status": status, "headers": headers}


def _line(message: str) -> bytes:
    return (" ".join(message.split()) + "\n").encode("utf-8")


async def _send(
    scope: Scope,
    send: Send,
    status: int,
    body: bytes,
    content_type: str = TEXT,
    *,
    allow: str | None = None,
    close: bool = False,
    more: bool = False,
) -> None:
    """Answer ``body`` (not sent to a HEAD request); with ``more`` the response is left open."""
    await send(_head(status, content_type, len(body), allow=allow, close=close))
    shown = b"" if scope["method"] == "HEAD" else body
    await send({"type": "http.response.body", "body": shown, "more_body": more})


async def _drain(receive: Receive, limit: int, timeout: float) -> None:
    """Read and drop up to ``limit`` bytes of the request's body, for at most ``timeout`` seconds.

    Closing a socket with unread bytes makes the kernel reset the connection, and a reset can
    destroy the answer before the client reads it; draining a bounded amount avoids that for
    ordinary clients without letting a huge or trickling body keep the connection."""
    deadline = time.monotonic() + timeout
    while limit > 0:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            message = await asyncio.wait_for(receive(), left)
        except TimeoutError:
            return
        if message["type"] != "http.request":
            return
        limit -= len(message.get("body", b""))
        if not message.get("more_body", False):
            return


async def _reply_and_drain(
    scope: Scope,
    receive: Receive,
    send: Send,
    status: HTTPStatus,
    message: str,
    *,
    allow: str | None = None,
) -> None:
    """Answer ``message`` at once, drain a little of the body, then close the connection.

    A request that asked ``Expect: 100-continue`` sends no body unless told to: nothing to drain."""
    await _send(scope, send, status, _line(message), allow=allow, close=True, more=True)
    if _headers(scope).get("expect", "").lower() != "100-continue":
        await _drain(receive, DISCARD_LIMIT_BYTES, DISCARD_TIMEOUT_SECONDS)
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def read_within(receive: Receive, length: int, timeout: float) -> bytes | None:
    """The body of ``length`` bytes, or None when it did not all arrive within ``timeout`` seconds
    in all, or the sender went away."""
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    received = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        try:
            message = await asyncio.wait_for(receive(), left)
        except TimeoutError:
            return None
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        chunks.append(chunk)
        received += len(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks) if received == length else None


class Endpoints:
    """The ASGI app: routes the four paths of :class:`HttpServer`, and the rest to ``fallback``."""

    def __init__(self, server: HttpServer, fallback: ASGIApp | None) -> None:
        self.server = server
        self.fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if self.fallback is not None:
                await self.fallback(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        if path in PROBES:
            if method in ("GET", "HEAD"):
                await self._probe(scope, send, path)
            else:
                await _reply_and_drain(
                    scope, receive, send, HTTPStatus.METHOD_NOT_ALLOWED, "use GET", allow="GET"
                )
        elif path == HOOK_PATH:
            if method != "POST":
                await _send(scope, send, HTTPStatus.METHOD_NOT_ALLOWED, _line("use POST"), allow="POST")
            elif self.server.webhook is None:
                await _reply_and_drain(
                    scope, receive, send, HTTPStatus.NOT_FOUND, "webhook receiver not configured"
                )
            else:
                await self._hook(scope, receive, send)
        elif self.fallback is not None:
            await self.fallback(scope, receive, send)
        elif method in ("GET", "HEAD"):
            await _send(scope, send, HTTPStatus.NOT_FOUND, _line("not found"))
        else:
            await _reply_and_drain(scope, receive, send, HTTPStatus.NOT_FOUND, "not found")

    async def _probe(self, scope: Scope, send: Send, path: str) -> None:
        server = self.server
        if path == "/healthz":
            await _send(scope, send, HTTPStatus.OK, _line("ok"))
        elif path == "/readyz":
            state = server.readiness.state()
            status = HTTPStatus.OK if state.ready else HTTPStatus.SERVICE_UNAVAILABLE
            await _send(scope, send, status, _line(state.reason))
        else:  # on a thread: counting thousands of apps' states must not hold up probes and pushes
            body = await asyncio.to_thread(server.metrics.render)
            await _send(scope, send, HTTPStatus.OK, body, CONTENT_TYPE)

    async def _hook(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A webhook delivery: its length and headers checked before its body is read."""
        server = self.server
        settings = server.webhook
        assert settings is not None
        headers = _headers(scope)
        length = await self._body_length(scope, receive, send, headers, settings.max_body_bytes)
        if length is None:
            return
        refused = check_headers(headers, settings.secret)
        if refused is not None:  # nothing of an unauthenticated body is read
            await self._refuse(scope, receive, send, refused.status, refused.reason, refused.provider)
            return
        if not server.body_slots.acquire(blocking=False):
            busy = f"{settings.max_concurrent_bodies} deliveries are being read already; retry later"
            await self._refuse(scope, receive, send, HTTPStatus.SERVICE_UNAVAILABLE, busy, Provider.UNKNOWN)
            return
        server.metrics.webhook_bodies_reading.inc()
        try:
            body = await read_within(receive, length, settings.body_timeout_seconds)
        finally:
            server.metrics.webhook_bodies_reading.dec()
            server.body_slots.release()
        if body is None:
            timeout = settings.body_timeout_seconds
            log.warning("webhook delivery refused (408): the body did not arrive within %.0f s", timeout)
            message = _line(f"the body did not arrive within {timeout:.0f} s")
            await _send(scope, send, HTTPStatus.REQUEST_TIMEOUT, message, close=True)
            return
        status, message_text = server.handle_delivery(headers, body)
        await _send(scope, send, status, _line(message_text))

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, status: HTTPStatus, reason: str, provider: Provider
    ) -> None:
        self.server.metrics.webhook_delivery(provider, "rejected")
        log.warning("webhook delivery refused (%d): %s", status, reason)
        await _reply_and_drain(scope, receive, send, status, reason)

    async def _body_length(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str], limit: int
    ) -> int | None:
        """The body's length from the headers, or None after answering 411/413/400 without
        reading the body."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            message = "send a Content-Length; chunked bodies are not accepted"
            await _send(scope, send, HTTPStatus.LENGTH_REQUIRED, _line(message), close=True)
            return None
        text = headers.get("content-length")
        if text is None:
            await _send(scope, send, HTTPStatus.LENGTH_REQUIRED, _line("Content-Length required"), close=True)
            return None
        if not text.strip().isdigit():
            await _send(scope, send, HTTPStatus.BAD_REQUEST, _line("invalid Content-Length"), close=True)
            return None
        length = int(text)
        if length > limit:
            self.server.metrics.webhook_delivery(Provider.UNKNOWN, "rejected")
            log.warning("webhook delivery refused (413): Content-Length above %d bytes", limit)
            message = f"body larger than {limit} bytes"
            await _reply_and_drain(scope, receive, send, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, message)
            return None
        return length
