"""Outcomes (:mod:`gitdeploy.core.rollout.outcome`): automatic rollback to the last Complete revision,
the revision history limit, and what a failed rollback says.

Each test builds what the cluster would hold (ReplicaSets with gitdeploy's annotations, hook and
deployer pods, the app record) with tests/fixtures/rolloutpass.py, calls :func:`plan_pass` once and
checks the exact step.
"""

from __future__ import annotations

import pytest

from gitdeploy.core.history.records import AppRecord, Cause, CommitRef, Outcome, Pin
from gitdeploy.core.models import App, AppKind, RecreateParams, Strategy, StrategyType
from gitdeploy.core.observed import CAUSE_ANNOTATION, REVISION_ANNOTATION
from gitdeploy.core.rollout import (
    AppPhase,
    CreatePod,
    DeleteReplicaSet,
    Event,
    PatchReplicaSet,
    Target,
    plan_pass,
)
from gitdeploy.core.rollout.context import RolloutContext
from gitdeploy.core.rollout.strategies import STRATEGIES
from gitdeploy.core.scaling.rollingmath import RolloutBounds
from tests.fixtures.rolloutpass import (
    HOOK_MID,
    HOOK_PRE,
    T0,
    V1,
    V2,
    V3,
    entry,
    make_app,
    make_target,
    reasons,
    rs,
    rs_name,
    scaled,
    snap,
    stuck,
    thash,
    tmpl,
)


def test_auto_rollback_pins_the_last_complete_revision() -> None:
    app, old, new = stuck(auto_rollback=True)
    record = AppRecord(revisions=(entry(V1, 1),))
    target = make_target(app, manifest_digest="digest-2")
    step = plan_pass(target, snap(old, new, record=record), T0 + 61)
    message = "no progress for 60 s (0/3 new pods available)"
    assert step.record is not None
    assert step.record.pin == Pin(
        revision=1,
        template_hash=thash(V1),
        manifest_digest="digest-2",
        reason=f"revision 2 failed: {message}",
        cause=Cause.AUTO_ROLLBACK,
        rolled_back_from=2,
        by="gitdeploy (autoRollback)",
    )
    assert (step.phase, step.message, step.requeue_after) == (
        AppPhase.FAILED,
        f"revision 2 failed: {message}; rolling back to revision 1",
        0.0,
    )
    failed_entry = step.record.entry(2)
    assert failed_entry is not None and failed_entry.outcome is Outcome.FAILED


@pytest.mark.parametrize(
    ("record", "with_old", "suffix"),
    [
        (AppRecord(), True, "; no earlier Complete revision to roll back to"),
        (
            AppRecord(revisions=(entry(V1, 1, Outcome.FAILED),)),
            True,
            "; no earlier Complete revision to roll back to",
        ),
        (
            AppRecord(revisions=(entry(V1, 1),)),
            False,
            "; revision 1's ReplicaSet is gone: roll back with `gitdeploy rollback`",
        ),
    ],
    ids=["no history", "only failures", "its ReplicaSet was deleted"],
)
def test_auto_rollback_without_a_reusable_revision_only_explains(
    record: AppRecord, with_old: bool, suffix: str
) -> None:
    app, old, new = stuck(auto_rollback=True)
    # without the old ReplicaSet the new one was free to grow to full size (none available)
    replica_sets = (old, new) if with_old else (rs(V2, 2, 3, 3, 0, phase="Running", progressed_at=T0),)
    step = plan_pass(make_target(app), snap(*replica_sets, record=record), T0 + 61)
    assert step.record is not None and step.record.pin is None
    failed_entry = step.record.entry(2)
    assert failed_entry is not None and failed_entry.outcome is Outcome.FAILED
    assert step.message == f"revision 2 failed: no progress for 60 s (0/3 new pods available){suffix}"
    assert step.requeue_after is None


def test_the_rollback_revision_reuses_the_pinned_replica_set_and_says_why() -> None:
    app, _, _ = stuck(auto_rollback=True)
    old = rs(V1, 1, 3)
    failed = rs(V2, 2, 1, 1, 0, phase="Failed")
    pin = Pin(
        1,
        thash(V1),
        "digest-2",
        "revision 2 failed",
        Cause.AUTO_ROLLBACK,
        2,
        "gitdeploy (autoRollback)",
    )
    record = AppRecord(
        revisions=(entry(V1, 1), entry(V2, 2, Outcome.FAILED, reason="ProgressDeadlineExceeded")), pin=pin
    )
    target = Target(
        app=app,
        template=tmpl(V1),
        template_hash=thash(V1),
        commit=CommitRef(f"{1:040d}", "Ada", "commit 1"),
        cause=Cause.AUTO_ROLLBACK,
        change_cause="rollback to revision 1: revision 2 failed",
        manifest_digest="digest-2",
        pin=pin,
    )
    step = plan_pass(target, snap(old, failed, record=record), T0 + 62)
    assert reasons(step) == ["RolloutStarted", "DeploymentRollback", "ScalingReplicaSet"]
    assert step.events[1] == Event("DeploymentRollback", "Rolled back web to revision 1", warning=True)
    patch, cleanup = step.actions
    assert isinstance(patch, PatchReplicaSet) and patch.name == old.name
    assert dict(patch.annotations)[REVISION_ANNOTATION] == "3"
    assert dict(patch.annotations)[CAUSE_ANNOTATION] == "AutoRollback"
    # in the same step, as the Kubernetes controller's first sync: the failed revision's
    # unavailable pod goes
    assert cleanup == scaled(failed.name, 0, 3, 4, T0 + 62)
    assert step.record is None  # the failed revision already has its outcome: nothing to cancel

    # once it runs with all pods, revision 3 completes and names what it rolled back
    reused = rs(
        V1,
        3,
        3,
        phase="Running",
        history="1",
        annotations=((CAUSE_ANNOTATION, "AutoRollback"),),
    )
    drained = rs(V2, 2, 0, phase="Failed")
    done = plan_pass(target, snap(reused, drained, record=record), T0 + 70)
    assert done.phase == AppPhase.COMPLETE
    assert done.record is not None
    third = done.record.entry(3)
    assert third is not None
    assert (
        third.outcome,
        third.cause,
        third.rolled_back_from,
        third.rolled_back_to,
        third.by,
        third.returns_to,
    ) == (
        Outcome.COMPLETE,
        "AutoRollback",
        2,
        1,
        "gitdeploy (autoRollback)",
        1,
    )
    assert done.record.pin == pin


def test_an_automatic_rollback_after_a_failed_mid_hook_brings_the_old_pods_back_without_hooks() -> None:
    """The mid hook failed with every old pod stopped; running the same hooks for the rollback would
    fail it too and leave the app without pods (OpenShift scales the last good deployment back up)."""
    strategy = Strategy(StrategyType.RECREATE, recreate=RecreateParams(pre=HOOK_PRE, mid=HOOK_MID))
    app = make_app(V2, strategy=strategy, kind=AppKind.DEPLOYMENT_CONFIG, auto_rollback=True)
    pin = Pin(1, thash(V1), "digest-2", "revision 2 failed", Cause.AUTO_ROLLBACK, 2, "gitdeploy")
    record = AppRecord(revisions=(entry(V1, 1), entry(V2, 2, Outcome.FAILED, reason="HookFailed")), pin=pin)
    target = Target(
        app=app,
        template=tmpl(V1),
        template_hash=thash(V1),
        commit=CommitRef(f"{1:040d}", "Ada", "commit 1"),
        cause=Cause.AUTO_ROLLBACK,
        manifest_digest="digest-2",
        pin=pin,
    )
    reused = rs(V1, 3, 0, phase="Running", annotations=((CAUSE_ANNOTATION, "AutoRollback"),))
    failed = rs(V2, 2, 0, phase="Failed")
    step = plan_pass(target, snap(reused, failed, record=record), T0 + 70)
    assert not [a for a in step.actions if isinstance(a, CreatePod)], step.actions
    assert step.actions == (scaled(reused.name, 1, 3, 3, T0 + 70),), step.message


# -- the revision history limit ------------------------------------------------------------------------


def history_app(limit: int = 1) -> App:
    return make_app(V3, history_limit=limit)


def test_history_limit_is_not_applied_while_a_rollout_runs() -> None:
    old = [rs("nginx:0", 1, 0), rs(V1, 2, 0), rs(V2, 3, 2)]
    new = rs(V3, 4, 2, phase="Running")
    step = plan_pass(make_target(history_app()), snap(*old, new), T0)
    assert not any(isinstance(a, DeleteReplicaSet) for a in step.actions)
    assert step.actions == (scaled(rs_name(V2), 1, 3, 4, T0), scaled(new.name, 3, 3, 4, T0))


def test_history_limit_deletes_the_oldest_empty_replica_sets_when_the_rollout_completes() -> None:
    old = [rs("nginx:0", 1, 0), rs(V1, 2, 0), rs(V2, 3, 0)]
    new = rs(V3, 4, 3, phase="Running")
    step = plan_pass(make_target(history_app()), snap(*old, new), T0)
    assert step.phase == AppPhase.COMPLETE
    assert [a for a in step.actions if isinstance(a, DeleteReplicaSet)] == [
        DeleteReplicaSet(rs_name("nginx:0")),
        DeleteReplicaSet(rs_name(V1)),
    ]


def test_history_limit_also_applies_to_a_settled_app() -> None:
    old = [rs("nginx:0", 1, 0), rs(V1, 2, 0, 1, 0), rs(V2, 3, 0)]  # revision 2 still has a pod
    new = rs(V3, 4, 3)
    step = plan_pass(make_target(history_app()), snap(*old, new), T0)
    assert step.actions == (DeleteReplicaSet(rs_name("nginx:0")),)
    assert step.phase == AppPhase.COMPLETE


def test_a_failed_rollback_does_not_claim_the_replica_set_is_gone() -> None:
    app = make_app(V1, auto_rollback=True, deadline=60)
    reused = rs(V1, 3, 1, 1, 0, phase="Running", history="1", started_at=T0, progressed_at=T0)
    failed = rs(V2, 2, 3, phase="Failed", progressed_at=T0)
    record = AppRecord(
        revisions=(entry(V1, 1), entry(V2, 2, Outcome.FAILED, reason="ProgressDeadlineExceeded"))
    )
    step = plan_pass(make_target(app), snap(failed, reused, record=record), T0 + 61)
    assert step.phase == AppPhase.FAILED
    assert step.record is not None and step.record.pin is None
    assert step.message.endswith("; no earlier Complete revision to roll back to")


def test_every_strategy_type_has_a_strategy() -> None:
    assert set(STRATEGIES) == set(StrategyType)


def test_a_pass_context_takes_no_undeclared_attribute() -> None:
    ctx = RolloutContext.of(make_target(make_app()), snap(), T0, None, False)
    with pytest.raises(AttributeError):
        ctx.surge = 1  # type: ignore[attr-defined]
    assert ctx.bounds == RolloutBounds("RollingUpdate", 3, "25%", "25%")
