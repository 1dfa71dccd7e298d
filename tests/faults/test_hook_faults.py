"""Hung hook and deployer pods: stopped at their deadline, never outliving their rollout.

Images ending in ``:hang`` never end by themselves in the embedded cluster (a hung migration, a
deployer stuck on a lock); the simulated kubelet stops any pod at its ``activeDeadlineSeconds``.
"""

from __future__ import annotations

from typing import Any

import pytest

from gitdeploy.core.history.records import Outcome
from gitdeploy.core.models import App
from gitdeploy.core.rollout import AppPhase, Step
from tests.fixtures.rolloutapps import reports, worker
from tests.fixtures.rollouts import World, commit, load_app

HOOK_DEADLINE = 120  # the worker's recreateParams.timeoutSeconds


def failed(step: Step) -> bool:
    return step.phase == AppPhase.FAILED


def running_pods(world: World, app: App, role_prefix: str) -> list[str]:
    """Hook or deployer pods of ``app`` not yet ended nor deleted (a deleted pod is Terminating:
    stopping for its grace period)."""
    return [
        p.name
        for p in world.adapter.list_app_pods(app.namespace, app.name)
        if p.role.startswith(role_prefix) and not p.terminal and not p.deleting
    ]


def pod_spec(world: World, app: App, name: str) -> Any:
    return world.core.read_namespaced_pod(name, app.namespace).spec


@pytest.mark.parametrize(
    ("policy", "outcome"),
    [("Abort", Outcome.FAILED), ("Retry", Outcome.FAILED), ("Ignore", Outcome.COMPLETE)],
)
def test_a_hung_hook_is_stopped_at_its_deadline_then_its_failure_policy_applies(
    world: World, policy: str, outcome: Outcome
) -> None:
    v1 = load_app(worker())
    world.roll(v1, commit("v1", 1))
    # Given revision 2 whose hooks hang (the hook pods run the app's image)
    v2 = load_app(worker("example/worker:hang", pre_policy=policy, mid_policy=policy))
    new = f"worker-{v2.template_hash}"
    world.roll(v2, commit("v2", 2), until=lambda step: "pre hook running" in step.message)
    assert pod_spec(world, v2, f"{new}-hook-pre").active_deadline_seconds == HOOK_DEADLINE
    # When the rollout goes on (Ignore: the hung hooks are passed over one after the other)
    steps = world.roll(v2, commit("v2", 2), until=failed if outcome is Outcome.FAILED else None)
    # Then the hook was stopped at its deadline and its policy decided
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.outcome is outcome
    pre = next(h for h in entry.hooks if h.phase == "pre")
    assert (pre.outcome, pre.attempts) == ("Ignored" if policy == "Ignore" else "Failed", 1)
    if outcome is Outcome.FAILED:
        assert entry.reason == "HookFailed"
        assert f"the pre hook did not finish within its deadline ({HOOK_DEADLINE} s)" in entry.message
        assert world.replica_sets(v2) == {f"worker-{v1.template_hash}": 2, new: 0}
        assert "killed" in pre.log  # its log tail is kept
    else:
        assert world.replica_sets(v2) == {f"worker-{v1.template_hash}": 0, new: 2}
    # and no hook pod is left running, nor outlives the rollout's end
    assert running_pods(world, v2, "hook-") == []
    assert steps[-1].requeue_after is None or outcome is Outcome.FAILED


def test_a_cancelled_rollout_leaves_no_hook_running(world: World) -> None:
    v1 = load_app(worker())
    world.roll(v1, commit("v1", 1))
    # Given revision 2's pre hook hanging
    v2 = load_app(worker("example/worker:hang"))
    world.roll(v2, commit("v2", 2), until=lambda step: "pre hook running" in step.message)
    world.clock.advance(30)
    assert running_pods(world, v2, "hook-") == [f"worker-{v2.template_hash}-hook-pre"]
    # When revision 3 supersedes it before its deadline
    v3 = load_app(worker("example/worker:3.0"))
    world.pass_once(v3, commit("v3", 3))
    # Then revision 2 is Cancelled and its hook pod deleted at once
    assert running_pods(world, v2, "hook-") == []
    entry = world.record(v3).entry(2)
    assert entry is not None and entry.outcome is Outcome.CANCELLED
    world.roll(v3, commit("v3", 3))
    assert world.record(v3).revisions[-1].outcome is Outcome.COMPLETE
    assert running_pods(world, v3, "hook-") == []


def test_a_hung_custom_deployer_is_stopped_when_the_rollout_fails_and_not_started_again(world: World) -> None:
    def manifest(image: str, deployer: str) -> str:
        text = reports(image, deployer).replace(
            "    resources:", "    activeDeadlineSeconds: 3000\n    resources:"
        )
        return text.replace("metadata: {name: reports, namespace: batch}", NO_AUTO_ROLLBACK)

    v1 = load_app(manifest("example/reports:3.1", "example/custom-deployer:1.0"))
    world.roll(v1, commit("v1", 1))
    # Given a deployer that hangs
    v2 = load_app(manifest("example/reports:3.2", "example/custom-deployer:hang"))
    deployer = f"reports-{v2.template_hash}-deploy"
    world.roll(v2, commit("v2", 2), until=lambda step: "deployer" in step.message)
    assert pod_spec(world, v2, deployer).active_deadline_seconds == 3000
    # When the rollout makes no progress for its deadline (600 s)
    world.roll(v2, commit("v2", 2), until=failed, tick=10.0)
    entry = world.record(v2).entry(2)
    assert entry is not None and (entry.outcome, entry.reason) == (Outcome.FAILED, "ProgressDeadlineExceeded")
    # Then the deployer is deleted, and later passes start no other one
    assert running_pods(world, v2, "deployer") == []
    for _ in range(5):
        world.clock.advance(10)
        assert world.pass_once(v2, commit("v2", 2)).phase == AppPhase.FAILED
    assert running_pods(world, v2, "deployer") == []
    assert world.replica_sets(v2) == {f"reports-{v1.template_hash}": 2, f"reports-{v2.template_hash}": 0}


NO_AUTO_ROLLBACK = (
    'metadata: {name: reports, namespace: batch, annotations: {"gitdeploy.io/auto-rollback": "false"}}'
)
