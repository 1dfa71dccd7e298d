"""A canary (an Argo Rollouts ``Rollout``) on the real control plane, as deploy/'s ServiceAccount
in a restricted namespace, with no Argo Rollouts CRDs installed: a commit changing the image walks
the canary to its ``setWeight: 50`` and waits at its ``pause: {}`` (2 canary pods beside 2 stable
ones, the ReplicaSets never asking for more than replicas + maxSurge), ``gitdeploy rollout promote``
ends it at full size, and ``gitdeploy rollout abort`` of the next one brings the stable back. An
``analysis`` step whose metric a real Prometheus fails aborts its canary by itself."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.prometheus import RunningPrometheus
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.gitdeploy_cli import ManagedNamespace, synced, view, wait_for
from tests.realk8s.manifests import rollout, settings
from tests.realk8s.observed import canary_within_surge, replica_sets_by_tag
from tests.realk8s.podwatch import ReplicaSetWatch

pytestmark = pytest.mark.usefixtures("isolated_git_config")

STEPS: list[dict[str, Any]] = [{"setWeight": 50}, {"pause": {}}, {"setWeight": 75}]


def test_a_canary_waits_at_its_pause_then_promote_ends_it_and_abort_undoes_the_next(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
) -> None:
    namespace = managed_namespace("canary")

    def push(version: str) -> None:
        web = rollout("web", f"registry.test/web:{version}", 4, STEPS, grace=1)
        git_remote.commit_and_push(
            f"web {version}", {"gitdeploy.yaml": settings(namespace), "apps/web.yaml": web}
        )

    def sizes() -> dict[str, int]:
        return replica_sets_by_tag(control_plane, namespace)

    def after_a_pass(check: Callable[[], bool]) -> Callable[[], bool]:
        def passed() -> bool:
            gitdeploy("sync", "--repo", git_remote.url, timeout=120)  # exit 1 while Suspended or Failed
            return check()

        return passed

    def waiting_for_promote() -> bool:
        shown = view(gitdeploy, namespace)
        return shown is not None and "waiting for" in shown["message"]

    def asked(replica_sets: dict[str, int]) -> None:
        assert sum(replica_sets.values()) <= 5, f"{replica_sets} ask for more than replicas + maxSurge"

    # Given web's first revision at full size at once
    push("1")
    synced(gitdeploy, git_remote, timeout="90s")
    assert sizes() == {"1": 4}

    with ReplicaSetWatch(namespace, control_plane.admin_kubeconfig, check=asked) as watched:
        # When a commit changes the image: the canary walks to 50% and waits for promote
        push("2")
        wait_for("the canary at its pause", after_a_pass(waiting_for_promote), timeout=180)
        assert sizes() == {"1": 2, "2": 2}
        shown = view(gitdeploy, namespace)
        assert shown is not None and shown["health"] == "Suspended", shown
        # and status says where, read from the cluster: the step, and that it waits for promote
        assert shown["canary"].startswith("revision 2: step 2/3, paused (waiting for promote)"), shown
        waited = gitdeploy("rollout", "status", "web", "-n", namespace, "--timeout", "2s")
        assert waited.returncode == 1 and "step 2/3, paused (waiting for promote)" in waited.stdout

        # When someone promotes it, every remaining step
        done = gitdeploy("rollout", "promote", "web", "-n", namespace, "--full")
        assert done.returncode == 0, done.stdout + done.stderr
        synced(gitdeploy, git_remote, timeout="120s")

        # Then it is the stable at full size, revision 2 Synced Healthy
        assert sizes() == {"1": 0, "2": 4}
        shown = view(gitdeploy, namespace)
        assert shown is not None and (shown["revision"], shown["sync"], shown["health"]) == (
            2,
            "Synced",
            "Healthy",
        ), shown

        history = gitdeploy("history", "web", "-n", namespace, "-o", "json")
        assert "promoted all steps by" in history.stdout, history.stdout

        # When the next canary waits at its pause and is aborted
        push("3")
        wait_for("the next canary at its pause", after_a_pass(waiting_for_promote), timeout=180)
        assert sizes() == {"1": 0, "2": 2, "3": 2}
        done = gitdeploy("rollout", "abort", "web", "-n", namespace)
        assert done.returncode == 0, done.stdout + done.stderr
        back = {"1": 0, "2": 4, "3": 0}
        wait_for("the stable back", after_a_pass(lambda: sizes() == back), timeout=120)

    # Then the stable is back at full size, the canary at 0, and the bounds held throughout
    assert sizes() == {"1": 0, "2": 4, "3": 0}
    assert not watched.failures and watched.events >= 6, (watched.failures, watched.events)


GAUGE = "realk8s_checkout_success_rate"
ANALYSIS_STEPS: list[dict[str, Any]] = [
    {"setWeight": 50},
    {"analysis": {"templates": [{"templateName": "success-rate"}]}},
]


def success_rate(namespace: str, address: str) -> str:
    """An AnalysisTemplate measuring the gauge once: at least 0.95 passes."""
    metric = {
        "name": "success-rate",
        "successCondition": "result[0] >= 0.95",
        "provider": {"prometheus": {"address": address, "query": f'{GAUGE}{{job="exporter"}}'}},
    }
    body = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisTemplate",
        "metadata": {"name": "success-rate", "namespace": namespace},
        "spec": {"metrics": [metric]},
    }
    return json.dumps(body, indent=1) + "\n"


def test_a_failed_analysis_aborts_the_canary_by_itself(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    prometheus: RunningPrometheus,
) -> None:
    namespace = managed_namespace("analysis")
    prometheus.expose(GAUGE, 0.42)

    def push(version: str) -> None:
        files = {
            "gitdeploy.yaml": settings(namespace),
            "apps/web.yaml": rollout("web", f"registry.test/web:{version}", 2, ANALYSIS_STEPS, grace=1),
            "apps/analysis.yaml": success_rate(namespace, prometheus.url),
        }
        git_remote.commit_and_push(f"web {version}", files)

    def aborted() -> bool:
        gitdeploy("sync", "--repo", git_remote.url, timeout=120)  # exit 1 once the revision failed
        last = json.loads(gitdeploy("history", "web", "-n", namespace, "-o", "json").stdout)[-1]
        return bool(last["revision"] == 2 and last["outcome"] == "Failed")

    # Given web's first revision at full size, and a success rate of 0.42 in Prometheus
    push("1")
    synced(gitdeploy, git_remote, timeout="90s")
    # When a commit starts a canary whose analysis step measures it
    push("2")
    with ReplicaSetWatch(namespace, control_plane.admin_kubeconfig, check=canary_within_surge) as watched:
        wait_for("the analysis to abort the canary", aborted, timeout=180)
    # Then the revision failed by itself, naming the metric and what it measured
    last = json.loads(gitdeploy("history", "web", "-n", namespace, "-o", "json").stdout)[-1]
    assert "aborted by analysis success-rate" in last["message"] and "[0.42]" in last["message"], last
    wait_for(
        "the stable back",
        lambda: replica_sets_by_tag(control_plane, namespace) == {"1": 2, "2": 0},
        timeout=60,
    )
    assert not watched.failures
