"""Revisions, rollback and prune on the real control plane, as deploy/'s ServiceAccount.

Given a Deployment ``web`` deployed by three commits, each scenario checks what the cluster runs and
what ``history`` and ``status`` say: a progress deadline that fails a rollout whose image cannot be
pulled and rolls it back automatically; a manual rollback that pins the app and suspends its image
triggers; ``git revert`` that reuses the old ReplicaSet; prune when the manifest leaves git.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.controlplane import PULL_FAILURE_IMAGE
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.gitdeploy_cli import ManagedNamespace, history, status, synced, wait_for
from tests.realk8s.manifests import deployment, settings

pytestmark = pytest.mark.usefixtures("isolated_git_config")


def web(image: str, **spec: Any) -> dict[str, str]:
    return {"apps/web.yaml": deployment("web", image, 2, grace=1, **spec)}


def deploy_three(git_remote: GitRemote, gitdeploy: RunCli, namespace: str, **more: Any) -> None:
    git_remote.commit_and_push(
        "web 1", {"gitdeploy.yaml": settings(namespace, **more)} | web("registry.test/web:1")
    )
    synced(gitdeploy, git_remote)
    for version in (2, 3):
        git_remote.commit_and_push(f"web {version}", web(f"registry.test/web:{version}"))
        synced(gitdeploy, git_remote)


def running_images(control_plane: ControlPlane, namespace: str) -> set[str]:
    pods: Any = control_plane.get_json("pods", "-n", namespace, "-l", "app=web")
    return {
        p["spec"]["containers"][0]["image"]
        for p in pods["items"]
        if not p["metadata"].get("deletionTimestamp")
    }


def test_an_image_that_cannot_be_pulled_fails_at_the_deadline_and_old_pods_keep_serving(
    control_plane: ControlPlane, managed_namespace: ManagedNamespace, git_remote: GitRemote, gitdeploy: RunCli
) -> None:
    namespace = managed_namespace("deadline")
    git_remote.commit_and_push("web 1", {"gitdeploy.yaml": settings(namespace)} | web("registry.test/web:1"))
    synced(gitdeploy, git_remote)
    git_remote.commit_and_push("typo", web(PULL_FAILURE_IMAGE, progressDeadlineSeconds=5))
    synced(gitdeploy, git_remote, expect=1)

    revisions = history(gitdeploy, f"{namespace}/web")
    failed = next(r for r in revisions if r["commit"]["subject"] == "typo")
    assert (failed["outcome"], failed["reason"]) == ("Failed", "ProgressDeadlineExceeded")
    assert running_images(control_plane, namespace) >= {"registry.test/web:1"}


def test_rollback_pins_the_old_template_and_git_revert_reuses_the_old_replica_set(
    control_plane: ControlPlane, managed_namespace: ManagedNamespace, git_remote: GitRemote, gitdeploy: RunCli
) -> None:
    namespace = managed_namespace("rollback")
    deploy_three(git_remote, gitdeploy, namespace)
    before = history(gitdeploy, f"{namespace}/web")

    done = gitdeploy("rollback", f"{namespace}/web", "-m", "3 breaks checkout")
    assert done.returncode == 0, done.stdout + done.stderr
    synced(gitdeploy, git_remote)
    last = history(gitdeploy, f"{namespace}/web")[-1]
    assert (last["revision"], last["cause"], last["outcome"]) == (4, "Rollback", "Complete")
    assert last["replicaSet"] == before[1]["replicaSet"]
    assert running_images(control_plane, namespace) == {"registry.test/web:2"}
    assert status(gitdeploy, namespace)["sync"] == "Pinned"

    # a commit that changes the manifest releases the pin; a revert of it brings 2 back by reuse
    git_remote.commit_and_push("web 4", web("registry.test/web:4"))
    synced(gitdeploy, git_remote)
    git_remote.run_git("revert", "--no-edit", "HEAD")
    git_remote.push()
    synced(gitdeploy, git_remote)
    revisions = history(gitdeploy, f"{namespace}/web")
    assert revisions[-1]["replicaSet"] == before[2]["replicaSet"]
    assert running_images(control_plane, namespace) == {"registry.test/web:3"}
    replica_sets: Any = control_plane.get_json("replicasets", "-n", namespace)
    assert len(replica_sets["items"]) == 4, "a revert reuses a ReplicaSet instead of making a new one"


def test_prune_removes_an_app_that_left_git_and_keeps_the_others(
    control_plane: ControlPlane, managed_namespace: ManagedNamespace, git_remote: GitRemote, gitdeploy: RunCli
) -> None:
    namespace = managed_namespace("prune")
    git_remote.commit_and_push("two apps", {
        "gitdeploy.yaml": settings(namespace, prune=True),
        "apps/web.yaml": deployment("web", "registry.test/web:1", 1, grace=1),
        "apps/api.yaml": deployment("api", "registry.test/api:1", 1, grace=1),
    })  # fmt: skip
    synced(gitdeploy, git_remote)
    git_remote.commit_and_push_changes("drop api", {"apps/api.yaml": None})
    synced(gitdeploy, git_remote)

    def wait_gone() -> bool:
        pods: Any = control_plane.get_json("pods", "-n", namespace, "-l", "app=api")
        return not pods["items"]

    wait_for("the pruned app's pods to go", wait_gone, timeout=60)
    assert running_images(control_plane, namespace) == {"registry.test/web:1"}
    assert (
        control_plane.kubectl("get", "configmap", "gitdeploy.api", "-n", namespace, check=False).returncode
        != 0
    )
