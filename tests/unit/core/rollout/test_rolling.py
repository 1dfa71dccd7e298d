"""RollingUpdate and Rolling (:mod:`gitdeploy.core.rollout.rolling`), pass by pass: a Deployment of
3 replicas rolled from nginx:1 to nginx:2 at 25% surge and unavailability, statuses behind their
spec, a DeploymentConfig's update period, and the requeue while a watch of the pods wakes the loop.

Each test builds what the cluster would hold (ReplicaSets with gitdeploy's annotations, hook and
deployer pods, the app record) with tests/fixtures/rolloutpass.py, calls :func:`plan_pass` once and
checks the exact step.
"""

from __future__ import annotations

import pytest

from gitdeploy.core.history.records import AppRecord, CommitRef, Outcome, RevisionEntry
from gitdeploy.core.models import App, AppKind, RollingParams, Strategy, StrategyType
from gitdeploy.core.observed import PHASE_ANNOTATION, ObservedReplicaSet
from gitdeploy.core.rollout import (
    STATUS_BEHIND,
    AppPhase,
    DeleteReplicaSet,
    Event,
    PatchReplicaSet,
    plan_pass,
)
from gitdeploy.core.scaling.progress import ConditionReason, ConditionType
from tests.fixtures.rolloutpass import (
    HOOK_POST,
    HOOK_PRE,
    OK,
    RECREATE,
    T0,
    V1,
    V2,
    entry,
    make_app,
    make_target,
    named,
    only_create,
    pod,
    rs,
    rs_name,
    scaled,
    scaling_events,
    snap,
    thash,
)

# -- 3 replicas from nginx:1 to nginx:2 at 25%/25%, pass by pass -------------------------------------------

# (old spec/current/available, new spec/current/available) → the scales of the step: upstream's
# passes back to back (it re-syncs after its own writes), so a scale-down that makes room is
# followed by the scale-up it allows in the same step
ROLLING_PASSES: list[tuple[tuple[int, int, int], tuple[int, int, int], list[tuple[str, int]]]] = [
    ((3, 3, 3), (1, 0, 0), []),  # new pod not there yet: wait
    ((3, 3, 3), (1, 1, 0), []),  # not available yet: wait
    ((3, 3, 3), (1, 1, 1), [("old", 2), ("new", 2)]),
    # the sizes count, not the pods (as upstream): a pod still stopping does not hold the new one back
    ((2, 3, 3), (1, 1, 1), [("new", 2)]),
    ((2, 2, 2), (1, 1, 1), [("new", 2)]),
    ((2, 2, 2), (2, 2, 2), [("old", 1), ("new", 3)]),
    ((1, 1, 1), (2, 2, 2), [("new", 3)]),
]


@pytest.mark.parametrize(("old_counts", "new_counts", "expected"), ROLLING_PASSES)
def test_each_rolling_pass_scales_within_surge_and_unavailability(
    old_counts: tuple[int, int, int], new_counts: tuple[int, int, int], expected: list[tuple[str, int]]
) -> None:
    old = rs(V1, 1, *old_counts)
    new = rs(V2, 2, *new_counts, phase="Running")
    now = T0 + 10
    step = plan_pass(
        make_target(make_app(V2)), snap(old, new, record=AppRecord(revisions=(entry(V1, 1),))), now
    )
    targets = [(old if which == "old" else new, to) for which, to in expected]
    assert step.actions == tuple(scaled(target.name, to, 3, 4, now) for target, to in targets)
    words = [f"Scaled {'down' if t is old else 'up'} replica set {t.name} to {to}" for t, to in targets]
    assert scaling_events(step) == (["; ".join(words)] if words else [])
    assert step.requeue_after == 1.0
    assert (step.phase, step.record, step.revision) == (AppPhase.PROGRESSING, None, 2)


def test_the_first_rolling_pass_creates_the_new_replica_set_with_one_pod() -> None:
    old = rs(V1, 1, 3)
    step = plan_pass(make_target(make_app(V2)), snap(old, record=AppRecord(revisions=(entry(V1, 1),))), T0)
    assert only_create(step).spec.replicas == 1
    assert scaling_events(step) == [f"Scaled up replica set {rs_name(V2)} to 1"]


@pytest.mark.parametrize(
    ("app", "new"),
    [
        (
            make_app(
                V2, strategy=Strategy(StrategyType.ROLLING_UPDATE, rolling=RollingParams(post=HOOK_POST))
            ),
            None,
        ),
        (make_app(V2), rs(V2, 2, 3, 4, 3, phase="Running")),
    ],
    ids=["a post hook runs once the old pods are gone", "a surplus new pod still counted"],
)
def test_the_step_that_scales_the_last_old_pod_away_completes_nothing_else(
    app: App, new: ObservedReplicaSet | None
) -> None:
    old = rs(V1, 1, 1)
    new = new or rs(V2, 2, 3, phase="Running")
    step = plan_pass(make_target(app), snap(old, new, record=AppRecord(revisions=(entry(V1, 1),))), T0 + 50)
    assert (step.phase, step.record, step.requeue_after) == (AppPhase.PROGRESSING, None, 1.0)
    assert [(a.name, a.replicas) for a in step.actions if isinstance(a, PatchReplicaSet)] == [(old.name, 0)]


@pytest.mark.parametrize("stale", ["new", "old"])
@pytest.mark.parametrize("strategy", [StrategyType.ROLLING_UPDATE, StrategyType.RECREATE])
def test_a_status_behind_its_spec_is_not_acted_on(stale: str, strategy: StrategyType) -> None:
    # Given a ReplicaSet whose status is of an older spec (observedGeneration behind): its counts
    # may be stale (a scaled-down old one still shows its pods available)
    old = rs(V1, 1, 1, observed_current=stale != "old")
    new = rs(V2, 2, 3, phase="Running", observed_current=stale != "new")
    app = make_app(V2, strategy=Strategy(strategy))
    # When a pass runs
    step = plan_pass(make_target(app), snap(old, new, record=AppRecord(revisions=(entry(V1, 1),))), T0 + 50)
    # Then it scales nothing and waits for the ReplicaSet controller
    assert (step.phase, step.message, step.actions) == (AppPhase.PROGRESSING, STATUS_BEHIND, ())
    assert step.requeue_after is not None


def test_a_replica_set_the_completing_step_scaled_to_0_is_deleted_by_the_history_limit_a_pass_later() -> None:
    # revisionHistoryLimit 0: Kubernetes deletes no ReplicaSet whose status still shows pods
    app = make_app(V2, history_limit=0)
    old = rs(V1, 1, 1)
    new = rs(V2, 2, 3, phase="Running")
    record = AppRecord(revisions=(entry(V1, 1),))
    step = plan_pass(make_target(app), snap(old, new, record=record), T0 + 50)
    assert (step.phase, step.requeue_after) == (AppPhase.COMPLETE, 1.0)
    assert not any(isinstance(a, DeleteReplicaSet) for a in step.actions)
    assert step.record is not None
    drained = rs(V1, 1, 0)
    done = rs(V2, 2, 3, phase="Complete")
    later = plan_pass(make_target(app), snap(drained, done, record=step.record), T0 + 51)
    assert (later.phase, later.actions, later.requeue_after) == (
        AppPhase.COMPLETE,
        (DeleteReplicaSet(drained.name),),
        None,
    )


@pytest.mark.parametrize(
    "old_pods", [1, 0], ids=["the step that scales the last old pod away", "a pass later"]
)
def test_the_last_rolling_pass_completes_the_revision(old_pods: int) -> None:
    old = rs(V1, 1, old_pods, progressed_at=T0 + 50)
    new = rs(V2, 2, 3, phase="Running", started_at=T0, progressed_at=T0 + 50)
    now = T0 + 60
    record = AppRecord(revisions=(entry(V1, 1),))
    step = plan_pass(make_target(make_app(V2)), snap(old, new, record=record), now)
    scale_down = [scaled(old.name, 0, 3, 4, now)] if old_pods else []
    scaling = [Event("ScalingReplicaSet", f"Scaled down replica set {old.name} to 0")] if old_pods else []
    assert step.actions == (*scale_down, PatchReplicaSet(new.name, None, ((PHASE_ANNOTATION, "Complete"),)))
    assert step.events == (*scaling, Event("RolloutComplete", "Revision 2 is complete"))
    assert step.record == AppRecord(
        revisions=(
            entry(V1, 1),
            RevisionEntry(
                revision=2,
                template_hash=thash(V2),
                replica_set=new.name,
                commit=CommitRef(f"{2:040d}", "Ada", "commit 2"),
                change_cause="commit 2",
                images=(("web", V2),),
                started_at=T0,
                finished_at=now,
                outcome=Outcome.COMPLETE,
            ),
        )
    )
    assert (step.phase, step.message, step.requeue_after) == (AppPhase.COMPLETE, "revision 2 complete", None)
    # pods being deleted count as gone, as in Kubernetes
    assert (step.status.replicas, step.status.updated_replicas, step.status.available_replicas) == (3, 3, 3)
    progressing = step.status.condition(ConditionType.PROGRESSING)
    assert progressing is not None and progressing.reason == ConditionReason.NEW_REPLICA_SET_AVAILABLE


@pytest.mark.parametrize(
    "new",
    [
        rs(V2, 2, 3, 3, 2, phase="Running"),  # one pod not available yet
        rs(V2, 2, 3, 4, 3, phase="Running"),  # a surplus pod still terminating
        rs(V2, 2, 3, phase="Running", observed_current=False),  # status not caught up with the spec
    ],
    ids=["unavailable pod", "terminating pod", "stale status"],
)
def test_a_rollout_is_not_complete_before_every_pod_is_counted(new: ObservedReplicaSet) -> None:
    old = rs(V1, 1, 0)
    step = plan_pass(make_target(make_app(V2)), snap(old, new), T0 + 10)
    assert (step.phase, step.record, step.actions) == (AppPhase.PROGRESSING, None, ())


def test_deployment_config_rolling_waits_its_update_period_and_interval() -> None:
    strategy = Strategy(
        StrategyType.ROLLING, rolling=RollingParams(interval_seconds=2, update_period_seconds=3)
    )
    app = make_app(V2, kind=AppKind.DEPLOYMENT_CONFIG, strategy=strategy)
    scaling = plan_pass(make_target(app), snap(rs(V1, 1, 3), rs(V2, 2, 1, phase="Running")), T0)
    waiting = plan_pass(make_target(app), snap(rs(V1, 1, 3), rs(V2, 2, 1, 1, 0, phase="Running")), T0)
    assert (len(scaling.actions), scaling.requeue_after) == (1, 3.0)
    assert (waiting.actions, waiting.requeue_after) == ((), 2.0)


# (what the step does, the app, the ReplicaSets, requeue unwatched, requeue while a watch of its
# ReplicaSets wakes the loop): only a rolling update's wait for pods is the watch's to end; hook
# pods, Recreate, a DeploymentConfig's own periods and the progress deadline keep their times
HOOKED = Strategy(StrategyType.ROLLING_UPDATE, rolling=RollingParams(pre=HOOK_PRE))
DC_ROLLING = Strategy(
    StrategyType.ROLLING, rolling=RollingParams(interval_seconds=2, update_period_seconds=3)
)
WATCHED_CASES = [
    ("starts", make_app(V2), (rs(V1, 1, 3),), 1.0, 5.0),
    ("scales", make_app(V2), (rs(V1, 1, 3), rs(V2, 2, 1, phase="Running")), 1.0, 5.0),
    ("waits for pods", make_app(V2), (rs(V1, 1, 2), rs(V2, 2, 2, 2, 1, phase="Running")), 1.0, 5.0),
    (
        "waits for pods, 2 s before the deadline",
        make_app(V2, deadline=12),
        (rs(V1, 1, 2, progressed_at=T0), rs(V2, 2, 2, 2, 1, phase="Running", progressed_at=T0)),
        1.0,
        2.0,
    ),
    ("starts a pre hook", make_app(V2, strategy=HOOKED), (rs(V1, 1, 3),), 0.0, 0.0),
    (
        "waits for old pods (Recreate)",
        make_app(V2, strategy=RECREATE),
        (rs(V1, 1, 0, 2), rs(V2, 2, 0, phase="Running")),
        1.0,
        1.0,
    ),
    (
        "a DeploymentConfig waits",
        make_app(V2, kind=AppKind.DEPLOYMENT_CONFIG, strategy=DC_ROLLING),
        (rs(V1, 1, 3), rs(V2, 2, 1, 1, 0, phase="Running")),
        2.0,
        2.0,
    ),
]


@pytest.mark.parametrize(
    ("app", "replica_sets", "unwatched", "watched"),
    named(WATCHED_CASES),
)
def test_a_watched_rolling_update_waits_longer_for_pods(
    app: App, replica_sets: tuple[ObservedReplicaSet, ...], unwatched: float, watched: float
) -> None:
    record = AppRecord(revisions=(entry(V1, 1),))
    target, now = make_target(app), T0 + 10
    for watching, requeue in ((False, unwatched), (True, watched)):
        step = plan_pass(target, snap(*replica_sets, record=record), now, watched=watching)
        assert step.requeue_after == requeue


def test_a_hooked_rolling_update_of_an_app_without_replicas_scales_up() -> None:
    strategy = Strategy(StrategyType.ROLLING_UPDATE, rolling=RollingParams(pre=HOOK_PRE))
    app = make_app(V2, replicas=None, strategy=strategy)
    # an autoscaler moved the old ReplicaSet from 3 to 5; the new one was created at 0 (pre hook)
    old_rs = rs(V1, 1, 5, desired=3, max_replicas=4)
    new_rs = rs(V2, 2, 0, phase="Running", desired=5, max_replicas=7)
    pre = pod(new_rs, "hook-pre", OK, finished_at=T0)
    step = plan_pass(make_target(app), snap(old_rs, new_rs, pods=(pre,)), T0 + 5)
    # maxSurge 25% of 5 → 2, maxUnavailable 1: new → 2, then old → 4, then new → 3, in one step
    assert step.actions == (scaled(old_rs.name, 4, 5, 7, T0 + 5), scaled(new_rs.name, 3, 5, 7, T0 + 5))
