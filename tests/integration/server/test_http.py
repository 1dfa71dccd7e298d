"""The HTTP server over real sockets: probes, metrics exposition and the webhook receiver."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gitdeploy.errors import PermanentError
from gitdeploy.server.http import (
    HttpServer,
    Readiness,
    WebhookSettings,
    parse_listen_address,
    read_secret_file,
)
from gitdeploy.server.metrics import CONTENT_TYPE, Metrics
from gitdeploy.server.webhook import PushEvent, github_signature
from tests.fixtures.cli import RunCli

SECRET = b"4f1c0e0b1d7a9c2e"
REPO = "git@github.com:acme/deploy.git"
AFTER = "9fceb02d0ae598e95dc970b74767f19372d61af8"
LIMIT = 4096


class PushRecorder:
    """The on_push callback: records events and lets a test wait for one."""

    def __init__(self) -> None:
        self.events: list[PushEvent] = []
        self.arrived = threading.Event()
        self.fail = False

    def __call__(self, event: PushEvent) -> None:
        if self.fail:
            raise RuntimeError("the loop is gone")
        self.events.append(event)
        self.arrived.set()


@pytest.fixture
def pushes() -> PushRecorder:
    return PushRecorder()


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(version="0.1.0", process_collectors=False)


@pytest.fixture
def readiness() -> Readiness:
    return Readiness()


@pytest.fixture
def server(metrics: Metrics, readiness: Readiness, pushes: PushRecorder) -> Iterator[HttpServer]:
    settings = WebhookSettings(secret=SECRET, repo_url=REPO, branch="main", max_body_bytes=LIMIT)
    with HttpServer(
        metrics=metrics, readiness=readiness, host="127.0.0.1", port=0, webhook=settings, on_push=pushes
    ) as running:
        yield running


@pytest.fixture
def client(server: HttpServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=5) as http:
        yield http


def github_push_body(ref: str = "refs/heads/main", after: str = AFTER, repo: str = "acme/deploy") -> bytes:
    return json.dumps(
        {
            "ref": ref,
            "after": after,
            "repository": {
                "clone_url": f"https://github.com/{repo}.git",
                "ssh_url": f"git@github.com:{repo}.git",
                "html_url": f"https://github.com/{repo}",
            },
        }
    ).encode()


def signed(body: bytes, event: str = "push", secret: bytes = SECRET) -> dict[str, str]:
    return {
        "X-GitHub-Event": event,
        "X-Hub-Signature-256": github_signature(body, secret),
        "Content-Type": "application/json",
    }


# -- probes -------------------------------------------------------------------------------------


def test_healthz_answers_while_the_process_runs(client: httpx.Client) -> None:
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.text == "ok\n"


def test_readyz_flips_once_repo_read_and_lease_decided(client: httpx.Client, readiness: Readiness) -> None:
    first = client.get("/readyz")
    assert first.status_code == 503
    assert first.text.count("\n") == 1
    assert "repository" in first.text and "Lease" in first.text

    readiness.set_repo_read()
    second = client.get("/readyz")
    assert second.status_code == 503
    assert "repository" not in second.text and "Lease" in second.text

    readiness.set_lease_decided()
    third = client.get("/readyz")
    assert third.status_code == 200
    assert third.text == "ok\n"

    readiness.set_repo_read(False)
    assert client.get("/readyz").status_code == 503


def test_unknown_paths_and_wrong_methods(client: httpx.Client) -> None:
    assert client.get("/nope").status_code == 404
    assert client.post("/healthz", content=b"").status_code == 405
    wrong = client.get("/hooks/git")
    assert wrong.status_code == 405
    assert wrong.headers["allow"] == "POST"


# -- metrics ------------------------------------------------------------------------------------


def test_metrics_exposition_parses_with_the_values_of_the_calls(
    client: httpx.Client, metrics: Metrics
) -> None:
    metrics.observe_reconcile(0.05, "success")
    metrics.observe_reconcile(0.07, "success")
    metrics.set_app_states(sync={"Synced": 3, "OutOfSync": 1}, health={"Healthy": 3, "Progressing": 1})
    metrics.rollout_started("config-change")
    metrics.rollout_completed("config-change", seconds=12.0)
    metrics.rollout_started("image-change")
    metrics.rollout_failed("image-change", seconds=600.0)
    metrics.observe_poll(0.4)
    metrics.observe_poll(1.5, error=True)
    metrics.api_request("create", 201)
    metrics.api_request("patch", 409)
    metrics.set_leader(True)

    response = client.get("/metrics")

    assert response.status_code == 200
    assert response.headers["content-type"] == CONTENT_TYPE
    assert response.headers["content-type"].startswith("text/plain; version=")
    values = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }

    def at(name: str, **labels: str) -> float:
        return values[(name, tuple(sorted(labels.items())))]

    assert at("gitdeploy_reconcile_duration_seconds_count", result="success") == 2
    assert at("gitdeploy_reconcile_duration_seconds_sum", result="success") == pytest.approx(0.12)
    assert at("gitdeploy_apps_sync_state", state="Synced") == 3
    assert at("gitdeploy_apps_sync_state", state="OutOfSync") == 1
    assert at("gitdeploy_apps_health_state", state="Progressing") == 1
    assert at("gitdeploy_apps_health_state", state="Degraded") == 0
    assert at("gitdeploy_rollouts_started_total", cause="config-change") == 1
    assert at("gitdeploy_rollouts_completed_total", cause="config-change") == 1
    assert at("gitdeploy_rollouts_failed_total", cause="image-change") == 1
    assert at("gitdeploy_source_poll_duration_seconds_count") == 2
    assert at("gitdeploy_source_poll_errors_total") == 1
    assert at("gitdeploy_source_last_successful_poll_timestamp_seconds") > 1_600_000_000
    assert at("gitdeploy_kube_api_requests_total", verb="create", code="201") == 1
    assert at("gitdeploy_kube_api_requests_total", verb="patch", code="409") == 1
    assert at("gitdeploy_leader") == 1
    assert at("gitdeploy_build_info", version="0.1.0") == 1


def test_a_slow_scrape_holds_up_neither_the_probes_nor_a_push(
    server: HttpServer, client: httpx.Client, metrics: Metrics, pushes: PushRecorder
) -> None:
    # Given a scrape whose app states take long to read (a fleet of thousands of apps)
    reading, release = threading.Event(), threading.Event()

    def read() -> tuple[dict[str, int], dict[str, int], int]:
        reading.set()
        release.wait(10)
        return {"Synced": 1}, {"Healthy": 1}, 0

    metrics.follow_app_states(read)
    scraped: list[httpx.Response] = []
    scrape = threading.Thread(target=lambda: scraped.append(httpx.get(f"{server.url}/metrics", timeout=10)))
    scrape.start()
    try:
        assert reading.wait(5)
        # When the probes are asked and a push arrives meanwhile, Then they are answered
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code in (200, 503)
        body = github_push_body()
        assert client.post("/hooks/git", content=body, headers=signed(body)).status_code == 200
        assert pushes.arrived.wait(5) and not scraped, "answered while the scrape still reads"
    finally:
        release.set()
        scrape.join(10)
    # ... and the scrape then answers with what it read
    assert (
        scraped[0].status_code == 200 and 'gitdeploy_apps_sync_state{state="Synced"} 1.0' in scraped[0].text
    )


# -- webhook ------------------------------------------------------------------------------------


def test_valid_push_calls_on_push_exactly_once_with_the_event(
    client: httpx.Client, pushes: PushRecorder, metrics: Metrics
) -> None:
    body = github_push_body()
    headers = {**signed(body), "X-GitHub-Delivery": "d-1"}

    response = client.post("/hooks/git", content=body, headers=headers)

    assert response.status_code == 200, response.text
    assert pushes.arrived.wait(1)
    assert len(pushes.events) == 1
    event = pushes.events[0]
    assert event.branch == "main"
    assert event.after == AFTER
    assert event.delivery_id == "d-1"
    assert set(event.repo_urls) == {
        "https://github.com/acme/deploy.git",
        "git@github.com:acme/deploy.git",
        "https://github.com/acme/deploy",
    }
    assert b'outcome="triggered",provider="github"} 1.0' in metrics.render()


def test_a_redelivered_push_does_not_trigger_again(client: httpx.Client, pushes: PushRecorder) -> None:
    body = github_push_body()

    first = client.post("/hooks/git", content=body, headers=signed(body))
    replay = client.post("/hooks/git", content=body, headers=signed(body))
    newer_body = github_push_body(after="1" * 40)
    newer = client.post("/hooks/git", content=newer_body, headers=signed(newer_body))
    back = client.post("/hooks/git", content=body, headers=signed(body))

    statuses = [r.status_code for r in (first, replay, newer, back)]
    assert statuses == [200, 202, 200, 200]
    assert [e.after for e in pushes.events] == [AFTER, "1" * 40, AFTER]


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param(signed(github_push_body(), secret=b"wrong"), id="wrong secret"),
        pytest.param({"X-GitHub-Event": "push", "Content-Type": "application/json"}, id="unsigned"),
        pytest.param(signed(b"another body"), id="signature of another body"),
        pytest.param({"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "guess"}, id="gitlab wrong token"),
    ],
)
def test_badly_signed_push_is_refused_with_401(
    client: httpx.Client, pushes: PushRecorder, headers: dict[str, str]
) -> None:
    response = client.post("/hooks/git", content=github_push_body(), headers=headers)

    assert response.status_code == 401
    assert pushes.events == []


def test_too_large_body_is_refused_with_413(client: httpx.Client, pushes: PushRecorder) -> None:
    body = b" " * (LIMIT + 1)

    response = client.post("/hooks/git", content=body, headers=signed(body))

    assert response.status_code == 413
    assert pushes.events == []


def test_413_is_decided_from_content_length_before_the_body_is_sent(server: HttpServer) -> None:
    host, port = server.address
    with socket.create_connection((host, port), timeout=5) as conn:
        conn.sendall(
            b"POST /hooks/git HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: push\r\n"
            b"Content-Length: 1000000000\r\n\r\n"
        )
        answer = conn.recv(4096)

    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b"Connection: close" in answer


def test_missing_content_length_is_refused(server: HttpServer) -> None:
    host, port = server.address
    with socket.create_connection((host, port), timeout=5) as conn:
        conn.sendall(b"POST /hooks/git HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: push\r\n\r\n")
        answer = conn.recv(4096)

    assert answer.startswith(b"HTTP/1.1 411 ")


def test_pushes_to_other_branches_or_repos_are_accepted_and_ignored(
    client: httpx.Client, pushes: PushRecorder
) -> None:
    other_branch = github_push_body(ref="refs/heads/feature")
    other_repo = github_push_body(repo="acme/other")
    tag = github_push_body(ref="refs/tags/v1.0.0")

    answers = [
        client.post("/hooks/git", content=b, headers=signed(b)) for b in (other_branch, other_repo, tag)
    ]

    assert [a.status_code for a in answers] == [202, 202, 202]
    assert all(a.text.endswith("\n") and a.text.count("\n") == 1 for a in answers)
    assert pushes.events == []


def test_signed_ping_is_answered_ok_without_triggering(client: httpx.Client, pushes: PushRecorder) -> None:
    body = b'{"zen": "Design for failure.", "hook_id": 7}'

    response = client.post("/hooks/git", content=body, headers=signed(body, event="ping"))

    assert response.status_code == 200
    assert pushes.events == []


def test_malformed_signed_json_is_400(client: httpx.Client, pushes: PushRecorder) -> None:
    body = b'{"ref": '

    response = client.post("/hooks/git", content=body, headers=signed(body))

    assert response.status_code == 400
    assert pushes.events == []


def test_gitlab_push_triggers(client: httpx.Client, pushes: PushRecorder) -> None:
    body = json.dumps(
        {
            "object_kind": "push",
            "ref": "refs/heads/main",
            "after": AFTER,
            "project": {"git_ssh_url": "git@github.com:acme/deploy.git"},
        }
    ).encode()
    headers = {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": SECRET.decode()}

    response = client.post("/hooks/git", content=body, headers=headers)

    assert response.status_code == 200
    assert [e.after for e in pushes.events] == [AFTER]


def test_a_failing_callback_is_a_500_and_the_push_can_be_retried(
    client: httpx.Client, pushes: PushRecorder
) -> None:
    body = github_push_body()
    pushes.fail = True
    failed = client.post("/hooks/git", content=body, headers=signed(body))
    pushes.fail = False
    retried = client.post("/hooks/git", content=body, headers=signed(body))

    assert (failed.status_code, retried.status_code) == (500, 200)
    assert len(pushes.events) == 1


def test_without_webhook_settings_the_hook_path_is_404(metrics: Metrics, readiness: Readiness) -> None:
    with HttpServer(metrics=metrics, readiness=readiness, host="127.0.0.1", port=0) as bare:
        body = github_push_body()
        response = httpx.post(bare.url + "/hooks/git", content=body, headers=signed(body), timeout=5)
        health = httpx.get(bare.url + "/healthz", timeout=5)

    assert response.status_code == 404
    assert health.status_code == 200


def test_stop_releases_the_port(metrics: Metrics, readiness: Readiness) -> None:
    server = HttpServer(metrics=metrics, readiness=readiness, host="127.0.0.1", port=0)
    server.start()
    url = server.url
    server.stop()
    server.stop()

    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/healthz", timeout=2)


def test_settings_refuse_an_empty_secret_and_hide_it_in_repr() -> None:
    with pytest.raises(ValueError, match="secret"):
        WebhookSettings(secret=b"", repo_url=REPO, branch="main")
    assert SECRET.decode() not in repr(WebhookSettings(secret=SECRET, repo_url=REPO, branch="main"))


def test_read_secret_file_strips_the_trailing_newline_and_refuses_what_it_cannot_use(tmp_path: Path) -> None:
    path = tmp_path / "webhook-secret"
    path.write_bytes(SECRET + b"\n")
    assert read_secret_file(path, "--webhook-secret-file") == SECRET

    path.write_bytes(b"\n")
    with pytest.raises(PermanentError) as empty:
        read_secret_file(path, "--notify-secret-file")
    assert empty.value.message == f"--notify-secret-file {path} is empty"
    assert empty.value.hint == f"make one with: head -c 32 /dev/urandom | base64 > {path}"
    path.write_bytes(b"short\n")
    with pytest.raises(PermanentError) as short:
        read_secret_file(path, "--dashboard-token-file", min_bytes=16)
    assert short.value.message == f"--dashboard-token-file {path} is 5 bytes; at least 16 are needed"
    with pytest.raises(PermanentError) as missing:
        read_secret_file(tmp_path / "nope", "--webhook-secret-file")
    assert (
        missing.value.message
        == f"cannot read --webhook-secret-file {tmp_path}/nope: No such file or directory"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (":8080", ("", 8080)),
        ("0.0.0.0:9090", ("0.0.0.0", 9090)),
        ("localhost:0", ("localhost", 0)),
        ("[::]:8080", ("::", 8080)),
    ],
)
def test_parse_listen_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen_address(text) == expected


@pytest.mark.parametrize("text", ["8080", "host:", "host:http", ":70000", "::1:8080"])
def test_parse_listen_address_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_listen_address(text)


def test_concurrent_deliveries_of_one_push_trigger_once(
    metrics: Metrics, readiness: Readiness, pushes: PushRecorder
) -> None:
    # Enough body slots for all eight: the cap on bodies read at once is tested in tests/faults,
    # and on a loaded machine all eight may be read at the same moment.
    settings = WebhookSettings(
        secret=SECRET, repo_url=REPO, branch="main", max_body_bytes=LIMIT, max_concurrent_bodies=8
    )
    with HttpServer(
        metrics=metrics, readiness=readiness, host="127.0.0.1", port=0, webhook=settings, on_push=pushes
    ) as server:
        statuses = _deliver_at_once(server, github_push_body(), 8)

    assert sorted(statuses) == [200] + [202] * 7
    assert len(pushes.events) == 1


def _deliver_at_once(server: HttpServer, body: bytes, count: int) -> list[int]:
    statuses: list[int] = []
    lock = threading.Lock()

    def deliver() -> None:
        answer = httpx.post(server.url + "/hooks/git", content=body, headers=signed(body), timeout=5)
        status = answer.status_code
        with lock:
            statuses.append(status)

    senders = [threading.Thread(target=deliver) for _ in range(count)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    return statuses


def test_expect_100_continue_is_refused_when_too_large_or_unsigned_and_honoured_otherwise(
    server: HttpServer,
) -> None:
    host, port = server.address
    head = b"POST /hooks/git HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: push\r\nExpect: 100-continue\r\n"
    with socket.create_connection((host, port), timeout=5) as conn:
        conn.sendall(head + f"Content-Length: {LIMIT + 1}\r\n\r\n".encode())
        refused = conn.recv(4096)
    with socket.create_connection((host, port), timeout=5) as conn:
        conn.sendall(head + b"Content-Length: 2\r\n\r\n")
        unsigned = conn.recv(4096)
    signature = b"X-Hub-Signature-256: sha256=" + b"0" * 64 + b"\r\n"
    with socket.create_connection((host, port), timeout=5) as conn:
        conn.sendall(head + signature + b"Content-Length: 2\r\n\r\n")
        go_on = conn.recv(4096)
        conn.sendall(b"{}")
        final = conn.recv(4096)

    assert refused.startswith(b"HTTP/1.1 413 ")
    assert unsigned.startswith(b"HTTP/1.1 401 ") and b"100 Continue" not in unsigned
    assert go_on.startswith(b"HTTP/1.1 100 ")
    assert final.startswith(b"HTTP/1.1 401 ")


def test_post_to_an_unknown_path_with_a_body_still_gets_its_answer(client: httpx.Client) -> None:
    response = client.post("/hooks/other", content=b"x" * 10_000)

    assert response.status_code == 404


def test_run_on_an_address_in_use_says_so_and_what_to_do(run_cli: RunCli, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        try:
            ran = run_cli("run", "--repo", str(tmp_path / "config"), "--listen", f"127.0.0.1:{port}")
        finally:
            run_cli("cluster", "down")  # run started the embedded cluster before it tried the port
    assert ran.returncode == 1
    assert f"error: cannot listen on 127.0.0.1:{port}: the address is already in use" in ran.stderr
    assert "--listen another port" in ran.stderr and "unexpected" not in ran.stderr
