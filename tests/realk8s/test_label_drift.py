"""Hand edits of the labels of gitdeploy's ReplicaSet (issue 21, item 2) on the real control plane,
as deploy/'s ServiceAccount in a restricted namespace: ``kubectl label rs web-<hash>
gitdeploy.io/app-`` hides the running ReplicaSet from gitdeploy's label-selected lists. The next
pass (``gitdeploy sync``) finds it by name, puts the label back with a ``DriftCorrected`` event
naming it, makes no second ReplicaSet and no new revision, and ends ``Synced Healthy``. An old
ReplicaSet hidden so in the middle of a rollout is found the same way and scaled down.
"""

from __future__ import annotations

from typing import Any

import pytest

from gitdeploy.core.rollout.drift import DRIFT_CORRECTED
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import ControlPlane, audit_events
from tests.realk8s.gitdeploy_cli import ManagedNamespace, at_revision, synced, view
from tests.realk8s.manifests import deployment, settings
from tests.realk8s.observed import events, requests

pytestmark = pytest.mark.usefixtures("isolated_git_config")


def test_sync_finds_a_relabelled_replica_set_by_name_and_puts_its_label_back(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
) -> None:
    # Given web deployed at revision 1, in one ReplicaSet
    namespace = managed_namespace("labeldrift")
    git_remote.commit_and_push(
        "web 1",
        {
            "gitdeploy.yaml": settings(namespace),
            "apps/web.yaml": deployment("web", "registry.test/web:1", 2, grace=1),
        },
    )
    synced(gitdeploy, git_remote, timeout="90s")
    assert at_revision(gitdeploy, namespace, 1)()
    [name] = _replica_sets(control_plane, namespace)

    # When an admin removes its app label by hand, and a pass follows
    control_plane.kubectl("label", "replicaset", name, "-n", namespace, "gitdeploy.io/app-")
    creates_before = len(requests(audit_events(control_plane), namespace, "replicasets", "create"))
    synced(gitdeploy, git_remote)

    # Then the same ReplicaSet has its label back, no second one was tried, no new revision
    assert _replica_sets(control_plane, namespace) == {name: "web"}
    assert len(requests(audit_events(control_plane), namespace, "replicasets", "create")) == creates_before
    assert events(control_plane, namespace, DRIFT_CORRECTED) == [
        f"{name}: its labels were changed by hand (gitdeploy.io/app: removed); restored them"
    ]
    shown = view(gitdeploy, namespace)
    assert shown is not None
    assert (shown["revision"], shown["sync"], shown["health"]) == (1, "Synced", "Healthy"), shown


def test_an_old_replica_set_hidden_mid_rollout_is_relabelled_and_scaled_down(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
) -> None:
    # Given web at revision 1, then one pass of a rollout to web:2 (2 replicas, maxUnavailable 0:
    # the old ReplicaSet keeps its 2 pods while the first new one starts)
    namespace = managed_namespace("labeldrift-old")
    files = {"gitdeploy.yaml": settings(namespace)}
    git_remote.commit_and_push(
        "web 1", {**files, "apps/web.yaml": deployment("web", "registry.test/web:1", 2, grace=1)}
    )
    synced(gitdeploy, git_remote, timeout="90s")
    [old] = _replica_sets(control_plane, namespace)
    git_remote.commit_and_push(
        "web 2", {**files, "apps/web.yaml": deployment("web", "registry.test/web:2", 2, grace=1)}
    )
    started = gitdeploy("sync", "--repo", git_remote.url, timeout=120)
    assert len(_replica_sets(control_plane, namespace)) == 2, started.stdout + started.stderr

    # When an admin removes the old ReplicaSet's app label by hand, and the rollout goes on
    control_plane.kubectl("label", "replicaset", old, "-n", namespace, "gitdeploy.io/app-")
    synced(gitdeploy, git_remote, timeout="90s")

    # Then the old ReplicaSet has its label back and no pods asked of it, with an event saying so
    found: Any = control_plane.get_json("replicaset", old, "-n", namespace)
    assert (found["spec"]["replicas"], found["metadata"]["labels"].get("gitdeploy.io/app")) == (0, "web")
    assert events(control_plane, namespace, DRIFT_CORRECTED) == [
        f"{old}: its labels were changed by hand (gitdeploy.io/app: removed); restored them"
    ]
    shown = view(gitdeploy, namespace)
    assert shown is not None
    assert (shown["revision"], shown["sync"], shown["health"]) == (2, "Synced", "Healthy"), shown


def _replica_sets(control_plane: ControlPlane, namespace: str) -> dict[str, str]:
    """Every ReplicaSet of the namespace, whatever its labels: name → its gitdeploy.io/app label."""
    found: Any = control_plane.get_json("replicasets", "-n", namespace)
    return {
        rs["metadata"]["name"]: rs["metadata"].get("labels", {}).get("gitdeploy.io/app", "")
        for rs in found["items"]
    }
