"""A failed rollout says why when the cluster knows (issue 24): the pods' ImagePullBackOff with the
image, CrashLoopBackOff with the exit code, a hook's exit code. The reason is kept in the revision's
record, so ``history`` says it later, and ``sync --wait``, ``status`` and ``rollout status`` print it.
The embedded cluster's kubelet makes images tagged ``missing`` fail to pull and ``crash`` crash."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.rolloutapps import worker
from tests.fixtures.shopweb import SETTINGS, sync_and_wait, web, web_history, web_status


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def _deadline(manifest: str, seconds: int = 2) -> str:
    return manifest.replace("  replicas: 2\n", f"  replicas: 2\n  progressDeadlineSeconds: {seconds}\n")


@pytest.mark.parametrize(
    ("image", "says"),
    [
        ("nginx:missing", "1 pod ImagePullBackOff (container web, image nginx:missing)"),
        ("nginx:crash", "1 pod CrashLoopBackOff (container web, exit code 1)"),
    ],
    ids=["image pull", "crash loop"],
)
def test_a_revision_failed_by_its_deadline_says_what_held_its_pods(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, image: str, says: str
) -> None:
    # Given shop/web running nginx:1.25
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)

    # When a commit deploys an image that cannot run, with a 2 s progress deadline
    git_remote.commit_and_push("web: broken image", {"apps/web.yaml": _deadline(web(image))})
    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")

    # Then sync fails saying why, and so do status, rollout status and history, later too
    assert synced.returncode == 1
    assert says in synced.stdout + synced.stderr, synced.stdout + synced.stderr
    failed = web_history(run_cli)[-1]
    assert (failed["revision"], failed["outcome"]) == (2, "Failed")
    assert failed["reason"] == "ProgressDeadlineExceeded"
    assert failed["message"] == f"no progress for 2 s (0/2 new pods available): {says}"
    assert says in web_status(run_cli)["message"]
    rollout = run_cli("rollout", "status", "shop/web", "--timeout", "5s")
    assert rollout.returncode == 1 and says in rollout.stderr, rollout.stderr
    wide = run_cli("history", "shop/web", "-o", "wide").stdout.splitlines()
    assert wide[2].startswith("2 ") and wide[2].endswith(failed["message"]), wide
    table = run_cli("history", "shop/web", "--revision", "2")
    status_line = "Status:        Failed (ProgressDeadlineExceeded): " + failed["message"]
    assert f"{status_line}\n" in table.stdout, table.stdout


def test_a_failed_hook_says_its_exit_code(git_remote: GitRemote, run_cli: RunCli, cluster: None) -> None:
    # Given a Recreate DeploymentConfig whose pre hook (Abort) runs the app's image
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/worker.yaml": worker()})
    sync_and_wait(run_cli, git_remote)

    # When the image is one whose containers exit with code 1
    git_remote.commit_and_push("worker: crash", {"apps/worker.yaml": worker("example/worker:crash")})
    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")

    # Then the revision failed, saying the hook's exit code
    assert synced.returncode == 1
    history = json.loads(run_cli("history", "jobs/worker", "-o", "json").stdout)
    assert (history[-1]["outcome"], history[-1]["reason"]) == ("Failed", "HookFailed")
    assert history[-1]["message"] == "the pre hook failed with exit code 1 (Abort policy)"
    assert history[-1]["hooks"][0]["exitCode"] == 1
