"""``gitdeploy run`` on the real control plane as deploy/'s ServiceAccount: leader election between
two processes on the Lease that deploy/leader-election.yaml allows, and the periodic resync, which
under the namespaced Role lists only the namespaces gitdeploy was given and undoes a hand change.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import GITDEPLOY_NAMESPACE, ControlPlane
from tests.realk8s.gitdeploy_cli import ManagedNamespace, Run, at_revision, wait_for
from tests.realk8s.manifests import deployment, settings

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
