"""A real HTTP server in a thread that records what gitdeploy's notifier posts to it."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def message(self) -> dict[str, Any]:
        parsed = json.loads(self.body)
        assert isinstance(parsed, dict)
        return parsed

    def signed_with(self, secret: bytes) -> bool:
        expected = "sha256=" + hmac.new(secret, self.body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(self.headers.get("x-gitdeploy-signature-256", ""), expected)


class Receiver:
    """``url`` accepts POSTs; ``answers`` (status codes) are used up first, then 200.

    ``hold`` blocks every request until set (a slow receiver); ``arrived`` is set at each request.
    """

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.answers: list[int] = []
        self.hold = threading.Event()
        self.hold.set()
        self.arrived = threading.Event()
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.arrived.set()
                receiver.hold.wait(30)
                with receiver._changed:
                    status = receiver.answers.pop(0) if receiver.answers else 200
                    if status == 200:
                        headers = {k.lower(): v for k, v in self.headers.items()}
                        receiver.received.append(Received(headers, body))
                    receiver._changed.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/hooks/deploys"

    def wait_for(self, count: int, timeout: float = 20.0) -> list[Received]:
        """The first ``count`` deliveries, once they arrived (fails after ``timeout`` seconds)."""
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.received) >= count, timeout), self.received
            return list(self.received[:count])

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.hold.set()
        self._server.shutdown()
        self._server.server_close()
