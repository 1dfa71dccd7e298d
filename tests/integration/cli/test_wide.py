"""``status`` and ``history`` fit an 80-column terminal; ``-o wide`` adds the extra columns (images,
template hash, the whole commit subject) and cuts nothing, as ``kubectl get -o wide``."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
from pathlib import Path

import pytest

from tests.fixtures.cli import RunCli, gitdeploy_executable
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import SETTINGS, sync_and_wait, web, web_history

LONG_SUBJECT = "web: nginx 1.26, the release that fixes the checkout timeouts reported by three customers"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def on_terminal(state_dir: Path, *args: str, columns: int = 80) -> list[str]:
    """The lines ``gitdeploy ARGS`` shows on a terminal ``columns`` wide (a real pseudo-terminal)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": str(columns), "TERM": "xterm"}
    env.pop("KUBECONFIG", None)
    env["GITDEPLOY_STATE_DIR"] = str(state_dir)
    done = subprocess.run(
        [gitdeploy_executable(), *args],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
        timeout=60,
        check=False,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: all read
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert done.returncode == 0, done.stderr
    return [ANSI.sub("", line).rstrip() for line in shown.decode().replace("\r", "").splitlines()]


def test_status_and_history_fit_80_columns_and_wide_adds_the_rest(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    # Given shop/web deployed twice, the second time by a commit with a long subject
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push(LONG_SUBJECT, {"apps/web.yaml": web("nginx:1.26")})
    sync_and_wait(run_cli, git_remote)
    second = web_history(run_cli)[1]
    state = tmp_path / "state"  # run_cli's

    # When status and history are shown on an 80-column terminal
    for args, headers in (
        (("status",), ["APP", "READY", "REVISION", "SYNC", "HEALTH", "MESSAGE"]),
        (("history", "shop/web"), ["REVISION", "COMMIT", "AUTHOR", "AGE", "CAUSE", "STATUS"]),
    ):
        lines = on_terminal(state, *args)
        # Then every line fits, and the headers are whole
        assert all(len(line) <= 80 for line in lines), lines
        assert lines[0].split() == headers, lines[0]

    # When they are shown -o wide (on the same terminal, and piped)
    for lines in (
        on_terminal(state, "status", "-o", "wide"),
        run_cli("status", "-o", "wide").stdout.splitlines(),
    ):
        # Then status adds the pods, the commit and its subject, the hash and the images
        assert lines[0].split() == [
            "APP", "READY", "UP-TO-DATE", "AVAILABLE", "REVISION", "COMMIT", "SYNC", "HEALTH", "HASH",
            "IMAGES", "MESSAGE",
        ]  # fmt: skip
        assert f"{second['commit']['sha'][:7]} {LONG_SUBJECT}" in lines[1]
        assert second["templateHash"] in lines[1] and "nginx:1.26" in lines[1]
    for lines in (
        on_terminal(state, "history", "shop/web", "-o", "wide"),
        run_cli("history", "shop/web", "-o", "wide").stdout.splitlines(),
    ):
        # and history the images, the hash, the start time and the whole subject, nothing cut
        assert lines[0].split() == [
            "REVISION", "COMMIT", "AUTHOR", "AGE", "CAUSE", "STATUS", "IMAGES", "HASH", "STARTED", "MESSAGE",
        ]  # fmt: skip
        assert LONG_SUBJECT in lines[2] and "nginx:1.26" in lines[2] and second["templateHash"] in lines[2]
        assert second["startedAt"] in lines[2]
        assert not any("…" in line for line in lines)
