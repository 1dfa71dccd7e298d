"""How long a paused process has to slip a write out after its Lease lapsed: the time from the
last check of its fence to the socket write that completes the request (``gitdeploy/cluster/
writecheck.py``), against the time from the loop's own check, made before it builds the request.

A ReplicaSet create of a realistic size (30 env variables) is POSTed ``--writes`` times through
gitdeploy's :class:`~gitdeploy.cluster.rawapi.RawApi` to a local HTTP server (answers at once, so
the figures are the client's alone). urllib3's ``send`` is timed; the check records when it ran.

    python bench/write_check.py [--writes 2000]
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import urllib3.connection
from kubernetes import client

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.push_latency import percentile
from gitdeploy.cluster.rawapi import RawApi
from gitdeploy.cluster.writecheck import writes_checked_by


class _Answer(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b'{"metadata":{"resourceVersion":"1"}}'
        self.send_response(201)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


@contextmanager
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()


def replica_set() -> dict[str, Any]:
    env = [{"name": f"SETTING_{i}", "value": "v" * 20} for i in range(30)]
    labels = {"app": "web", "gitdeploy.io/template-hash": "5d8f7c9b6"}
    template = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "web", "image": "nginx:1", "env": env}]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-5d8f7c9b6", "labels": labels},
        "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": template},
    }


def measure(writes: int) -> None:
    marks: dict[str, float] = {}
    plain_send = urllib3.connection.HTTPConnection.send

    def timed_send(self: urllib3.connection.HTTPConnection, data: Any) -> None:
        marks["send"] = time.perf_counter()
        plain_send(self, data)

    def check() -> None:
        marks["check"] = time.perf_counter()

    urllib3.connection.HTTPConnection.send = timed_send  # type: ignore[method-assign,assignment]
    from_last, from_loop = [], []
    try:
        with server() as url:
            configuration = client.Configuration()
            configuration.host = url
            api, body = RawApi(client.ApiClient(configuration)), replica_set()
            for _ in range(writes):
                with writes_checked_by(check):
                    loop_checked = time.perf_counter()
                    api.request("POST", "/apis/apps/v1/namespaces/shop/replicasets", body=body).read()
                from_last.append((marks["send"] - marks["check"]) * 1e6)
                from_loop.append((marks["send"] - loop_checked) * 1e6)
    finally:
        urllib3.connection.HTTPConnection.send = plain_send  # type: ignore[method-assign]
    last = {"p50": round(percentile(from_last, 50), 1), "p99": round(percentile(from_last, 99), 1)}
    loop = {"p50": round(percentile(from_loop, 50), 1), "p99": round(percentile(from_loop, 99), 1)}
    print(
        json.dumps(
            {
                "scenario": "write-check",
                "writes": writes,
                "last_check_to_send_us": last,
                "loop_check_to_send_us": loop,
            }
        )
    )
    print(f"last check -> the send that completes the request: p50 {last['p50']} us, p99 {last['p99']} us")
    print(f"loop's check -> the same send: p50 {loop['p50']} us, p99 {loop['p99']} us")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=2000)
    measure(parser.parse_args(argv).writes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
