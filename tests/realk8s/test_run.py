"""``gitdeploy run`` on the real control plane as deploy/'s ServiceAccount: leader election between
two processes on the Lease that deploy/leader-election.yaml allows (a new leader whose git is
behind, which leaves the apps as they run; an old leader paused past its Lease, which writes
nothing and says nothing untrue once resumed), and the periodic resync, which under the namespaced
Role lists only the namespaces gitdeploy was given and undoes a hand change.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import GITDEPLOY_NAMESPACE, ControlPlane, audit_events, audit_log_size
from tests.realk8s.gitdeploy_cli import ManagedNamespace, Run, at_revision, view, wait_for
from tests.realk8s.manifests import deployment, settings
from tests.realk8s.sharding import writers

pytestmark = pytest.mark.usefixtures("isolated_git_config")

FAST_LEASE = ["--lease-duration", "3s", "--renew-deadline", "2s", "--retry-period", "0.3s"]


def test_two_runs_one_leader_the_standby_takes_over_when_it_is_killed(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
) -> None:
    namespace = managed_namespace("leader")
    git_remote.commit_and_push(
        "web 1",
        {"gitdeploy.yaml": settings(namespace), "apps/web.yaml": deployment("web", "registry.test/web:1", 2)},
    )
    common = [
        "--repo",
        git_remote.url,
        "-n",
        namespace,
        "--interval",
        "1s",
        "--lease-namespace",
        GITDEPLOY_NAMESPACE,
    ]
    first, second = runs("a", *common, *FAST_LEASE), runs("b", *common, *FAST_LEASE)
    wait_for("revision 1 deployed by the leader", at_revision(gitdeploy, namespace, 1))
    wait_for("one leader", lambda: first.leads() or second.leads())
    leader, standby = (first, second) if first.leads() else (second, first)
    assert not standby.leads(), "two processes lead at once"

    leader.process.send_signal(signal.SIGKILL)
    leader.process.wait(timeout=30)
    git_remote.commit_and_push("web 2", {"apps/web.yaml": deployment("web", "registry.test/web:2", 2)})
    wait_for("the standby to take over", standby.leads)
    wait_for("revision 2 deployed by the new leader", at_revision(gitdeploy, namespace, 2))
    lease: Any = control_plane.get_json("lease", "gitdeploy", "-n", GITDEPLOY_NAMESPACE)
    assert lease["spec"]["holderIdentity"]
    assert "forbidden" not in standby.log.lower(), standby.log


def test_the_resync_runs_under_the_namespaced_role_and_undoes_a_hand_scale(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
) -> None:
    namespace = managed_namespace("resync")
    git_remote.commit_and_push(
        "web 1",
        {"gitdeploy.yaml": settings(namespace), "apps/web.yaml": deployment("web", "registry.test/web:1", 2)},
    )
    run = runs(
        "resync", "--repo", git_remote.url, "-n", namespace, "--interval", "1s", "--resync-interval", "3s",
        "--no-leader-elect",
    )  # fmt: skip
    wait_for("revision 1", at_revision(gitdeploy, namespace, 1))
    replica_sets: Any = control_plane.get_json("replicasets", "-n", namespace)
    [name] = [rs["metadata"]["name"] for rs in replica_sets["items"]]
    control_plane.kubectl("scale", "replicaset", name, "-n", namespace, "--replicas", "0")

    def restored() -> bool:
        found: Any = control_plane.get_json("replicaset", name, "-n", namespace)
        return bool(found["spec"]["replicas"] == 2 and found["status"].get("readyReplicas") == 2)

    wait_for("gitdeploy to undo the hand scale", restored, timeout=90)
    assert "cannot list" not in run.log and "forbidden" not in run.log.lower(), run.log


def test_a_new_leader_whose_git_is_behind_leaves_the_apps_as_they_run(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
    tmp_path: Path,
) -> None:
    """A standby cut off from git takes over after the leader rolled out a commit it never
    fetched: it neither rolls web back to its older head nor prunes api, which that head lacks."""
    namespace = managed_namespace("behind")
    v1 = git_remote.commit_and_push(
        "web 1",
        {
            "gitdeploy.yaml": settings(namespace, prune=True),
            "apps/web.yaml": deployment("web", "registry.test/web:1", 2),
        },
    )
    common = ["-n", namespace, "--interval", "1s", "--lease-namespace", GITDEPLOY_NAMESPACE, *FAST_LEASE]
    first = runs("a", "--repo", git_remote.url, *common)
    wait_for("revision 1 deployed by the leader", at_revision(gitdeploy, namespace, 1))
    wait_for("a to lead", first.leads)
    its_view = tmp_path / "b-view.git"  # the same repository by another path: a mirror of its own
    its_view.symlink_to(git_remote.bare)
    second = runs("b", "--repo", str(its_view), *common)
    wait_for("b at v1", lambda: f"moved: (none) -> {v1[:12]}" in second.log)
    its_view.unlink()
    git_remote.commit_and_push(
        "web 2, api 1",
        {
            "apps/web.yaml": deployment("web", "registry.test/web:2", 2),
            "apps/api.yaml": deployment("api", "registry.test/api:1", 1),
        },
    )
    wait_for("web 2 and api 1", lambda: healthy_at(gitdeploy, namespace, {"web": 2, "api": 1}))

    # When the leader is killed and b takes over, still unable to reach git
    first.process.send_signal(signal.SIGKILL)
    first.process.wait(timeout=30)
    start = audit_log_size(control_plane)
    wait_for("b to take over", second.leads)
    wait_for("10 renewals of the Lease by b", lambda: renewals(control_plane, start) >= 10)

    # Then nobody wrote a record or a ReplicaSet of the namespace, both apps run as before, and b
    # says why it leaves them
    assert writers(control_plane, namespace, start) == {}
    assert healthy_at(gitdeploy, namespace, {"web": 2, "api": 1})
    for app in ("web", "api"):
        assert f"[{namespace}/{app}] waits: its record names commit" in second.log, second.log

    # When git is back, b deploys the next commit
    its_view.symlink_to(git_remote.bare)
    git_remote.commit_and_push("web 3", {"apps/web.yaml": deployment("web", "registry.test/web:3", 2)})
    wait_for("web 3, api kept", lambda: healthy_at(gitdeploy, namespace, {"web": 3, "api": 1}))
    assert "forbidden" not in second.log.lower(), second.log


def test_a_leader_paused_past_its_lease_writes_nothing_and_says_nothing_untrue_once_resumed(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
) -> None:
    """The leader is frozen (SIGSTOP) in the middle of a rollout; the standby takes over and rolls
    the next commit out; the old leader resumes with its old view in memory."""
    namespace = managed_namespace("paused")
    git_remote.commit_and_push(
        "web 1",
        {"gitdeploy.yaml": settings(namespace), "apps/web.yaml": deployment("web", "registry.test/web:1", 4)},
    )
    common = ["-n", namespace, "--interval", "1s", "--lease-namespace", GITDEPLOY_NAMESPACE, *FAST_LEASE]
    first = runs("a", "--repo", git_remote.url, *common)
    wait_for("revision 1 deployed by a", at_revision(gitdeploy, namespace, 1))
    wait_for("a to lead", first.leads)
    second = runs("b", "--repo", git_remote.url, *common)
    wait_for("b to stand by", lambda: "standby: leader is" in second.log)
    git_remote.commit_and_push("web 2", {"apps/web.yaml": deployment("web", "registry.test/web:2", 4)})
    wait_for(
        "revision 2 under way", lambda: bool((found := view(gitdeploy, namespace)) and found["revision"] == 2)
    )

    # When a is frozen past its Lease, and b takes over and rolls out web 3
    first.process.send_signal(signal.SIGSTOP)
    try:
        git_remote.commit_and_push("web 3", {"apps/web.yaml": deployment("web", "registry.test/web:3", 4)})
        wait_for("b to take over", second.leads)
        wait_for("revision 3 deployed by b", at_revision(gitdeploy, namespace, 3), timeout=120)
        start = audit_log_size(control_plane)
    finally:
        first.process.send_signal(signal.SIGCONT)

    # Then, resumed, a stands by, writes nothing of the namespace through 10 renewals by b, and
    # takes none of b's changes, which its watches heard, for changes by hand
    wait_for("a to stand by", lambda: "standby: leader is" in first.log)
    wait_for("10 renewals of the Lease by b", lambda: renewals(control_plane, start) >= 10)
    assert writers(control_plane, namespace, start) == {}
    assert at_revision(gitdeploy, namespace, 3)()
    assert "changed by hand" not in first.log, first.log
    assert first.process.poll() is None and "forbidden" not in first.log.lower(), first.log


def healthy_at(gitdeploy: RunCli, namespace: str, revisions: dict[str, int]) -> bool:
    """Each app of ``revisions`` Synced and Healthy at its revision."""
    for app, revision in revisions.items():
        found = view(gitdeploy, namespace, app)
        if not found or (found["revision"], found["sync"], found["health"]) != (
            revision,
            "Synced",
            "Healthy",
        ):
            return False
    return True


def renewals(plane: ControlPlane, start: int) -> int:
    """Updates of the leader Lease since byte ``start`` of the audit log."""
    events: list[Any] = audit_events(plane, start)
    return sum(
        1
        for e in events
        if e["verb"] == "update"
        and (e.get("objectRef") or {}).get("resource") == "leases"
        and (e.get("objectRef") or {}).get("name") == "gitdeploy"
    )
