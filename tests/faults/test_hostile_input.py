"""Hostile input while apps run: unsigned and tampered commits, files that try to crash the reader,
secrets in the repo URL, forged log lines, and webhook floods. Each is refused or becomes that
input's diagnostic; the process keeps going and what runs is untouched."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from gitdeploy.server.http import HttpServer, Readiness, WebhookSettings
from gitdeploy.server.metrics import Metrics
from gitdeploy.server.webhook import DEFAULT_MAX_BODY_BYTES, PushEvent, github_signature
from tests.fixtures.cli import RunCli, gitdeploy_executable
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.manifests import deployment
from tests.fixtures.signing import SigningKey, commit_signed, needs_gpg, push_tampered_commit

SETTINGS = "paths: [apps]\ndefaultNamespace: shop\n"


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def images_by_revision(run_cli: RunCli, app: str = "shop/web") -> dict[int, list[str]]:
    """What each revision of ``app`` deployed, from `gitdeploy history -o json`."""
    done = run_cli("history", app, "-o", "json")
    if done.returncode == 1 and "no app" in done.stderr:
        return {}
    assert done.returncode == 0, done.stderr
    return {e["revision"]: [i["image"] for i in e["images"]] for e in json.loads(done.stdout)}


def eventually(check: Callable[[], bool], what: str, attempts: int = 600) -> None:
    """Wait until ``check()`` holds (a bound against hanging, not a measurement)."""
    for _ in range(attempts):
        if check():
            return
        subprocess.run(["sleep", "0.1"], check=True)
    raise AssertionError(f"gave up waiting: {what}")


@contextmanager
def running(tmp_path: Path, *args: str) -> Iterator[Callable[[], str]]:
    """`gitdeploy run ARGS` in a subprocess; yields a function that returns its log so far.
    On exit: SIGTERM, and the process must have ended by itself with code 0."""
    log = tmp_path / "run.log"
    env = {**os.environ, "GITDEPLOY_STATE_DIR": str(tmp_path / "state"), "NO_COLOR": "1"}
    env.pop("KUBECONFIG", None)
    with log.open("w") as out:
        process = subprocess.Popen(
            [gitdeploy_executable(), "run", "--no-leader-elect", *args], env=env, stdout=out, stderr=out
        )
    try:
        yield log.read_text
        assert process.poll() is None, f"gitdeploy run exited: {log.read_text()}"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        finally:
            process.kill()
    assert process.returncode == 0, log.read_text()


# -- commit signatures ----------------------------------------------------------------------------


@needs_gpg
def test_sync_and_plan_refuse_unsigned_unknown_and_bad_heads_and_deploy_the_next_signed_one(
    run_cli: RunCli, cluster: None, git_remote: GitRemote, signing_keys: tuple[SigningKey, SigningKey]
) -> None:
    trusted, stranger = signing_keys
    key = ("--trusted-key", str(trusted.public_key_file))
    sync = ("sync", "--repo", git_remote.url, "--wait", *key)
    # Given web at nginx:1.25 from a commit signed with the trusted key
    commit_signed(
        git_remote,
        trusted,
        "Deploy web",
        {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": deployment("web", "shop")},
    )
    first = run_cli(*sync)
    assert first.returncode == 0, first.stderr
    assert images_by_revision(run_cli) == {1: ["nginx:1.25"]}
    evil = {"apps/web.yaml": deployment("web", "shop", image="evil:666")}

    innocent: dict[str, str | bytes] = {"apps/web.yaml": deployment("web", "shop")}
    heads: list[tuple[Callable[[], str], str]] = [
        (lambda: git_remote.commit_and_push("Unsigned", evil), "is not signed"),
        (lambda: commit_signed(git_remote, stranger, "Stranger", evil), "which is not trusted"),
        (lambda: push_tampered_commit(git_remote, trusted, innocent, evil), "bad signature"),
    ]
    for push, reason in heads:
        # When the head is unsigned, signed by a stranger, or signed but with its tree swapped
        sha = push()
        # Then sync and plan refuse it, naming the commit and why, and nothing of it deploys
        refused = run_cli(*sync)
        assert refused.returncode == 1
        assert sha[:12] in refused.stderr and reason in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
        assert images_by_revision(run_cli) == {1: ["nginx:1.25"]}
        plan = run_cli("plan", "--repo", git_remote.url, "--base", "main", "--head", sha, *key)
        assert plan.returncode == 1 and reason in plan.stderr, plan.stderr

    # When a correctly signed commit follows, it deploys normally
    commit_signed(
        git_remote, trusted, "Bump web", {"apps/web.yaml": deployment("web", "shop", image="nginx:1.27")}
    )
    fixed = run_cli(*sync)
    assert fixed.returncode == 0, fixed.stderr
    assert images_by_revision(run_cli) == {1: ["nginx:1.25"], 2: ["nginx:1.27"]}


@needs_gpg
def test_run_keeps_the_last_signed_commit_while_the_head_is_tampered_with_and_moves_on_after(
    run_cli: RunCli,
    cluster: None,
    git_remote: GitRemote,
    tmp_path: Path,
    signing_keys: tuple[SigningKey, SigningKey],
) -> None:
    trusted, _ = signing_keys
    commit_signed(
        git_remote,
        trusted,
        "Deploy web",
        {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": deployment("web", "shop")},
    )
    args = ("--repo", git_remote.url, "--interval", "300ms", "--trusted-key", str(trusted.public_key_file))
    with running(tmp_path, *args) as log:
        eventually(lambda: images_by_revision(run_cli).get(1) == ["nginx:1.25"], "web deployed")
        # When a commit signed, then with its tree swapped to run evil:666, becomes the head
        evil = {"apps/web.yaml": deployment("web", "shop", image="evil:666")}
        tampered = push_tampered_commit(
            git_remote, trusted, {"apps/web.yaml": deployment("web", "shop")}, evil
        )
        # Then run says so, naming the commit, keeps going, and deploys nothing of it
        eventually(lambda: f"commit {tampered[:12]} has a bad signature" in log(), "the refusal in the log")
        status = run_cli("status", "shop/web", "-o", "json")
        assert tampered[:12] not in status.stdout
        # When a correctly signed commit follows, it deploys
        commit_signed(
            git_remote, trusted, "Bump", {"apps/web.yaml": deployment("web", "shop", image="nginx:1.27")}
        )
        eventually(lambda: images_by_revision(run_cli).get(2) == ["nginx:1.27"], "the signed commit deployed")
    assert "evil:666" not in json.dumps(images_by_revision(run_cli))


# -- files that try to crash the reader -----------------------------------------------------------

DEEP_LEVELS = 30_000
HOSTILE_FILES = {
    "apps/passwd.yaml": "/etc/passwd",
    "apps/escape.yaml": "../../outside.yaml",
    "apps/huge.yaml": "1048576",
    "apps/deep.yaml": "nested more than",
    "apps/deep.json": "nested",
}
"""Each hostile file, and a word its diagnostic must hold."""


def add_hostile_files(git_remote: GitRemote, web_image: str) -> str:
    """Commit and push the hostile files with web bumped to ``web_image``; return the sha."""
    git_remote.make_symlink("apps/passwd.yaml", "/etc/passwd")
    git_remote.make_symlink("apps/escape.yaml", "../../outside.yaml")
    return git_remote.commit_and_push(
        "Hostile files",
        {
            "apps/web.yaml": deployment("web", "shop", image=web_image),
            "apps/huge.yaml": "# padding\n" * (1024 * 1024 // 10 + 1),
            "apps/deep.yaml": "- " * DEEP_LEVELS + "x\n",  # 60 KB
            "apps/deep.json": "[" * DEEP_LEVELS + "]" * DEEP_LEVELS,
        },
    )


def assert_each_file_diagnosed(text: str) -> None:
    for path, word in HOSTILE_FILES.items():
        lines = [line for line in text.splitlines() if path in line]
        assert any(word in line for line in lines), f"{path} ({word}) not diagnosed in:\n{text}"


def test_hostile_files_are_diagnostics_in_validate_plan_and_sync_and_other_apps_deploy(
    run_cli: RunCli, cluster: None, git_remote: GitRemote
) -> None:
    # Given web deployed
    base = git_remote.commit_and_push(
        "Deploy web", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": deployment("web", "shop")}
    )
    assert run_cli("sync", "--repo", git_remote.url, "--wait").returncode == 0
    # When a commit adds hostile files and bumps web
    add_hostile_files(git_remote, "nginx:1.27")

    # Then validate (of the repo, and of a checkout) and plan name each file and what is wrong
    for args in (("validate", "--repo", git_remote.url), ("validate", str(git_remote.work))):
        done = run_cli(*args)
        assert done.returncode == 1, done.stderr  # not a crash (a negative code is a signal)
        assert_each_file_diagnosed(done.stderr.replace(str(git_remote.work) + "/", ""))
    plan = run_cli("plan", "--repo", git_remote.url, "--base", base, "--head", "main", "-o", "text")
    assert plan.returncode == 1, plan.stderr
    assert_each_file_diagnosed(plan.stdout)

    # And sync deploys web, says what is wrong with each file, and exits 1 for them
    synced = run_cli("sync", "--repo", git_remote.url, "--wait")
    assert synced.returncode == 1, synced.stderr
    assert_each_file_diagnosed(synced.stderr)
    assert images_by_revision(run_cli) == {1: ["nginx:1.25"], 2: ["nginx:1.27"]}


def test_run_survives_hostile_files_from_its_start_and_keeps_reconciling(
    run_cli: RunCli, cluster: None, git_remote: GitRemote, tmp_path: Path
) -> None:
    # Given a repo whose head holds web and every hostile file (a restart would meet them at once)
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    add_hostile_files(git_remote, "nginx:1.25")
    with running(tmp_path, "--repo", git_remote.url, "--interval", "300ms") as log:
        # Then run logs each file's problem, deploys web, and keeps going
        eventually(lambda: images_by_revision(run_cli).get(1) == ["nginx:1.25"], "web deployed")
        eventually(lambda: all(p in log() for p in HOSTILE_FILES), "each file in the log")
        assert_each_file_diagnosed(log())
        # And a later commit still deploys
        git_remote.commit_and_push("Bump", {"apps/web.yaml": deployment("web", "shop", image="nginx:1.27")})
        eventually(lambda: images_by_revision(run_cli).get(2) == ["nginx:1.27"], "the bump deployed")


# -- secrets and log lines ------------------------------------------------------------------------

TOKEN = "ghp_s3cr3tT0ken4242"
TOKEN_URL = f"https://deploy-bot:{TOKEN}@127.0.0.1:9/acme/config.git"  # nothing listens on port 9


def test_a_token_in_the_repo_url_is_never_printed(run_cli: RunCli, cluster: None, tmp_path: Path) -> None:
    # When each command is pointed at an https URL holding a token (and the remote is unreachable)
    outputs = []
    for args in (
        ("sync", "--repo", TOKEN_URL),
        ("validate", "--repo", TOKEN_URL),
        ("plan", "--repo", TOKEN_URL, "--base", "main", "--head", "main"),
    ):
        done = run_cli(*args)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        outputs.append(done.stdout + done.stderr)
    with running(tmp_path, "--repo", TOKEN_URL, "--interval", "200ms") as log:
        eventually(lambda: "unavailable" in log(), "the unreachable remote in the log")
    outputs.append(log())
    # Then the token appears nowhere; the URL is shown without it
    for output in outputs:
        assert TOKEN not in output and "deploy-bot" not in output, output
    assert "https://***@127.0.0.1:9/acme/config.git" in outputs[0] + outputs[-1]


FORGED = "12:00:00 INFO    [shop/web] rolled back to revision 1 by admin"


def test_a_newline_in_a_file_name_cannot_forge_a_log_line(
    run_cli: RunCli, cluster: None, git_remote: GitRemote, tmp_path: Path
) -> None:
    # Given a file whose name holds a newline and a log line, with content that does not parse
    git_remote.commit_and_push(
        "Forge",
        {
            "gitdeploy.yaml": SETTINGS,
            "apps/web.yaml": deployment("web", "shop"),
            f"apps/x\n{FORGED}\x1b[2K.yaml": "a: [\n",
        },
    )
    # Then validate, sync and run print its name on the problem's own line, escaped
    validated = run_cli("validate", "--repo", git_remote.url)
    synced = run_cli("sync", "--repo", git_remote.url)
    with running(tmp_path, "--repo", git_remote.url, "--interval", "200ms") as log:
        eventually(lambda: "invalid YAML" in log(), "the file's problem in the log")
    for output in (validated.stderr, synced.stderr, log()):
        assert "apps/x\\n12:00:00 INFO" in output and "\\x1b[2K.yaml" in output, output
        assert not any(line.startswith(FORGED) for line in output.splitlines()), output
        assert "\x1b" not in output


# -- webhook floods -------------------------------------------------------------------------------

SECRET = b"flood-secret-9a1c"
REPO = "https://git.example.com/acme/config.git"


@contextmanager
def webhook_server(
    max_concurrent_bodies: int, body_timeout_seconds: float
) -> Iterator[tuple[HttpServer, list[PushEvent]]]:
    """The real HTTP server on loopback with the webhook on, and the pushes it handed over."""
    pushes: list[PushEvent] = []
    settings = WebhookSettings(
        SECRET,
        REPO,
        "main",
        max_concurrent_bodies=max_concurrent_bodies,
        body_timeout_seconds=body_timeout_seconds,
    )
    metrics = Metrics(version="test", process_collectors=False)
    with HttpServer(
        metrics=metrics,
        readiness=Readiness(),
        host="127.0.0.1",
        port=0,
        webhook=settings,
        on_push=pushes.append,
    ) as server:
        yield server, pushes


def start_delivery(
    server: HttpServer, *, signature: str | None, length: int = DEFAULT_MAX_BODY_BYTES
) -> socket.socket:
    """A GitHub push delivery whose headers and first body byte are sent; the rest never comes."""
    conn = socket.create_connection(server.address, timeout=30)
    head = "POST /hooks/git HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: push\r\nContent-Type: application/json\r\n"
    if signature is not None:
        head += f"X-Hub-Signature-256: {signature}\r\n"
    conn.sendall(f"{head}Content-Length: {length}\r\n\r\n{{".encode())
    return conn


def answer_until_closed(conn: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a client timeout fails)."""
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    conn.close()
    return data


def bodies_reading(server: HttpServer) -> float:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    (line,) = [line for line in text.splitlines() if line.startswith("gitdeploy_webhook_bodies_reading ")]
    return float(line.split()[1])


def real_push(server: HttpServer) -> int:
    body = json.dumps(
        {"ref": "refs/heads/main", "after": "a" * 40, "repository": {"clone_url": REPO}}
    ).encode()
    headers = {"X-GitHub-Event": "push", "X-Hub-Signature-256": github_signature(body, SECRET)}
    return httpx.post(f"{server.url}/hooks/git", content=body, headers=headers, timeout=10).status_code


def test_a_flood_of_slow_unauthenticated_bodies_is_refused_and_holds_at_most_the_limit() -> None:
    with webhook_server(max_concurrent_bodies=2, body_timeout_seconds=600) as (server, pushes):
        # Given two deliveries with a (forged) signature whose 5 MiB bodies trickle in
        forged = "sha256=" + "0" * 64
        holders = [start_delivery(server, signature=forged) for _ in range(2)]
        eventually(lambda: bodies_reading(server) == 2, "both bodies being read")
        # When 30 more such deliveries and 30 unsigned ones arrive
        flood = [start_delivery(server, signature=forged) for _ in range(30)]
        unsigned = [start_delivery(server, signature=None) for _ in range(30)]
        # Then every one is answered and closed without its body being read: 503 and 401
        assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
        busy = [answer_until_closed(conn) for conn in flood]
        refused = [answer_until_closed(conn) for conn in unsigned]
        assert all(a.startswith(b"HTTP/1.1 503 ") and b"Connection: close" in a for a in busy), busy[0]
        assert all(a.startswith(b"HTTP/1.1 401 ") and b"Connection: close" in a for a in refused), refused[0]
        # And no more than the two bodies were ever being read
        assert bodies_reading(server) == 2
        # When the slow senders give up, their slots come back and a real push goes through
        for conn in holders:
            conn.close()
        eventually(lambda: bodies_reading(server) == 0, "the slots released")
        assert real_push(server) == 200 and len(pushes) == 1


def test_a_trickling_body_times_out_and_frees_its_slot() -> None:
    with webhook_server(max_concurrent_bodies=1, body_timeout_seconds=1) as (server, pushes):
        # Given a delivery whose body trickles in, a byte at a time, faster than any read timeout
        conn = start_delivery(server, signature="sha256=" + "0" * 64, length=100_000)
        stop = threading.Event()

        def trickle() -> None:
            while not stop.wait(0.05):
                try:
                    conn.sendall(b" ")
                except OSError:
                    return

        sender = threading.Thread(target=trickle, daemon=True)
        sender.start()
        try:
            # Then it is answered 408 and closed, and the slot serves the next delivery
            answer = answer_until_closed(conn)
        finally:
            stop.set()
            sender.join()
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert real_push(server) == 200 and len(pushes) == 1


# -- slow request heads (slowloris) ---------------------------------------------------------------


def closed_within(conn: socket.socket, seconds: float) -> bytes:
    """What the server sent before it closed ``conn``; fails if it is still open after ``seconds``."""
    conn.settimeout(seconds)
    received = b""
    while chunk := conn.recv(4096):  # raises TimeoutError if the server keeps the connection
        received += chunk
    return received


def test_a_request_head_that_never_completes_is_closed_and_health_is_served_meanwhile() -> None:
    metrics = Metrics(version="test", process_collectors=False)
    with HttpServer(
        metrics=metrics, readiness=Readiness(), host="127.0.0.1", port=0, head_timeout_seconds=1
    ) as server:
        # Given a client that connects and sends nothing, and one trickling its headers
        silent = socket.create_connection(server.address, timeout=5)
        trickling = socket.create_connection(server.address, timeout=5)
        trickling.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        for _ in range(3):  # a byte every 0.4 s: each byte would reset a per-read timeout
            time.sleep(0.4)
            trickling.sendall(b"X")
        # Then both are closed without an answer, and the port serves others all along
        assert httpx.get(server.url + "/healthz", timeout=5).status_code == 200
        assert closed_within(silent, 10) == b""
        assert closed_within(trickling, 10) == b""
        # And a kept-alive connection is served, then closed once it sends no next request
        with socket.create_connection(server.address, timeout=5) as kept:
            kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert closed_within(kept, 15).startswith(b"HTTP/1.1 200 ")
