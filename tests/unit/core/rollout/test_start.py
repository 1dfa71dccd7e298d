"""Starting a revision (:mod:`gitdeploy.core.rollout.start`): a new app's first ReplicaSet, the next
revision number and its cause, a revert that reuses an old ReplicaSet, a rollover that cancels the
revision in flight.

Each test builds what the cluster would hold (ReplicaSets with gitdeploy's annotations, hook and
deployer pods, the app record) with tests/fixtures/rolloutpass.py, calls :func:`plan_pass` once and
checks the exact step.
"""

from __future__ import annotations

import pytest

from gitdeploy.core.history.records import AppRecord, Cause, CommitRef, Outcome, RevisionEntry
from gitdeploy.core.models import App, AppKind, RollingParams, Strategy, StrategyType
from gitdeploy.core.observed import (
    AUTHOR_ANNOTATION,
    CAUSE_ANNOTATION,
    CHANGE_CAUSE_ANNOTATION,
    COMMIT_ANNOTATION,
    PHASE_ANNOTATION,
    PROGRESSED_AT_ANNOTATION,
    REVISION_ANNOTATION,
    REVISION_HISTORY_ANNOTATION,
    STARTED_AT_ANNOTATION,
    SUBJECT_ANNOTATION,
)
from gitdeploy.core.rollout import AppPhase, CreateReplicaSet, Event, PatchReplicaSet, plan_pass
from gitdeploy.core.scaling.progress import ConditionReason, ConditionType
from gitdeploy.core.scaling.replicasets import DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION
from tests.fixtures.rolloutpass import (
    CUSTOM,
    HOOK_POST,
    HOOK_PRE,
    RECREATE,
    SHA,
    T0,
    V1,
    V2,
    V3,
    entry,
    make_app,
    make_target,
    named,
    only_create,
    reasons,
    rs,
    rs_name,
    scaled,
    snap,
    thash,
    ts,
)

# -- a new app ---------------------------------------------------------------------------------------

# (name, app, replicas of the new ReplicaSet, max-replicas annotation, requeue): a rolling update
# has nothing more to do until pods are ready; hooks, Recreate and Custom go on at once
NEW_APP_CASES = [
    ("RollingUpdate", make_app(), 3, "4", 1.0),
    (
        "RollingUpdate 10 with maxSurge 2",
        make_app(
            replicas=10,
            strategy=Strategy(
                StrategyType.ROLLING_UPDATE, rolling=RollingParams(max_surge=2, max_unavailable=0)
            ),
        ),
        10,
        "12",
        1.0,
    ),
    (
        "Rolling (DeploymentConfig)",
        make_app(
            kind=AppKind.DEPLOYMENT_CONFIG, strategy=Strategy(StrategyType.ROLLING, rolling=RollingParams())
        ),
        3,
        "4",
        1.0,
    ),
    ("Recreate", make_app(strategy=RECREATE), 0, "3", 0.0),
    ("Custom", make_app(strategy=CUSTOM), 0, "3", 0.0),
    (
        "Rolling with a pre hook",
        make_app(strategy=Strategy(StrategyType.ROLLING_UPDATE, rolling=RollingParams(pre=HOOK_PRE))),
        0,
        "4",
        0.0,
    ),
    (
        "Rolling with a post hook",
        make_app(strategy=Strategy(StrategyType.ROLLING_UPDATE, rolling=RollingParams(post=HOOK_POST))),
        0,
        "4",
        0.0,
    ),
]


@pytest.mark.parametrize(
    ("app", "initial", "max_replicas", "requeue"),
    named(NEW_APP_CASES),
)
def test_a_new_app_gets_its_first_replica_set(
    app: App, initial: int, max_replicas: str, requeue: float
) -> None:
    step = plan_pass(make_target(app), snap(), T0)
    spec = only_create(step).spec
    assert spec.name == f"web-{app.template_hash}"
    assert (spec.namespace, spec.app, spec.template, spec.template_hash) == (
        "demo",
        "web",
        app.template,
        app.template_hash,
    )
    assert (spec.selector_labels, spec.replicas, spec.min_ready_seconds) == ((("app", "web"),), initial, 0)
    replicas = app.replicas
    assert dict(spec.annotations) == {
        REVISION_ANNOTATION: "1",
        COMMIT_ANNOTATION: SHA,
        AUTHOR_ANNOTATION: "Ada",
        SUBJECT_ANNOTATION: "Bump nginx",
        CHANGE_CAUSE_ANNOTATION: "Bump nginx",
        CAUSE_ANNOTATION: "ConfigChange",
        PHASE_ANNOTATION: "Running",
        STARTED_AT_ANNOTATION: "2023-11-14T22:13:20Z",
        DESIRED_REPLICAS_ANNOTATION: str(replicas),
        MAX_REPLICAS_ANNOTATION: max_replicas,
        PROGRESSED_AT_ANNOTATION: "2023-11-14T22:13:20Z",
    }
    started = Event("RolloutStarted", "Rolling out revision 1: commit c0ffee0 'Bump nginx' by Ada")
    scaled_up = (
        [Event("ScalingReplicaSet", f"Scaled up replica set {spec.name} to {initial}")] if initial else []
    )
    assert step.events == (started, *scaled_up)
    assert (step.phase, step.message, step.revision, step.requeue_after) == (
        AppPhase.PROGRESSING,
        "revision 1 started",
        1,
        requeue,
    )
    assert (step.record, step.create_record) == (None, False)
    progressing = step.status.condition(ConditionType.PROGRESSING)
    assert progressing is not None and progressing.reason == ConditionReason.NEW_REPLICA_SET_CREATED


def test_a_new_app_names_its_cause_and_change_cause() -> None:
    app = make_app()
    target = make_target(app, cause=Cause.IMAGE_CHANGE.value, change_cause="new digest for web")
    spec = only_create(plan_pass(target, snap(), T0)).spec
    marks = dict(spec.annotations)
    assert (marks[CAUSE_ANNOTATION], marks[CHANGE_CAUSE_ANNOTATION]) == ("ImageChange", "new digest for web")
    step = plan_pass(target, snap(), T0)
    assert step.events[0] == Event(
        "RolloutStarted", "Rolling out revision 1 (ImageChange): commit c0ffee0 'Bump nginx' by Ada"
    )


def test_a_new_app_without_replicas_starts_with_one() -> None:
    spec = only_create(plan_pass(make_target(make_app(replicas=None)), snap(), T0)).spec
    assert spec.replicas == 1
    assert dict(spec.annotations)[DESIRED_REPLICAS_ANNOTATION] == "1"


def test_the_next_revision_number_follows_the_record_and_the_replica_sets() -> None:
    # revision 7 is in the record only (its ReplicaSet was deleted by the history limit)
    record = AppRecord(revisions=(entry(V1, 5), entry("nginx:gone", 7, Outcome.CANCELLED)))
    step = plan_pass(make_target(make_app(V2)), snap(rs(V1, 5, 3), record=record), T0)
    create = [a for a in step.actions if isinstance(a, CreateReplicaSet)]
    assert dict(create[0].spec.annotations)[REVISION_ANNOTATION] == "8"
    assert step.revision == 8


# -- reverts and rollovers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reused_revision", "history", "latest", "expected_history"),
    [
        (1, "", 2, "1"),
        (4, "1", 6, "1,4"),
        (20, ",".join(str(n) for n in range(1, 11)), 21, ",".join(str(n) for n in range(2, 11)) + ",20"),
    ],
    ids=["first reuse", "second reuse", "history keeps ten"],
)
def test_a_revert_reuses_the_replica_set_with_the_next_revision(
    reused_revision: int, history: str, latest: int, expected_history: str
) -> None:
    earlier = rs(V1, reused_revision, 0, history=history)
    current = rs(V2, latest, 3)
    record = AppRecord(revisions=(entry(V1, reused_revision), entry(V2, latest)))
    now = T0 + 100
    step = plan_pass(make_target(make_app(V1)), snap(earlier, current, record=record), now)
    revision = latest + 1
    # one write annotates the reused ReplicaSet and scales it up to maxSurge (the Kubernetes
    # controller's first sync of a revert does both)
    assert len(step.actions) == 1
    patch = step.actions[0]
    assert isinstance(patch, PatchReplicaSet)
    assert (patch.name, patch.replicas) == (earlier.name, 1)
    assert dict(patch.annotations) == {
        REVISION_ANNOTATION: str(revision),
        COMMIT_ANNOTATION: SHA,
        AUTHOR_ANNOTATION: "Ada",
        SUBJECT_ANNOTATION: "Bump nginx",
        CHANGE_CAUSE_ANNOTATION: "Bump nginx",
        CAUSE_ANNOTATION: "ConfigChange",
        PHASE_ANNOTATION: "Running",
        STARTED_AT_ANNOTATION: ts(now),
        REVISION_HISTORY_ANNOTATION: expected_history,
        DESIRED_REPLICAS_ANNOTATION: "3",
        MAX_REPLICAS_ANNOTATION: "4",
        PROGRESSED_AT_ANNOTATION: ts(now),
    }
    assert step.events == (
        Event("RolloutStarted", f"Rolling out revision {revision}: commit c0ffee0 'Bump nginx' by Ada"),
        Event("ScalingReplicaSet", f"Scaled up replica set {earlier.name} to 1"),
    )
    assert (step.phase, step.revision, step.record, step.requeue_after) == (
        AppPhase.PROGRESSING,
        revision,
        None,
        1.0,
    )
    progressing = step.status.condition(ConditionType.PROGRESSING)
    assert progressing is not None and progressing.reason == ConditionReason.REPLICA_SET_UPDATED


def test_rollover_cancels_the_revision_in_flight() -> None:
    first = rs(V1, 1, 2)
    in_flight = rs(V2, 2, 2, 2, 1, phase="Running", started_at=T0 - 30)
    record = AppRecord(revisions=(entry(V1, 1),))
    now = T0 + 7
    step = plan_pass(make_target(make_app(V3)), snap(first, in_flight, record=record), now)
    assert step.record == AppRecord(
        revisions=(
            entry(V1, 1),
            RevisionEntry(
                revision=2,
                template_hash=thash(V2),
                replica_set=rs_name(V2),
                commit=CommitRef(f"{2:040d}", "Ada", "commit 2"),
                cause=Cause.CONFIG_CHANGE,
                change_cause="commit 2",
                images=(("web", V2),),
                started_at=T0 - 30,
                finished_at=now,
                outcome=Outcome.CANCELLED,
                message="superseded by revision 3 before it completed",
            ),
        )
    )
    # old 2 + in flight 2 already fill replicas + maxSurge (4): the new ReplicaSet starts empty;
    # then the in-flight ReplicaSet loses its unavailable pod, which makes room for one new pod
    assert step.events == (
        Event("RolloutStarted", "Rolling out revision 3: commit c0ffee0 'Bump nginx' by Ada"),
        Event("RolloutCancelled", "Revision 2 superseded by revision 3"),
        Event(
            "ScalingReplicaSet",
            f"Scaled down replica set {rs_name(V2)} to 1; Scaled up replica set {rs_name(V3)} to 1",
        ),
    )
    # one write per ReplicaSet: the scale-down first, then the new ReplicaSet created with its pod
    scale_down, create = step.actions
    assert scale_down == scaled(rs_name(V2), 1, 3, 4, now)
    assert isinstance(create, CreateReplicaSet)
    spec = create.spec
    assert (spec.name, spec.replicas, dict(spec.annotations)[REVISION_ANNOTATION]) == (rs_name(V3), 1, "3")
    assert step.revision == 3


@pytest.mark.parametrize(
    ("annotation", "recorded"),
    [
        ("Running", Outcome.CANCELLED),  # crash after the record write, before the new ReplicaSet
        ("Failed", Outcome.FAILED),
        ("Complete", Outcome.COMPLETE),
        ("Running", Outcome.FAILED),  # crash between the record write and the annotation
    ],
)
def test_rollover_writes_nothing_for_a_revision_that_already_has_an_outcome(
    annotation: str, recorded: Outcome
) -> None:
    first = rs(V1, 1, 2)
    earlier = rs(V2, 2, 2, phase=annotation)
    record = AppRecord(revisions=(entry(V1, 1), entry(V2, 2, recorded)))
    step = plan_pass(make_target(make_app(V3)), snap(first, earlier, record=record), T0)
    assert step.record is None
    assert reasons(step) == ["RolloutStarted", "ScalingReplicaSet"]
