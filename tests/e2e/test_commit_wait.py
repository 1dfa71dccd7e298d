"""``rollout status APP --commit SHA`` (issue 21, item 3): no false green right after a push.

The docs' CI recipe (docs/guides/deploying.md) is run as written (a bash snippet, in the config
repo's working clone),
with a real ``gitdeploy run`` polling the remote, on the embedded cluster.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.fixtures.cli import RunCli, docs_ci_recipe, gitdeploy_executable
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import SETTINGS, web


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def _env(tmp_path: Path, git_remote: GitRemote) -> dict[str, str]:
    env = {
        **git_remote.env,
        "GITDEPLOY_STATE_DIR": str(tmp_path / "state"),
        "NO_COLOR": "1",
        "PATH": f"{Path(gitdeploy_executable()).parent}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("KUBECONFIG", None)
    return env


def _run_recipe(tmp_path: Path, git_remote: GitRemote) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-c", docs_ci_recipe()],
        cwd=git_remote.work,
        env=_env(tmp_path, git_remote),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@contextmanager
def _running(tmp_path: Path, git_remote: GitRemote) -> Iterator[None]:
    """``gitdeploy run`` polling the remote every second."""
    command = [
        gitdeploy_executable(),
        "run",
        "--repo",
        git_remote.url,
        "--interval",
        "1s",
        "--no-leader-elect",
    ]
    log = tmp_path / "run.log"
    with log.open("w") as out:
        loop = subprocess.Popen(command, env=_env(tmp_path, git_remote), stdout=out, stderr=subprocess.STDOUT)
    try:
        yield
    finally:
        loop.send_signal(signal.SIGTERM)
        loop.wait(timeout=30)
    assert loop.returncode == 0, log.read_text()


def _commit(git_remote: GitRemote, subject: str, manifest: str) -> str:
    """A commit in the working clone, not pushed (the recipe pushes); its sha."""
    git_remote.write_files({"apps/web.yaml": manifest})
    git_remote.commit_all(subject)
    return git_remote.run_git("rev-parse", "HEAD").strip()


def _with_deadline(manifest: str, seconds: int) -> str:
    return manifest.replace("  replicas: 2\n", f"  replicas: 2\n  progressDeadlineSeconds: {seconds}\n")


def test_the_ci_recipe_waits_for_the_pushed_commit_and_fails_with_it(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    git_remote.commit_and_push("web 1.25", {"apps/web.yaml": web("nginx:1.25")})
    assert run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s").returncode == 0

    with _running(tmp_path, git_remote):
        # a new image: the recipe ends when the pushed commit's revision is complete
        sha = _commit(git_remote, "web 1.26", web("nginx:1.26"))
        done = _run_recipe(tmp_path, git_remote)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f'app "shop/web" at commit {sha[:7]}: revision 2 complete' in done.stdout
        history = run_cli("history", "shop/web", "-o", "json").stdout
        assert f'"sha": "{sha}"' in history and '"outcome": "Complete"' in history

        # scaling only: no revision, the loop's verdict at that commit counts once every pod is ready
        sha = _commit(git_remote, "web x3", web("nginx:1.26", replicas=3))
        done = _run_recipe(tmp_path, git_remote)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"at commit {sha[:7]}: nothing to roll out" in done.stdout
        assert '"ready": 3' in run_cli("status", "shop/web", "-o", "json").stdout

        # an image that cannot be pulled: that commit's revision fails, and so does the job
        sha = _commit(git_remote, "web missing", _with_deadline(web("nginx:missing", replicas=2), 3))
        done = _run_recipe(tmp_path, git_remote)
        assert done.returncode == 1, done.stdout + done.stderr
        assert f'app "shop/web" revision 3 failed: commit {sha[:7]}: revision 3 failed' in done.stderr


def test_without_the_loop_the_pushed_commit_is_never_reached_and_that_is_no_green(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    git_remote.commit_and_push("web 1.25", {"apps/web.yaml": web("nginx:1.25")})
    assert run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s").returncode == 0
    sha = _commit(git_remote, "web 1.26", web("nginx:1.26"))
    git_remote.push()

    # the previous revision is what `rollout status` alone reports (kubectl's meaning) ...
    assert run_cli("rollout", "status", "shop/web").returncode == 0
    # ... while waiting for the pushed commit fails: nothing has looked at it
    waited = run_cli("rollout", "status", "shop/web", "--commit", sha[:10], "--timeout", "2s")
    assert waited.returncode == 1, waited.stdout + waited.stderr
    assert f"the loop has not reached commit {sha[:7]} for shop/web" in waited.stderr
    bad = run_cli("rollout", "status", "shop/web", "--commit", "main")
    assert bad.returncode == 2 and "is not a commit sha" in bad.stderr
