"""Through the real ``gitdeploy`` command: a revision in full (the whole commit message, the template
diff), and rollout progress as lines in a log or as live bars on a terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.fixtures.cli import RunCli, gitdeploy_executable
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import SETTINGS, web


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


@pytest.fixture
def cluster(run_cli: RunCli) -> Iterator[None]:
    up = run_cli("cluster", "up", "--pod-start-seconds", "0.3", "--job-seconds", "0.3")
    assert up.returncode == 0, up.stderr
    try:
        yield
    finally:
        run_cli("cluster", "down")


def _two_revisions(git_remote: GitRemote, run_cli: RunCli) -> str:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    assert run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s").returncode == 0
    fast = web("nginx:1.26").replace('"nginx:1.26"', '"nginx:1.26", env: [{name: MODE, value: fast}]')
    git_remote.write_files({"apps/web.yaml": fast})
    git_remote.commit_all("web: nginx 1.26, fast mode\n\nThe 1.25 line leaks memory.\nRefs: OPS-42")
    git_remote.push()
    return git_remote.head_sha()


def test_a_revision_in_full_shows_the_commit_message_and_the_template_diff(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    # Given two revisions, the second from a commit with a body
    sha = _two_revisions(git_remote, run_cli)
    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert synced.returncode == 0, synced.stdout + synced.stderr

    # When the second revision is shown in full (the state dir holds sync's mirror of the repo)
    shown = run_cli("history", "shop/web", "--revision", "2")

    # Then it has the whole message and what changed in the template since revision 1
    assert shown.returncode == 0, shown.stderr
    assert f"Commit:        {sha}" in shown.stdout
    assert "  The 1.25 line leaks memory.\n  Refs: OPS-42" in shown.stdout
    assert "Template changes since revision 1:" in shown.stdout
    assert (
        "  container web\n    env.MODE: (none) -> fast\n    image: nginx:1.25 -> nginx:1.26" in shown.stdout
    )
    assert "template-hash" not in shown.stdout.split("Template changes")[1]

    # and the same as YAML, from the repo itself with --repo
    as_yaml = yaml.safe_load(
        run_cli("history", "web", "--revision", "2", "--repo", git_remote.url, "-o", "yaml").stdout
    )
    assert as_yaml["message"].startswith("web: nginx 1.26, fast mode\n\nThe 1.25 line leaks memory.")
    assert as_yaml["diff"]["against"] == 1
    assert {"scope": "container web", "field": "image", "before": "nginx:1.25", "after": "nginx:1.26"} in (
        as_yaml["diff"]["changes"]
    )
    first = json.loads(run_cli("history", "web", "--revision", "1", "-o", "json").stdout)
    assert (first["revision"], first["diff"]["against"], first["message"]) == (1, None, "Settings")


def test_without_the_repo_the_message_is_missing_and_it_says_how_to_get_it(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    _two_revisions(git_remote, run_cli)
    # Another machine: a state dir without the mirror, the same cluster through its kubeconfig
    elsewhere = {"GITDEPLOY_STATE_DIR": str(tmp_path / "elsewhere")}
    kubeconfig = str(tmp_path / "state" / "kubeconfig")
    shown = run_cli("history", "web", "--revision", "1", "--kubeconfig", kubeconfig, env=elsewhere)
    assert shown.returncode == 0, shown.stderr
    assert (
        "not found in the state dir's repo mirrors; pass --repo URL|PATH of the config repo" in shown.stdout
    )
    missing = run_cli("history", "web", "--revision", "7")
    assert missing.returncode == 1
    assert (
        missing.stderr.strip()
        == "error: shop/web has no revision 7 (`gitdeploy history shop/web` lists them)"
    )


def test_off_a_terminal_progress_is_one_line_per_change_in_kubectl_words(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    _two_revisions(git_remote, run_cli)
    git_remote.commit_and_push("web: 4 replicas", {"apps/web.yaml": web("nginx:1.27", replicas=4)})

    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")

    assert synced.returncode == 0, synced.stderr
    lines = synced.stderr.splitlines()
    assert lines, "sync --wait says what it waits for"
    assert all(line.startswith("shop/web: Waiting for rollout to finish: ") for line in lines), lines
    assert len(lines) == len(set(lines)), "a line only when something changed"
    assert "\x1b[" not in synced.stdout + synced.stderr
    rolled = run_cli("rollout", "status", "web")
    assert (rolled.returncode, rolled.stdout) == (0, 'app "shop/web" successfully rolled out (revision 2)\n')


def _on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run gitdeploy with stdin, stdout and stderr on a pseudo-terminal; its exit code and output."""
    controller, terminal = pty.openpty()
    command = subprocess.Popen(
        [gitdeploy_executable(), *args], env=env, stdin=terminal, stdout=terminal, stderr=terminal
    )
    os.close(terminal)
    seen = b""
    try:
        while True:
            ready, _, _ = select.select([controller], [], [], 60)
            assert ready, f"gitdeploy {args} printed nothing for 60 s"
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the terminal closed: the command ended
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if command.poll() is None:
            command.kill()
        os.close(controller)
    return command.wait(timeout=10), seen.decode(errors="replace")


def test_on_a_terminal_rollout_status_and_sync_wait_draw_progress_bars(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    _two_revisions(git_remote, run_cli)
    env = {**os.environ, "GITDEPLOY_STATE_DIR": str(tmp_path / "state"), "COLUMNS": "120", "TERM": "xterm"}
    env.pop("KUBECONFIG", None)
    env.pop("NO_COLOR", None)
    # rollout status follows the rollout that a sync --wait in the background performs
    sync = subprocess.Popen(
        [gitdeploy_executable(), "sync", "--repo", git_remote.url, "--wait", "--timeout", "60s"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):  # until the rollout of revision 2 is under way
            if json.loads(run_cli("status", "web", "-o", "json").stdout)[0]["revision"] == 2:
                break
        code, text = _on_a_terminal(["rollout", "status", "web", "--timeout", "60s"], env)
    finally:
        assert sync.wait(timeout=60) == 0
    assert code == 0, text
    assert "━" in text and "shop/web" in text and "/2" in text, text  # rich's bar, the app, N/2 replicas
    assert 'app "shop/web" successfully rolled out (revision 2)' in text
    assert "\x1b[" in text  # a terminal gets colour and cursor movement

    git_remote.commit_and_push("web: 1.27", {"apps/web.yaml": web("nginx:1.27")})
    code, text = _on_a_terminal(["sync", "--repo", git_remote.url, "--wait", "--timeout", "60s"], env)
    assert code == 0, text
    assert "━" in text and "Complete" in text, text
    assert "Waiting for rollout to finish" not in text.replace("\r", "\n").splitlines()[-1]
