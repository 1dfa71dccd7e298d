"""The analysis providers against real servers: a standard-library HTTP server for ``web``, a
real Prometheus scraping an exporter the test controls for ``prometheus``. Each measurement goes
through :func:`gitdeploy.providers.measure.measure`, conditions and all."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysistemplates import Metric, PrometheusProvider, WebHeader, WebMethod, WebProvider
from gitdeploy.providers.measure import measure
from tests.fixtures.prometheus import RunningPrometheus

P = AnalysisPhase


class Checker(BaseHTTPRequestHandler):
    """``/health``: a JSON answer; ``/echo``: what was asked; ``/broken``: HTTP 500; ``/text``: no JSON."""

    def answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.route(b"")

    def do_POST(self) -> None:
        self.route(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

    def route(self, body: bytes) -> None:
        if self.path == "/health":
            self.answer(200, json.dumps({"data": {"ok": True, "rates": [0.97, 0.5]}}).encode())
        elif self.path == "/echo":
            echo = {"method": self.command, "token": self.headers.get("X-Token"), "body": body.decode()}
            self.answer(200, json.dumps(echo).encode())
        elif self.path == "/broken":
            self.answer(500, b'{"error": "down"}')
        else:
            self.answer(200, b"plain text")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def checker() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Checker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


WEB: list[tuple[str, str, WebProvider, str, AnalysisPhase, str]] = [
    (
        "a value at jsonPath",
        "/health",
        WebProvider("", json_path="{$.data.ok}"),
        "result == true",
        P.SUCCESSFUL,
        "true",
    ),
    (
        "a list element",
        "/health",
        WebProvider("", json_path="{$.data.rates[1]}"),
        "result >= 0.9",
        P.FAILED,
        "0.5",
    ),
    (
        "POST with headers and body",
        "/echo",
        WebProvider("", WebMethod.POST, (WebHeader("X-Token", "s3"),), body='{"q": 1}', json_path="$"),
        'result.method == "POST" && result.token == "s3" && result.body == `{"q": 1}`',
        P.SUCCESSFUL,
        "",
    ),
    ("a non-2xx answer", "/broken", WebProvider(""), "", P.ERROR, "HTTP 500"),
    ("an answer that is not JSON", "/text", WebProvider(""), "", P.ERROR, "no JSON"),
    (
        "a jsonPath that finds nothing",
        "/health",
        WebProvider("", json_path="{$.data.gone}"),
        "",
        P.ERROR,
        "finds nothing",
    ),
    (
        "a condition that cannot be evaluated",
        "/health",
        WebProvider("", json_path="$.data"),
        "result[7] > 1",
        P.ERROR,
        "cannot evaluate",
    ),
]


@pytest.mark.parametrize(
    ("path", "provider", "condition", "phase", "said"), [c[1:] for c in WEB], ids=[c[0] for c in WEB]
)
def test_a_web_metric_is_measured_from_a_real_server(
    checker: str, path: str, provider: WebProvider, condition: str, phase: AnalysisPhase, said: str
) -> None:
    metric = Metric("web", dataclasses.replace(provider, url=checker + path), success_condition=condition)
    measurement = measure(metric, lambda: 50.0)
    assert measurement.phase is phase, measurement
    assert said in (measurement.value if phase is not P.ERROR else measurement.message)


def test_a_web_server_that_does_not_answer_in_time_is_an_error() -> None:
    with socket_that_never_answers() as url:
        measurement = measure(Metric("slow", WebProvider(url, timeout_seconds=1)), lambda: 0.0)
    assert measurement.phase is P.ERROR and "Timeout" in measurement.message


@contextlib.contextmanager
def socket_that_never_answers() -> Iterator[str]:
    """A listening socket that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"


def test_a_prometheus_query_result_decides_the_measurement(prometheus: RunningPrometheus) -> None:
    prometheus.expose("checkout_success_rate", 0.97)
    vector = Metric(
        "rate",
        PrometheusProvider(prometheus.url, "checkout_success_rate"),
        success_condition="result[0] >= 0.95",
    )
    scalar = Metric(
        "s",
        PrometheusProvider(prometheus.url, "scalar(checkout_success_rate) * 2"),
        failure_condition="result < 1.5",
    )
    empty = Metric(
        "e", PrometheusProvider(prometheus.url, "absent_metric_xyz"), success_condition="result[0] >= 0.95"
    )
    assert (measure(vector, time_now).phase, measure(vector, time_now).value) == (P.SUCCESSFUL, "[0.97]")
    assert measure(scalar, time_now).phase is P.SUCCESSFUL and measure(scalar, time_now).value == "1.94"
    nothing = measure(empty, time_now)
    assert (nothing.phase, nothing.value) == (P.ERROR, "[]") and "IndexError" in nothing.message
    prometheus.expose("checkout_success_rate", 0.42)
    failed = measure(vector, time_now)
    assert (failed.phase, failed.value) == (P.FAILED, "[0.42]")


def time_now() -> float:
    return 1000.0  # the measurement's own times; Prometheus answers for its present


def test_a_bad_query_or_no_prometheus_is_an_error(prometheus: RunningPrometheus) -> None:
    bad = measure(Metric("bad", PrometheusProvider(prometheus.url, "sum(")), time_now)
    assert bad.phase is P.ERROR and "refused the query" in bad.message
    with socket_that_never_answers() as url:
        gone = measure(Metric("gone", PrometheusProvider(url, "up", timeout_seconds=1)), time_now)
    assert gone.phase is P.ERROR and "Timeout" in gone.message
