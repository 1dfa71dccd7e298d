"""gitdeploy against the real control plane, as the tests of tests/realk8s drive it: the real CLI
as deploy/'s ServiceAccount (``synced`` is ``sync --wait``; ``history``, ``view``, ``status``
read its JSON), :class:`Run`, a ``gitdeploy run`` in the background, and ``wait_for``, which polls
at the real cluster's pace. The fixtures that make these (``gitdeploy``, ``runs``,
``managed_namespace``) live in tests/realk8s/conftest.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fixtures.cli import RunCli, gitdeploy_executable
from tests.fixtures.gitrepo import GitRemote

ManagedNamespace = Callable[..., str]


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll ``check`` until true; fail naming ``what`` (the real cluster moves at its own pace)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def synced(gitdeploy: RunCli, repo: GitRemote, *, expect: int = 0, timeout: str = "60s") -> str:
    """``gitdeploy sync --repo REPO --wait``; fail unless it exits with ``expect``."""
    done = gitdeploy("sync", "--repo", repo.url, "--wait", "--timeout", timeout, timeout=600)
    assert done.returncode == expect, done.stdout + done.stderr
    return done.stdout


def history(gitdeploy: RunCli, app: str) -> list[dict[str, Any]]:
    done = gitdeploy("history", app, "-o", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


class Run:
    """One ``gitdeploy run`` in the background, as the ServiceAccount; its log goes to a file."""

    def __init__(self, kubeconfig: Path, state: Path, log: Path, *args: str) -> None:
        env = {**os.environ, "GITDEPLOY_STATE_DIR": str(state), "NO_COLOR": "1"}
        env.pop("KUBECONFIG", None)
        self.log_path = log
        with log.open("w") as out:
            self.process = subprocess.Popen(
                [gitdeploy_executable(), "--kubeconfig", str(kubeconfig), "run", *args],
                env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip

    @property
    def log(self) -> str:
        return self.log_path.read_text()

    def leads(self) -> bool:
        return re.search(r"became leader", self.log) is not None


def view(gitdeploy: RunCli, namespace: str, app: str | None = None) -> dict[str, Any] | None:
    """``status -n NAMESPACE -o json``'s view of ``app`` (None: the first app)."""
    done = gitdeploy("status", "-n", namespace, "-o", "json")
    views = json.loads(done.stdout) if done.returncode == 0 else []
    return next((v for v in views if app is None or v["key"] == f"{namespace}/{app}"), None)


def at_revision(gitdeploy: RunCli, namespace: str, revision: int) -> Callable[[], bool]:
    def check() -> bool:
        found = view(gitdeploy, namespace)
        return bool(
            found and (found["revision"], found["sync"], found["health"]) == (revision, "Synced", "Healthy")
        )

    return check


def status(gitdeploy: RunCli, namespace: str) -> dict[str, Any]:
    done = gitdeploy("status", "-n", namespace, "-o", "json")
    assert done.returncode == 0, done.stderr
    [view] = json.loads(done.stdout)
    return dict(view)
