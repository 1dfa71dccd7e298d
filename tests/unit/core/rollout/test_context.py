"""What a pass knows of the app's phase (:mod:`gitdeploy.core.rollout.context`): the record's
outcome wins over a ReplicaSet's phase annotation.

Each test builds what the cluster would hold (ReplicaSets with gitdeploy's annotations, hook and
deployer pods, the app record) with tests/fixtures/rolloutpass.py, calls :func:`plan_pass` once and
checks the exact step.
"""

from __future__ import annotations

from gitdeploy.core.history.records import AppRecord, Outcome
from gitdeploy.core.models import RecreateParams, Strategy, StrategyType
from gitdeploy.core.observed import PHASE_ANNOTATION
from gitdeploy.core.rollout import AppPhase, PatchReplicaSet, plan_pass
from tests.fixtures.rolloutpass import (
    HOOK_PRE,
    T0,
    V1,
    V2,
    V3,
    entry,
    make_app,
    make_target,
    rs,
    scaled,
    snap,
)

# -- the record wins over the annotation --------------------------------------------------------------


def test_a_recorded_outcome_wins_over_a_stale_phase_annotation() -> None:
    # crash after writing "Complete" to the record, before annotating the ReplicaSet
    old, new = rs(V1, 1, 0), rs(V2, 2, 3, phase="Running")
    record = AppRecord(revisions=(entry(V1, 1), entry(V2, 2)))
    step = plan_pass(make_target(make_app(V2)), snap(old, new, record=record), T0)
    assert step.actions == (PatchReplicaSet(new.name, None, ((PHASE_ANNOTATION, "Complete"),)),)
    assert (step.phase, step.record, step.events, step.requeue_after) == (AppPhase.COMPLETE, None, (), None)


def test_a_recorded_failure_wins_over_a_running_annotation() -> None:
    app = make_app(V2, strategy=Strategy(StrategyType.RECREATE, recreate=RecreateParams(pre=HOOK_PRE)))
    old, new = rs(V1, 1, 3, max_replicas=3), rs(V2, 2, 0, phase="Running", max_replicas=3)
    record = AppRecord(
        revisions=(entry(V1, 1), entry(V2, 2, Outcome.FAILED, reason="HookFailed", message="x"))
    )
    step = plan_pass(make_target(app), snap(old, new, record=record), T0)
    assert (step.phase, step.actions, step.record) == (AppPhase.FAILED, (), None)


def test_an_entry_for_another_template_does_not_decide_the_phase() -> None:
    # the record's revision 2 ran another template: the annotation (Running) decides, the rollout goes on
    old, new = rs(V1, 1, 3), rs(V2, 2, 1, phase="Running")
    record = AppRecord(revisions=(entry(V1, 1), entry(V3, 2, Outcome.FAILED, reason="HookFailed")))
    step = plan_pass(make_target(make_app(V2)), snap(old, new, record=record), T0)
    assert step.actions == (scaled(old.name, 2, 3, 4, T0), scaled(new.name, 2, 3, 4, T0))
    assert step.phase == AppPhase.PROGRESSING
