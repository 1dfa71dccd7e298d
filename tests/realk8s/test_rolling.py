"""Seed 002's rolling update on the real control plane, with the bounds checked from a pod watch.

Given an app of 4 replicas at maxSurge 25% / maxUnavailable 25% running on kube-apiserver,
kube-controller-manager's ReplicaSet controller and kwok, whose pods take 2 s to stop,
When a commit changes its image and gitdeploy (as deploy/'s ServiceAccount) syncs,
Then at no moment do more than 5 pods count nor fewer than 3 ready, non-terminating pods serve; the
rollout ends with 4 new ready pods and no old one, and ``status`` and ``history`` say so.

Which pods count against maxSurge is the app's ``podReplacementPolicy`` (Kubernetes KEP-5882): by
default (``TerminationStarted``, the Deployment controller's behaviour) the bound is on the pods the
ReplicaSets ask for, checked from a watch of ReplicaSets (their pods come and go a moment later, in
the order the ReplicaSet controller gets to them, so a new pod may start just before an old one is
deleted, with the Deployment controller too); with ``TerminationComplete`` on every pod until it is
gone, Terminating ones included, checked from the pod watch.
"""

from __future__ import annotations

import json

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.gitdeploy_cli import ManagedNamespace, history, synced
from tests.realk8s.manifests import deployment, settings
from tests.realk8s.podwatch import PodState, PodWatch, ReplicaSetWatch

pytestmark = pytest.mark.usefixtures("isolated_git_config")

ROLLING = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}


@pytest.mark.parametrize("policy", ["TerminationStarted", "TerminationComplete"])
def test_rolling_update_keeps_surge_and_availability_on_a_real_cluster(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    policy: str,
) -> None:
    def web(image: str) -> str:
        return deployment("web", image, 4, ROLLING, grace=2, podReplacementPolicy=policy)

    namespace = managed_namespace("rolling")
    git_remote.commit_and_push(
        "web 1.0", {"gitdeploy.yaml": settings(namespace), "apps/web.yaml": web("registry.test/web:1.0")}
    )
    synced(gitdeploy, git_remote)
    counts_terminating = policy == "TerminationComplete"

    def bounds(pods: dict[str, PodState]) -> None:
        app = [p for p in pods.values() if p.labels.get("app") == "web"]
        if counts_terminating:  # every pod until it is gone
            assert len(app) <= 5, f"{len(app)} pods exist, maxSurge allows 5 ({policy})"
        serving = [p for p in app if p.ready and not p.terminating]
        assert len(serving) >= 3, f"only {len(serving)} ready pods, maxUnavailable allows 3"

    def asked(replica_sets: dict[str, int]) -> None:  # what the Deployment controller bounds
        assert sum(replica_sets.values()) <= 5, f"{replica_sets} ask for more than maxSurge's 5 pods"

    admin = control_plane.admin_kubeconfig
    watches = PodWatch(namespace, admin, check=bounds), ReplicaSetWatch(namespace, admin, check=asked)
    with watches[0] as pods, watches[1] as rs:
        git_remote.commit_and_push("web 1.1", {"apps/web.yaml": web("registry.test/web:1.1")})
        synced(gitdeploy, git_remote)
    assert not pods.failures, pods.failures
    assert not rs.failures and rs.events >= 4, (rs.failures, rs.events)
    assert pods.events > 8, "the watch saw the rollout"

    replica_sets = control_plane.get_json("replicasets", "-n", namespace)["items"]
    by_image = {rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs for rs in replica_sets}  # type: ignore[attr-defined]
    assert by_image["registry.test/web:1.1"]["status"].get("readyReplicas") == 4
    assert by_image["registry.test/web:1.0"]["spec"]["replicas"] == 0

    # the rollout's story is on an object that exists: kubectl describe of the app record tells it
    described = control_plane.kubectl("describe", "configmap", "gitdeploy.web", "-n", namespace).stdout
    assert "ScalingReplicaSet" in described and "RolloutComplete" in described, described

    status = gitdeploy("status", "-n", namespace, "-o", "json")
    assert status.returncode == 0, status.stderr
    [view] = json.loads(status.stdout)
    assert (view["key"], view["revision"], view["sync"], view["health"]) == (
        f"{namespace}/web",
        2,
        "Synced",
        "Healthy",
    )
    assert [
        (r["revision"], r["outcome"], r["commit"]["subject"]) for r in history(gitdeploy, f"{namespace}/web")
    ] == [
        (1, "Complete", "web 1.0"),
        (2, "Complete", "web 1.1"),
    ]
