"""The Custom strategy: a deployer pod of the user's performs the rollout; gitdeploy watches it.

The embedded cluster cannot run a deployer image; it stands in for one: when a deployer pod ends
successfully, the ReplicaSet it names has been scaled to the app's size and the others to 0.
"""

from __future__ import annotations

from typing import Any

from gitdeploy.core.history.records import Outcome
from gitdeploy.core.rollout import AppPhase
from tests.fixtures.rolloutapps import reports
from tests.fixtures.rollouts import World, commit, load_app


def test_custom_strategy_succeeds_when_the_deployer_exits_0_and_the_replica_set_is_available(
    world: World,
) -> None:
    v1 = load_app(reports())
    world.roll(v1, commit("v1", 1))
    pod: Any = world.core.read_namespaced_pod(f"reports-{v1.template_hash}-deploy", "batch")
    container = pod.spec.containers[0]
    env = {e.name: e.value for e in container.env}
    assert env == {
        "GITDEPLOY_DEPLOYMENT_NAME": f"reports-{v1.template_hash}",
        "GITDEPLOY_DEPLOYMENT_NAMESPACE": "batch",
        "OPENSHIFT_DEPLOYMENT_NAME": f"reports-{v1.template_hash}",
        "OPENSHIFT_DEPLOYMENT_NAMESPACE": "batch",
        "CANARY_PERCENT": "10",
    }
    assert (container.image, container.command, container.resources.requests) == (
        "example/custom-deployer:1.0",
        ["/bin/deploy", "--canary-first"],
        {"cpu": "100m"},
    )
    assert pod.spec.restart_policy == "Never"

    v2 = load_app(reports("example/reports:3.2"))
    world.roll(v2, commit("v2", 2))
    record = world.record(v2)
    assert [(e.revision, e.outcome) for e in record.revisions] == [
        (1, Outcome.COMPLETE),
        (2, Outcome.COMPLETE),
    ]
    assert [(h.phase, h.outcome) for h in record.revisions[1].hooks] == [("deployer", "Succeeded")]
    assert world.replica_sets(v2) == {f"reports-{v1.template_hash}": 0, f"reports-{v2.template_hash}": 2}


def test_custom_strategy_fails_when_the_deployer_fails(world: World) -> None:
    v1 = load_app(reports())
    world.roll(v1, commit("v1", 1))
    world.set_crashing_images("example/custom-deployer:broken")
    v2 = load_app(reports("example/reports:3.2", deployer="example/custom-deployer:broken"))
    world.roll(v2, commit("v2", 2), until=lambda step: step.phase == AppPhase.FAILED)
    entry = world.record(v2).entry(2)
    assert entry is not None and (entry.outcome, entry.reason) == (Outcome.FAILED, "DeployerFailed")
    assert "exit code 1" in entry.message
    assert "error: process exited with code 1" in entry.hooks[0].log


def test_custom_strategy_fails_when_the_deployer_exits_0_but_nothing_becomes_available(world: World) -> None:
    v1 = load_app(reports())
    world.roll(v1, commit("v1", 1))
    # Given a deployer that exits 0 but a new version whose pods never become ready
    lazy = load_app(reports("example/reports:unready"))
    world.roll(lazy, commit("v2", 2), until=lambda step: step.phase == AppPhase.FAILED, tick=10.0)
    entry = world.record(lazy).entry(2)
    assert entry is not None and entry.reason == "ProgressDeadlineExceeded"
    assert "exited 0" in entry.message
