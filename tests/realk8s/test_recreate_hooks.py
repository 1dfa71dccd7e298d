"""Recreate and lifecycle hooks on the real control plane, where a deleted pod stays Terminating for
its grace period and hook pods run under Pod Security "restricted".

Seed 000: "Successful removal is awaited before any Pod of the new revision is created", and the mid
hook runs after all old pods are scaled down and before any new pods are scaled up.
"""

from __future__ import annotations

from typing import Any

import pytest

from gitdeploy.core.hashing import TEMPLATE_HASH_LABEL
from gitdeploy.core.observed import POD_ROLE_LABEL
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.gitdeploy_cli import ManagedNamespace, history, synced
from tests.realk8s.kwok_stages import HANG
from tests.realk8s.manifests import hook, recreate, settings, worker
from tests.realk8s.observed import app_pods, running_images
from tests.realk8s.podwatch import PodState, PodWatch

pytestmark = pytest.mark.usefixtures("isolated_git_config")

GRACE = 4


def test_recreate_never_overlaps_pods_and_the_mid_hook_runs_when_old_pods_are_gone(
    control_plane: ControlPlane, managed_namespace: ManagedNamespace, git_remote: GitRemote, gitdeploy: RunCli
) -> None:
    namespace = managed_namespace("recreate")
    strategy = recreate(pre=hook("Abort"), mid=hook("Abort"), post=hook("Ignore"))
    git_remote.commit_and_push(
        "worker 1", {"gitdeploy.yaml": settings(namespace)} | worker(1, 3, strategy, GRACE)
    )
    synced(gitdeploy, git_remote)

    app_pods_when_mid_started: list[list[PodState]] = []
    hooks_of_revision_1: Any = control_plane.get_json("pods", "-n", namespace, "-l", POD_ROLE_LABEL)
    earlier = {p["metadata"]["name"] for p in hooks_of_revision_1["items"]}  # finished pods stay

    def no_overlap(pods: dict[str, PodState]) -> None:
        hashes = {p.labels.get(TEMPLATE_HASH_LABEL) for p in app_pods(pods)}
        assert len(hashes) <= 1, f"pods of two templates exist at once: {sorted(map(str, hashes))}"
        mid = [n for n, p in pods.items() if p.labels.get(POD_ROLE_LABEL) == "hook-mid" and n not in earlier]
        if mid and not app_pods_when_mid_started:
            app_pods_when_mid_started.append(app_pods(pods))

    with PodWatch(namespace, control_plane.admin_kubeconfig, check=no_overlap) as watched:
        git_remote.commit_and_push("worker 2", worker(2, 3, strategy, GRACE))
        synced(gitdeploy, git_remote)
    assert not watched.failures, watched.failures
    assert app_pods_when_mid_started == [[]], (
        "the mid hook started while app pods (old, or Terminating) existed"
    )
    assert [r["outcome"] for r in history(gitdeploy, f"{namespace}/worker")] == ["Complete", "Complete"]
    assert running_images(control_plane, namespace) == {"registry.test/worker:2"}


@pytest.mark.parametrize(
    ("policy", "exit_code", "outcome"),
    [("Abort", "3", "Failed"), ("Ignore", "3", "Complete"), ("Abort", "0", "Complete")],
)
def test_a_pre_hook_failure_policy_decides_the_rollout(
    policy: str,
    exit_code: str,
    outcome: str,
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
) -> None:
    namespace = managed_namespace("hooks")
    git_remote.commit_and_push("worker 1", {"gitdeploy.yaml": settings(namespace)} | worker(1, 2, recreate()))
    synced(gitdeploy, git_remote)
    git_remote.commit_and_push("worker 2", worker(2, 2, recreate(pre=hook(policy, exit_code))))
    synced(gitdeploy, git_remote)  # a failed revision is rolled back (a DeploymentConfig's autoRollback)

    assert history(gitdeploy, f"{namespace}/worker")[1]["outcome"] == outcome
    expected = "registry.test/worker:1" if outcome == "Failed" else "registry.test/worker:2"
    assert running_images(control_plane, namespace) == {expected}


def test_a_hook_that_hangs_is_stopped_at_its_deadline(
    control_plane: ControlPlane, managed_namespace: ManagedNamespace, git_remote: GitRemote, gitdeploy: RunCli
) -> None:
    namespace = managed_namespace("hang")
    git_remote.commit_and_push("worker 1", {"gitdeploy.yaml": settings(namespace)} | worker(1, 1, recreate()))
    synced(gitdeploy, git_remote)
    git_remote.commit_and_push("worker 2", worker(2, 1, recreate(timeout=8, pre=hook("Abort", HANG))))
    synced(gitdeploy, git_remote, timeout="90s")  # revision 2 fails and is rolled back

    assert history(gitdeploy, f"{namespace}/worker")[1]["outcome"] == "Failed"
    pods: Any = control_plane.get_json("pods", "-n", namespace, "-l", f"{POD_ROLE_LABEL}=hook-pre")
    assert [p for p in pods["items"] if not p["metadata"].get("deletionTimestamp")] == [], (
        "the hung hook pod outlived its failed rollout"
    )
    assert running_images(control_plane, namespace) == {"registry.test/worker:1"}
