"""The lifecycle of a DeploymentConfig on the real control plane, as deploy/'s ServiceAccount.

- A ``Retry`` hook runs again in a new attempt pod, and the rollout completes once an attempt
  succeeds (kwok ends attempt N with success when the hook's ``SUCCEED_ON_ATTEMPT`` is N); one that
  never succeeds fails the rollout with ``HookFailed`` while the old pods keep serving.
- Automatic rollback: an image that cannot be pulled fails at the progress deadline and the last
  Complete revision comes back as a new revision, reusing its ReplicaSet.
- A manual rollback suspends image triggers: a moved tag does not roll out until
  ``deploy --enable-triggers``.
- Recreate's first-replica rule (seed 000): with more than one replica, the new ReplicationController
  first runs one pod, and only when it is ready the rest.
"""

from __future__ import annotations

from typing import Any

import pytest

from gitdeploy.core.hashing import TEMPLATE_HASH_LABEL
from gitdeploy.core.observed import ATTEMPT_ANNOTATION, POD_ROLE_LABEL
from tests.fixtures.cli import RunCli
from tests.fixtures.controlplane import PULL_FAILURE_IMAGE
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.gitdeploy_cli import ManagedNamespace, history, status, synced
from tests.realk8s.kwok_stages import SUCCEED_ON_ATTEMPT_VAR
from tests.realk8s.manifests import (
    DIGEST_A,
    DIGEST_B,
    DIGEST_C,
    deployment,
    deployment_config,
    following_the_stream,
    hook,
    image_stream,
    recreate,
    settings,
    worker,
)
from tests.realk8s.observed import app_pods, events, running_images
from tests.realk8s.podwatch import PodState, PodWatch

pytestmark = pytest.mark.usefixtures("isolated_git_config")


def hook_pods(control_plane: ControlPlane, namespace: str, phase: str) -> list[dict[str, Any]]:
    pods: Any = control_plane.get_json("pods", "-n", namespace, "-l", f"{POD_ROLE_LABEL}=hook-{phase}")
    return list(pods["items"])


def test_a_retry_hook_runs_again_and_the_rollout_completes_when_an_attempt_succeeds(
    control_plane: ControlPlane, managed_namespace: ManagedNamespace, git_remote: GitRemote, gitdeploy: RunCli
) -> None:
    namespace = managed_namespace("retry")
    git_remote.commit_and_push("worker 1", {"gitdeploy.yaml": settings(namespace)} | worker(1, 1, recreate()))
    synced(gitdeploy, git_remote)

    flaky = hook("Retry", "3")
    flaky["execNewPod"]["env"].append({"name": SUCCEED_ON_ATTEMPT_VAR, "value": "2"})
    git_remote.commit_and_push("worker 2", worker(2, 1, recreate(timeout=40, pre=flaky)))
    synced(gitdeploy, git_remote, timeout="90s")

    last = history(gitdeploy, f"{namespace}/worker")[-1]
    assert (last["revision"], last["outcome"]) == (2, "Complete"), last
    [pod] = hook_pods(control_plane, namespace, "pre")
    assert (pod["metadata"]["annotations"][ATTEMPT_ANNOTATION], pod["status"]["phase"]) == ("2", "Succeeded")
    started = events(control_plane, namespace, "HookStarted")
    assert any("revision 2 (attempt 2)" in m for m in started), started
    assert running_images(control_plane, namespace) == {"registry.test/worker:2"}


def test_a_retry_hook_that_never_succeeds_fails_the_rollout_and_old_pods_keep_serving(
    control_plane: ControlPlane, managed_namespace: ManagedNamespace, git_remote: GitRemote, gitdeploy: RunCli
) -> None:
    namespace = managed_namespace("retryfail")
    git_remote.commit_and_push("worker 1", {"gitdeploy.yaml": settings(namespace)} | worker(1, 2, recreate()))
    synced(gitdeploy, git_remote)
    git_remote.commit_and_push("worker 2", worker(2, 2, recreate(timeout=12, pre=hook("Retry", "3"))))
    synced(gitdeploy, git_remote, timeout="90s")

    revisions = history(gitdeploy, f"{namespace}/worker")
    assert (revisions[1]["outcome"], revisions[1]["reason"]) == ("Failed", "HookFailed"), revisions[1]
    assert [h["attempts"] for h in revisions[1]["hooks"]] == [2], revisions[1]["hooks"]
    [pod] = hook_pods(control_plane, namespace, "pre")
    assert pod["metadata"]["annotations"][ATTEMPT_ANNOTATION] == "2", "the Retry hook was not retried"
    assert_rolled_back_without_hooks(revisions)
    assert running_images(control_plane, namespace) == {"registry.test/worker:1"}


def test_deploy_retry_runs_a_revision_failed_in_its_pre_hook_again(
    control_plane: ControlPlane, managed_namespace: ManagedNamespace, git_remote: GitRemote, gitdeploy: RunCli
) -> None:
    # Given revision 2 Failed in its pre hook (which exits 3), the old pods still serving (no
    # automatic rollback: it would make a revision 3 the last)
    namespace = managed_namespace("deployretry")
    config = {"gitdeploy.yaml": settings(namespace, autoRollback=False)}
    git_remote.commit_and_push("worker 1", config | worker(1, 1, recreate()))
    synced(gitdeploy, git_remote)
    git_remote.commit_and_push("worker 2", worker(2, 1, recreate(timeout=12, pre=hook("Abort", "3"))))
    waited = gitdeploy("sync", "--repo", git_remote.url, "--wait", "--timeout", "90s", timeout=600)
    assert waited.returncode != 0 and "the pre hook failed" in waited.stdout, waited.stdout + waited.stderr
    failed = history(gitdeploy, f"{namespace}/worker")[1]
    assert (failed["revision"], failed["outcome"]) == (2, "Failed"), failed

    # When it is retried as deploy/'s ServiceAccount (the ReplicaSet's marks written naming the
    # resourceVersion read, then the record)
    retried = gitdeploy("deploy", f"{namespace}/worker", "--retry")

    # Then revision 2 is Running again under its own number, its failed hook pod gone
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert "revision 2 runs again (retried by " in retried.stdout
    again = history(gitdeploy, f"{namespace}/worker")
    assert [(r["revision"], r["outcome"]) for r in again[:2]] == [(1, "Complete"), (2, "Running")], again
    assert not [p for p in hook_pods(control_plane, namespace, "pre") if p["status"]["phase"] == "Failed"]
    assert running_images(control_plane, namespace) == {"registry.test/worker:1"}


def test_a_failed_mid_hook_is_rolled_back_to_the_old_pods_without_running_hooks_again(
    control_plane: ControlPlane, managed_namespace: ManagedNamespace, git_remote: GitRemote, gitdeploy: RunCli
) -> None:
    namespace = managed_namespace("midfail")
    git_remote.commit_and_push("worker 1", {"gitdeploy.yaml": settings(namespace)} | worker(1, 2, recreate()))
    synced(gitdeploy, git_remote)
    strategy = recreate(pre=hook("Abort"), mid=hook("Abort", "3"))
    git_remote.commit_and_push("worker 2", worker(2, 2, strategy, 1))
    synced(gitdeploy, git_remote, timeout="90s")

    revisions = history(gitdeploy, f"{namespace}/worker")
    assert (revisions[1]["outcome"], revisions[1]["reason"]) == ("Failed", "HookFailed"), revisions[1]
    assert_rolled_back_without_hooks(revisions)
    assert running_images(control_plane, namespace) == {"registry.test/worker:1"}
    assert len(hook_pods(control_plane, namespace, "mid")) == 1, "the failed mid hook ran again"


def assert_rolled_back_without_hooks(revisions: list[dict[str, Any]]) -> None:
    """Revision 3 brought revision 1 back (the old ReplicaSet), as OpenShift scales the last good
    deployment back up: the failed revision's hooks do not run again."""
    rollback = revisions[-1]
    assert (rollback["revision"], rollback["cause"], rollback["outcome"]) == (
        3,
        "AutoRollback",
        "Complete",
    ), rollback
    assert rollback["replicaSet"] == revisions[0]["replicaSet"]
    assert rollback["hooks"] == [], rollback["hooks"]


def web_manifest(kind: str, image: str) -> dict[str, str]:
    """``web`` with 2 replicas and a progress deadline of 8 s."""
    if kind == "DeploymentConfig":
        strategy = {"type": "Rolling", "rollingParams": {"timeoutSeconds": 8}}
        return {"apps/web.yaml": deployment_config("web", image, 2, strategy, grace=1)}
    return {"apps/web.yaml": deployment("web", image, 2, grace=1, progressDeadlineSeconds=8)}


@pytest.mark.parametrize("kind", ["DeploymentConfig", "Deployment"])
def test_an_image_that_cannot_be_pulled_is_rolled_back_automatically_at_the_deadline(
    kind: str,
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
) -> None:
    namespace = managed_namespace("autorollback")
    auto_rollback = {} if kind == "DeploymentConfig" else {"autoRollback": True}  # a DC's default
    git_remote.commit_and_push(
        "web 1",
        {"gitdeploy.yaml": settings(namespace, **auto_rollback)} | web_manifest(kind, "registry.test/web:1"),
    )
    synced(gitdeploy, git_remote)
    git_remote.commit_and_push("web 2", web_manifest(kind, "registry.test/web:2"))
    synced(gitdeploy, git_remote)
    git_remote.commit_and_push("typo", web_manifest(kind, PULL_FAILURE_IMAGE))
    synced(gitdeploy, git_remote, expect=0, timeout="90s")

    revisions = history(gitdeploy, f"{namespace}/web")
    summary = [(r["revision"], r["cause"], r["outcome"], r.get("reason", "")) for r in revisions]
    assert [s[:3] for s in summary] == [
        (1, "ConfigChange", "Complete"),
        (2, "ConfigChange", "Complete"),
        (3, "ConfigChange", "Failed"),
        (4, "AutoRollback", "Complete"),
    ], summary
    assert revisions[2]["reason"] == "ProgressDeadlineExceeded"
    assert revisions[3]["replicaSet"] == revisions[1]["replicaSet"], "the rollback made a new ReplicaSet"
    assert running_images(control_plane, namespace, "web") == {"registry.test/web:2"}
    assert status(gitdeploy, namespace)["sync"] == "Pinned"


def test_a_rollback_suspends_image_triggers_until_they_are_enabled_again(
    control_plane: ControlPlane, managed_namespace: ManagedNamespace, git_remote: GitRemote, gitdeploy: RunCli
) -> None:
    namespace = managed_namespace("triggers")
    git_remote.commit_and_push("web follows its stream", {
        "gitdeploy.yaml": settings(namespace),
        "apps/stream.yaml": image_stream(DIGEST_A),
        "apps/web.yaml": following_the_stream(),
    })  # fmt: skip
    synced(gitdeploy, git_remote)
    tag = (f"registry.test/web@{DIGEST_B}", f"{namespace}/web:prod")
    moved = gitdeploy("tag", *tag)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    synced(gitdeploy, git_remote)
    assert history(gitdeploy, f"{namespace}/web")[-1]["cause"] == "ImageChange"

    rolled = gitdeploy("rollback", f"{namespace}/web", "-m", "B breaks checkout")
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    synced(gitdeploy, git_remote)
    assert running_images(control_plane, namespace, "web") == {f"registry.test/web@{DIGEST_A}"}

    moved = gitdeploy("tag", f"registry.test/web@{DIGEST_C}", f"{namespace}/web:prod")
    assert moved.returncode == 0, moved.stdout + moved.stderr
    synced(gitdeploy, git_remote)
    revisions = history(gitdeploy, f"{namespace}/web")
    assert [(r["revision"], r["cause"]) for r in revisions] == [
        (1, "ConfigChange"), (2, "ImageChange"), (3, "Rollback")
    ], "a moved tag rolled out while the triggers were suspended"  # fmt: skip
    assert running_images(control_plane, namespace, "web") == {f"registry.test/web@{DIGEST_A}"}
    said = status(gitdeploy, namespace)
    assert said["sync"] == "Pinned" and said["triggersSuspended"], said
    assert f"`gitdeploy deploy {namespace}/web --enable-triggers` resumes them" in said["message"], said
    told = gitdeploy("history", f"{namespace}/web")
    assert told.returncode == 0, told.stderr
    assert "suspended (rollback from revision 2 to 1 by" in told.stdout, told.stdout
    assert f"`gitdeploy deploy {namespace}/web --enable-triggers` resumes them" in told.stdout, told.stdout

    resumed = gitdeploy("deploy", f"{namespace}/web", "--enable-triggers")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    synced(gitdeploy, git_remote)
    last = history(gitdeploy, f"{namespace}/web")[-1]
    assert (last["revision"], last["outcome"]) == (4, "Complete"), last
    assert running_images(control_plane, namespace, "web") == {f"registry.test/web@{DIGEST_C}"}
    assert status(gitdeploy, namespace)["sync"] == "Synced"


def test_recreate_runs_one_new_pod_and_scales_up_only_when_it_is_ready(
    control_plane: ControlPlane, managed_namespace: ManagedNamespace, git_remote: GitRemote, gitdeploy: RunCli
) -> None:
    namespace = managed_namespace("firstreplica")
    git_remote.commit_and_push(
        "worker 1", {"gitdeploy.yaml": settings(namespace)} | worker(1, 3, recreate(), 1)
    )
    synced(gitdeploy, git_remote)
    replica_sets: Any = control_plane.get_json("replicasets", "-n", namespace)
    old_hashes = {rs["metadata"]["labels"][TEMPLATE_HASH_LABEL] for rs in replica_sets["items"]}
    new_pods_seen: set[int] = set()

    def first_replica_first(pods: dict[str, PodState]) -> None:
        new = [p for p in app_pods(pods) if p.labels.get(TEMPLATE_HASH_LABEL) not in old_hashes]
        new_pods_seen.add(len(new))
        assert len(new) <= 1 or any(p.ready for p in new), (
            f"{len(new)} new pods exist and none is ready: the first replica was not awaited"
        )

    with PodWatch(namespace, control_plane.admin_kubeconfig, check=first_replica_first) as watched:
        git_remote.commit_and_push("worker 2", worker(2, 3, recreate(), 1))
        synced(gitdeploy, git_remote)
    assert not watched.failures, watched.failures
    assert {1, 3} <= new_pods_seen, f"the watch missed the scale-up: {sorted(new_pods_seen)}"
    assert running_images(control_plane, namespace) == {"registry.test/worker:2"}
