"""The HTTP/1.1 side of the embedded cluster's API server: the listening server, request lines and
headers read by hand, request bodies in (with the API server's size limit), responses out.

:class:`HttpWire` is the base of the request handler (see server.py); the handling of resources
and of the other endpoints is built on it (apireads.py, apiwrites.py, nonresource.py).
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import sys
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from gitdeploy.localcluster.access import Access
from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.store import dumps

if TYPE_CHECKING:
    from gitdeploy.localcluster.server import LocalCluster

__all__ = ["MAX_REQUEST_BODY_BYTES", "ClusterServer", "HttpWire"]

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024
"""The API server's limit on a request body (``MaxRequestBodyBytes``): 413 beyond it."""
_MAX_HEADER_LINE = 65536  # the stdlib's limits
_MAX_HEADERS = 100


_date: tuple[int, str] = (0, "")


def _http_date() -> str:
    """The Date header's value now (``BaseHTTPRequestHandler.date_time_string``), formatted once
    a second."""
    global _date
    second = int(time.time())
    if _date[0] != second:
        _date = (second, email.utils.formatdate(second, usegmt=True))
    return _date[1]


class ClusterServer(ThreadingHTTPServer):
    """The listening server; its handlers find the cluster they serve in ``cluster``."""

    daemon_threads = True
    allow_reuse_address = True
    cluster: LocalCluster

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (common at shutdown) is not an error; anything else is logged."""
        problem = sys.exc_info()[1]
        if isinstance(problem, ConnectionError):
            return
        self.cluster._log(f"error while serving {client_address}: {problem!r}")


class HttpWire(BaseHTTPRequestHandler):
    """One connection's requests: read by hand, answered with a length or (watches) in chunks."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stalls on a watch's small writes
    wbufsize = 64 * 1024  # a response leaves in one write, when handle_one_request flushes
    server: ClusterServer
    raw_requestline: bytes
    fields: dict[str, str]
    """The request's headers by lower-case name (``headers`` is not set for most requests)."""
    _body_read: bool = False
    """The body of the request being answered has been read (each request's is read once)."""
    _access: Access | None = None
    """Who the request being answered is: None for the admin, else a ServiceAccount's RBAC."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the daemon's log is for problems, not for every request."""

    def parse_request(self) -> bool:
        """The request line and headers of an ``HTTP/1.x`` request, split by hand: the stdlib
        parses headers with the ``email`` package, which costs more than serving a small request.
        Anything else (another version, a malformed request line) goes to the stdlib's parser."""
        requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        words = requestline.split()
        if len(words) != 3 or words[2] not in ("HTTP/1.1", "HTTP/1.0"):
            parsed = super().parse_request()
            self.fields = {name.lower(): value for name, value in self.headers.items()} if parsed else {}
            return parsed
        self.requestline = requestline
        self.command, path, self.request_version = words
        self.path = "/" + path.lstrip("/") if path.startswith("//") else path
        fields: dict[str, str] = {}
        for _ in range(_MAX_HEADERS + 1):
            line = self.rfile.readline(_MAX_HEADER_LINE + 1)
            if len(line) > _MAX_HEADER_LINE:
                self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long")
                return False
            if line in (b"\r\n", b"\n", b""):
                break
            name, colon, value = line.decode("iso-8859-1").partition(":")
            if not colon or not name or name[0] in " \t":  # no name, or obsolete line folding
                self.send_error(HTTPStatus.BAD_REQUEST, "Bad header line")
                return False
            fields[name.strip().lower()] = value.strip()
        else:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers")
            return False
        self.fields = fields
        connection = fields.get("connection", "").lower()
        self.close_connection = connection == "close" or (
            self.request_version == "HTTP/1.0" and connection != "keep-alive"
        )
        if fields.get("expect", "").lower() == "100-continue" and self.request_version == "HTTP/1.1":
            return self.handle_expect_100()
        return True

    def setup(self) -> None:
        super().setup()
        self.server.cluster._track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.cluster._track(self.connection, add=False)

    def _send(self, code: int, body: bytes, content_type: str = "application/json") -> None:
        """Answer with ``body``: the status line and the headers that ``send_response``,
        ``send_header`` and ``end_headers`` would send (Server, Date, the type and length),
        made in one piece (those calls cost about a tenth of answering a small write)."""
        if self.request_version == "HTTP/0.9" or getattr(self, "_headers_buffer", None):
            self.send_response(code)  # no headers for HTTP/0.9; or headers already begun
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
        else:
            reason = self.responses[code][0] if code in self.responses else ""
            head = (
                f"{self.protocol_version} {code} {reason}\r\nServer: {self.version_string()}\r\n"
                f"Date: {_http_date()}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            self.wfile.write(head.encode("latin-1", "strict"))
        self.wfile.write(body)

    def _send_json(self, code: int, value: Any) -> None:
        stored = self.server.cluster.store.encoded(value) if isinstance(value, dict) else None
        self._send(code, (stored or dumps(value)).encode())

    def _read_raw(self) -> bytes:
        length = int(self.fields.get("content-length") or 0)
        if length > MAX_REQUEST_BODY_BYTES and not self._body_read:
            self._body_read = True
            while length > 0:  # read and drop it, so that the answer reaches the client
                chunk = self.rfile.read(min(length, 1 << 16))
                if not chunk:
                    break
                length -= len(chunk)
            raise ApiError(
                413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}"
            )
        raw = self.rfile.read(length) if length and not self._body_read else b""
        self._body_read = True
        return raw

    def _read_body(self) -> Any:
        raw = self._read_raw()
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as problem:
            raise ApiError.bad_request(f"the request body is not JSON: {problem}") from problem
