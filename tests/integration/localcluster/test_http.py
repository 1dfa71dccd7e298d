"""The embedded cluster's HTTP/1.1 framing, spoken over a raw socket."""

from __future__ import annotations

import socket

import pytest

from gitdeploy.localcluster import LocalCluster


def _exchange(cluster: LocalCluster, request: bytes) -> tuple[int, dict[str, str], bytes, bool]:
    """Send ``request``; return the first response's status, headers and body, and whether the
    server closed the connection after it."""
    with socket.create_connection(("127.0.0.1", cluster.port), timeout=5) as conn:
        conn.sendall(request)
        reader = conn.makefile("rb")
        status = int(reader.readline().split()[1])
        headers: dict[str, str] = {}
        while (line := reader.readline().decode("iso-8859-1").strip()) != "":
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = reader.read(int(headers.get("content-length", "0")))
        conn.settimeout(1)
        try:
            closed = reader.read(1) == b""
        except TimeoutError:
            closed = False
    return status, headers, body, closed


def _get(cluster: LocalCluster, version: str = "HTTP/1.1", extra: str = "") -> bytes:
    return (
        f"GET /api/v1/namespaces/default {version}\r\nHost: x\r\n"
        f"Authorization: Bearer {cluster.token}\r\n{extra}\r\n"
    ).encode()


@pytest.mark.parametrize(
    ("version", "extra", "closed"),
    [
        ("HTTP/1.1", "", False),
        ("HTTP/1.1", "Connection: close\r\n", True),
        ("HTTP/1.1", "connection:   Close\r\n", True),
        ("HTTP/1.0", "", True),
        ("HTTP/1.0", "Connection: keep-alive\r\n", False),
    ],
)
def test_connections_stay_open_as_http_says(
    embedded_cluster: LocalCluster, version: str, extra: str, closed: bool
) -> None:
    status, headers, body, was_closed = _exchange(embedded_cluster, _get(embedded_cluster, version, extra))
    assert (status, was_closed) == (200, closed)
    assert headers["content-type"] == "application/json"
    assert b'"name":"default"' in body


@pytest.mark.parametrize(
    ("request_head", "status"),
    [
        (b"GET /api/v1/namespaces/default HTTP/1.1\r\nHost x\r\n\r\n", 400),
        (b"GET /api/v1/namespaces/default HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400),
        (b"GET /api/v1/namespaces/default HTTP/1.1\r\n: x\r\n\r\n", 400),
        (b"GET /api/v1/namespaces/default HTTP/1.1\r\n" + b"X-A: 1\r\n" * 101 + b"\r\n", 431),
        (b"GET /api/v1/namespaces/default HTTP/1.1\r\nX-A: " + b"a" * 70_000 + b"\r\n\r\n", 431),
        (b"GET /api/v1/namespaces/default HTTP/1.1\r\nHost: x\r\n\r\n", 401),
        (b"GET /api/v1/namespaces/default HTTP/1.2\r\nHost: x\r\n\r\n", 401),  # the stdlib parses it
    ],
)
def test_malformed_requests_are_refused(
    embedded_cluster: LocalCluster, request_head: bytes, status: int
) -> None:
    assert _exchange(embedded_cluster, request_head)[0] == status


def test_headers_are_matched_without_regard_to_case(embedded_cluster: LocalCluster) -> None:
    request = (
        "GET /api/v1/namespaces/default HTTP/1.1\r\nhost: x\r\n"
        f"authorization: Bearer {embedded_cluster.token}\r\n"
        "accept: application/json;as=Table;v=v1;g=meta.k8s.io\r\n\r\n"
    ).encode()
    status, _headers, body, _closed = _exchange(embedded_cluster, request)
    assert status == 200
    assert b'"kind":"Table"' in body


def test_two_requests_on_one_connection_get_two_answers(embedded_cluster: LocalCluster) -> None:
    with socket.create_connection(("127.0.0.1", embedded_cluster.port), timeout=5) as conn:
        conn.sendall(_get(embedded_cluster) * 2)
        reader = conn.makefile("rb")
        statuses = []
        for _ in range(2):
            statuses.append(int(reader.readline().split()[1]))
            length = 0
            while (line := reader.readline()) != b"\r\n":
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            reader.read(length)
    assert statuses == [200, 200]


def test_an_answer_carries_the_server_and_date_headers(embedded_cluster: LocalCluster) -> None:
    status, headers, body, _closed = _exchange(embedded_cluster, _get(embedded_cluster))
    assert status == 200
    assert headers["server"].startswith("BaseHTTP/")
    assert headers["date"].endswith(" GMT")
    assert int(headers["content-length"]) == len(body)
