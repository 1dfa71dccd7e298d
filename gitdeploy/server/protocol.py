"""uvicorn's h11 protocol with a deadline on each request's head (request line and headers).

uvicorn times out a kept-alive connection only while it is idle after a response, and any byte
received cancels that timer; nothing bounds how long a request's head may take. A client that
connects and sends nothing, or one header byte every few seconds, would hold its socket for ever,
and enough of them would exhaust the process's file descriptors, taking the health probes served
on the same port down with them (slowloris). Here every connection must send a complete request
head within ``seconds`` of connecting, and again of each response's end; otherwise it is closed.
The body has its own bound (``WebhookSettings.body_timeout_seconds``), and a response being sent
(a dashboard's live stream) is never cut: the deadline runs only while the request head is awaited.
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["with_head_deadline"]


def with_head_deadline(seconds: float) -> type[H11Protocol]:
    """An :class:`H11Protocol` closing connections whose request head is not complete in ``seconds``."""

    class HeadDeadlineProtocol(H11Protocol):
        head_deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._await_head()

        def connection_lost(self, exc: Exception | None) -> None:
            self._head_arrived()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:  # the head is in (or the connection ended)
                self._head_arrived()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.conn.their_state is h11.IDLE:  # a kept-alive connection awaits its next request
                self._await_head()

        def _await_head(self) -> None:
            self._head_arrived()
            self.head_deadline = self.loop.call_later(seconds, self._head_too_slow)

        def _head_arrived(self) -> None:
            if self.head_deadline is not None:
                self.head_deadline.cancel()
                self.head_deadline = None

        def _head_too_slow(self) -> None:
            self.head_deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

    return HeadDeadlineProtocol
