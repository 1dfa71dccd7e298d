"""Apps with no rollout in progress (:mod:`gitdeploy.core.rollout.settled`): a settled app needs
nothing but its annotations kept fresh; a paused, manual or failed (held) one is only scaled.

Each test builds what the cluster would hold (ReplicaSets with gitdeploy's annotations, hook and
deployer pods, the app record) with tests/fixtures/rolloutpass.py, calls :func:`plan_pass` once and
checks the exact step.
"""

from __future__ import annotations

import pytest

from gitdeploy.core.canarysteps import CanaryParams
from gitdeploy.core.history.records import AppRecord, Outcome
from gitdeploy.core.models import RecreateParams, Strategy, StrategyType
from gitdeploy.core.rollout import AppPhase, CreateReplicaSet, PatchReplicaSet, Step, plan_pass
from gitdeploy.core.scaling.progress import ConditionReason, ConditionType
from gitdeploy.core.scaling.replicasets import DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION
from tests.fixtures.rolloutpass import (
    CUSTOM,
    HOOK_PRE,
    RECREATE,
    ROLLING,
    T0,
    V1,
    V2,
    entry,
    make_app,
    make_target,
    pod,
    rs,
    scaled,
    snap,
)

# -- settled -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "max_replicas"),
    [(ROLLING, 4), (RECREATE, 3), (CUSTOM, 3)],
    ids=["RollingUpdate", "Recreate", "Custom"],
)
def test_an_unchanged_complete_app_needs_nothing(strategy: Strategy, max_replicas: int) -> None:
    app = make_app(V1, strategy=strategy)
    current = rs(V1, 1, 3, max_replicas=max_replicas)
    step = plan_pass(make_target(app), snap(current, record=AppRecord(revisions=(entry(V1, 1),))), T0 + 50)
    assert step == Step(
        phase=AppPhase.COMPLETE,
        message="revision 1 complete",
        revision=1,
        status=step.status,
        requeue_after=None,
    )


def test_settled_app_refreshes_stale_replica_annotations_without_scaling() -> None:
    current = rs(V1, 1, 3, desired=3, max_replicas=5)  # max-replicas from an older maxSurge
    step = plan_pass(make_target(make_app(V1)), snap(current), T0)
    assert step.actions == (
        PatchReplicaSet(
            current.name, None, ((DESIRED_REPLICAS_ANNOTATION, "3"), (MAX_REPLICAS_ANNOTATION, "4"))
        ),
    )
    assert (step.phase, step.requeue_after, step.events) == (AppPhase.COMPLETE, None, ())


# -- paused and manual apps --------------------------------------------------------------------------


def test_a_paused_app_starts_no_rollout() -> None:
    current = rs(V1, 1, 3)
    step = plan_pass(make_target(make_app(V2, paused=True)), snap(current), T0)
    assert (step.phase, step.actions, step.events, step.record, step.requeue_after) == (
        AppPhase.PAUSED,
        (),
        (),
        None,
        None,
    )
    assert step.message == "paused: no rollout progresses until `paused` is removed"
    assert step.revision == 1
    progressing = step.status.condition(ConditionType.PROGRESSING)
    assert progressing is not None and progressing.reason == ConditionReason.DEPLOYMENT_PAUSED


def test_a_paused_app_still_scales() -> None:
    current = rs(V1, 1, 3)
    step = plan_pass(make_target(make_app(V2, replicas=5, paused=True)), snap(current), T0)
    assert step.actions == (scaled(current.name, 5, 5, 7, T0),)
    assert (step.phase, step.requeue_after) == (AppPhase.PAUSED, None)
    assert not any(isinstance(a, CreateReplicaSet) for a in step.actions)


def test_a_paused_rollout_in_flight_stays_where_it_is() -> None:
    old, new = rs(V1, 1, 2), rs(V2, 2, 2, phase="Running")
    step = plan_pass(make_target(make_app(V2, paused=True)), snap(old, new), T0)
    assert (step.phase, step.actions, step.revision) == (AppPhase.PAUSED, (), 2)


def test_without_a_config_change_trigger_a_new_template_waits() -> None:
    current = rs(V1, 1, 3)
    step = plan_pass(make_target(make_app(V2), auto_start=False), snap(current), T0)
    assert (step.phase, step.actions, step.events, step.record, step.requeue_after) == (
        AppPhase.WAITING,
        (),
        (),
        None,
        None,
    )
    assert step.message == (
        "the template changed but the app has no ConfigChange trigger: "
        "run `gitdeploy deploy demo/web` to roll it out"
    )


def test_without_a_config_change_trigger_scaling_still_applies() -> None:
    current = rs(V1, 1, 3)
    step = plan_pass(make_target(make_app(V2, replicas=4), auto_start=False), snap(current), T0)
    assert step.actions == (scaled(current.name, 4, 4, 5, T0),)
    assert step.phase == AppPhase.WAITING


def test_without_a_config_change_trigger_a_started_rollout_goes_on() -> None:
    old, new = rs(V1, 1, 3), rs(V2, 2, 1, phase="Running")
    step = plan_pass(make_target(make_app(V2), auto_start=False), snap(old, new), T0)
    assert step.phase == AppPhase.PROGRESSING
    assert step.actions == (scaled(old.name, 2, 3, 4, T0), scaled(new.name, 2, 3, 4, T0))


# -- failed and held ---------------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ["HookFailed", "DeployerFailed"])
def test_a_revision_failed_by_a_hook_or_deployer_is_held(reason: str) -> None:
    app = make_app(V2, strategy=Strategy(StrategyType.RECREATE, recreate=RecreateParams(pre=HOOK_PRE)))
    old = rs(V1, 1, 3, max_replicas=3)
    new = rs(V2, 2, 0, phase="Failed", max_replicas=3)
    pods = (pod(new, "hook-pre", "Failed", finished_at=T0 + 5, exit_code=1),)
    record = AppRecord(
        revisions=(entry(V1, 1), entry(V2, 2, Outcome.FAILED, reason=reason, message="exit 1"))
    )
    for now in (T0 + 10, T0 + 10_000):
        step = plan_pass(make_target(app), snap(old, new, pods=pods, record=record), now)
        assert (step.phase, step.message) == (AppPhase.FAILED, "revision 2 failed: exit 1")
        assert (step.actions, step.events, step.record, step.requeue_after) == ((), (), None, None)


def test_a_held_failed_revision_still_scales() -> None:
    old = rs(V1, 1, 3, max_replicas=3)
    new = rs(V2, 2, 0, phase="Failed", max_replicas=3)
    record = AppRecord(revisions=(entry(V1, 1), entry(V2, 2, Outcome.FAILED, reason="HookFailed")))
    step = plan_pass(
        make_target(make_app(V2, replicas=5, strategy=RECREATE)), snap(old, new, record=record), T0
    )
    assert step.actions == (scaled(old.name, 5, 5, 5, T0),)
    assert (step.phase, step.record) == (AppPhase.FAILED, None)


def test_a_settled_canary_repairs_drift_within_its_bounds() -> None:
    """A canary ends as a rolling update, and its drift is repaired as one: in its maxSurge 1 and
    maxUnavailable 0 (not the old ReplicaSet to 0 and the new one to full in one step)."""
    app = make_app(
        V2,
        replicas=4,
        strategy=Strategy(StrategyType.CANARY, canary=CanaryParams(max_surge=1, max_unavailable=0)),
    )
    new = rs(V2, 2, 2, desired=4, max_replicas=5)  # scaled down by hand from 4
    old = rs(V1, 1, 2, desired=4, max_replicas=5)  # scaled up by hand from 0
    record = AppRecord(revisions=(entry(V1, 1), entry(V2, 2)))
    step = plan_pass(make_target(app), snap(old, new, record=record), T0 + 50)
    scales = {
        a.name: a.replicas for a in step.actions if isinstance(a, PatchReplicaSet) and a.replicas is not None
    }
    assert scales == {new.name: 3}  # 5 pods at most; the old ones go as new ones become available
