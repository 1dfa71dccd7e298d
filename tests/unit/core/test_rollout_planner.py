"""The rollout planner, one pass at a time, on hand-built snapshots (no cluster, no clock).

Each test builds what the cluster would hold (ReplicaSets with gitdeploy's annotations, hook and
deployer pods, the app record), calls :func:`plan_pass` once and checks the exact step: actions,
events, record, phase and when to look again. Multi-pass stories feed the states pass by pass.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from gitdeploy.core.hashing import canonical_template, template_hash
from gitdeploy.core.models import (
    App,
    AppKey,
    AppKind,
    CustomParams,
    FailurePolicy,
    Hook,
    Location,
    PodTemplate,
    RecreateParams,
    RollingParams,
    Selector,
    Strategy,
    StrategyType,
    Triggers,
)
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
    ObservedPod,
    ObservedReplicaSet,
)
from gitdeploy.core.progress import ConditionReason, ConditionType
from gitdeploy.core.records import AppRecord, Cause, CommitRef, HookResult, Outcome, Pin, RevisionEntry
from gitdeploy.core.replicasets import (
    DESIRED_REPLICAS_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    ReplicaSetState,
)
from gitdeploy.core.rolling import RolloutBounds
from gitdeploy.core.rollout import (
    STATUS_BEHIND,
    AppPhase,
    CreatePod,
    CreateReplicaSet,
    DeletePod,
    DeleteReplicaSet,
    Event,
    PatchReplicaSet,
    Snapshot,
    Step,
    Target,
    effective_replicas,
    plan_pass,
)
from gitdeploy.core.rollout.context import RolloutContext
from gitdeploy.core.rollout.strategies import STRATEGIES
from gitdeploy.core.timestamps import format_timestamp

T0 = 1_700_000_000.0
"""When the rollouts in these tests start (whole seconds, as the annotations store them)."""
RECORD_UID = "record-uid"
SHA = "c0ffee0000000000000000000000000000000001"
COMMIT = CommitRef(SHA, "Ada", "Bump nginx")

ROLLING = Strategy(StrategyType.ROLLING_UPDATE, rolling=RollingParams())
RECREATE = Strategy(StrategyType.RECREATE, recreate=RecreateParams())
CUSTOM = Strategy(StrategyType.CUSTOM, custom=CustomParams("org/deployer:1", ("/deploy",)))


def ts(at: float) -> str:
    return format_timestamp(at)


def tmpl(image: str) -> PodTemplate:
    return canonical_template(
        {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": image}]}}
    )


def thash(image: str) -> str:
    return template_hash(tmpl(image))


def rs_name(image: str) -> str:
    return f"web-{thash(image)}"


def make_app(
    image: str = "nginx:2",
    *,
    replicas: int | None = 3,
    strategy: Strategy = ROLLING,
    kind: AppKind = AppKind.DEPLOYMENT,
    paused: bool = False,
    auto_rollback: bool = False,
    history_limit: int = 10,
    deadline: int = 600,
    min_ready: int = 0,
) -> App:
    template = tmpl(image)
    return App(
        kind=kind,
        api_version="apps/v1" if kind is AppKind.DEPLOYMENT else "apps.openshift.io/v1",
        key=AppKey("demo", "web"),
        location=Location("apps/web.yaml", 1),
        template=template,
        template_hash=template_hash(template),
        selector=Selector(match_labels=(("app", "web"),)),
        strategy=strategy,
        triggers=Triggers(config_change=True),
        replicas=replicas,
        paused=paused,
        revision_history_limit=history_limit,
        min_ready_seconds=min_ready,
        progress_deadline_seconds=deadline,
        auto_rollback=auto_rollback,
    )


def make_target(app: App, **fields: Any) -> Target:
    return Target(app=app, template=app.template, template_hash=app.template_hash, commit=COMMIT, **fields)


def rs(
    image: str,
    revision: int,
    replicas: int,
    current: int | None = None,
    available: int | None = None,
    *,
    phase: str = "Complete",
    desired: int | None = 3,
    max_replicas: int | None = 4,
    started_at: float = T0,
    progressed_at: float | None = None,
    history: str = "",
    observed_current: bool = True,
    annotations: tuple[tuple[str, str], ...] = (),
) -> ObservedReplicaSet:
    """A ReplicaSet of ``image`` as the adapter reports it (``current``, ``available`` default to full)."""
    current = replicas if current is None else current
    available = current if available is None else available
    name = rs_name(image)
    marks: dict[str, str] = {
        REVISION_ANNOTATION: str(revision),
        COMMIT_ANNOTATION: f"{revision:040d}",
        AUTHOR_ANNOTATION: "Ada",
        SUBJECT_ANNOTATION: f"commit {revision}",
        CHANGE_CAUSE_ANNOTATION: f"commit {revision}",
        CAUSE_ANNOTATION: "ConfigChange",
        PHASE_ANNOTATION: phase,
        STARTED_AT_ANNOTATION: ts(started_at),
    }
    if desired is not None:
        marks[DESIRED_REPLICAS_ANNOTATION] = str(desired)
    if max_replicas is not None:
        marks[MAX_REPLICAS_ANNOTATION] = str(max_replicas)
    if progressed_at is not None:
        marks[PROGRESSED_AT_ANNOTATION] = ts(progressed_at)
    if history:
        marks[REVISION_HISTORY_ANNOTATION] = history
    marks.update(dict(annotations))
    state = ReplicaSetState(
        name,
        thash(image),
        revision,
        created_at=T0 - 10_000 + revision,
        replicas=replicas,
        current=current,
        ready=available,
        available=available,
        desired_replicas_annotation=desired,
        max_replicas_annotation=max_replicas,
    )
    return ObservedReplicaSet(
        namespace="demo",
        app="web",
        state=state,
        annotations=tuple(sorted(marks.items())),
        uid=f"uid-{name}",
        observed_generation_current=observed_current,
        template=tmpl(image),
    )


def pod(
    owner: ObservedReplicaSet,
    role: str,
    phase: str,
    *,
    revision: int | None = None,
    attempt: int = 1,
    created_at: float = T0,
    first_attempt_at: float | None = None,
    finished_at: float | None = None,
    exit_code: int | None = None,
) -> ObservedPod:
    suffix = "deploy" if role == "deployer" else role
    return ObservedPod(
        namespace="demo",
        name=f"{owner.name}-{suffix}",
        role=role,
        phase=phase,
        revision=owner.state.revision if revision is None else revision,
        attempt=attempt,
        app="web",
        created_at=created_at,
        first_attempt_at=first_attempt_at,
        finished_at=finished_at,
        exit_code=exit_code,
    )


def entry(image: str, revision: int, outcome: Outcome = Outcome.COMPLETE, **fields: Any) -> RevisionEntry:
    return RevisionEntry(
        revision=revision,
        template_hash=thash(image),
        replica_set=rs_name(image),
        commit=CommitRef(f"{revision:040d}", "Ada", f"commit {revision}"),
        outcome=outcome,
        **fields,
    )


def snap(
    *replica_sets: ObservedReplicaSet,
    pods: tuple[ObservedPod, ...] = (),
    record: AppRecord | None = None,
    uid: str = RECORD_UID,
) -> Snapshot:
    return Snapshot(replica_sets=replica_sets, pods=pods, record=record or AppRecord(), record_uid=uid)


def scaled(name: str, to: int, desired: int, max_replicas: int, now: float) -> PatchReplicaSet:
    """The patch gitdeploy writes when it scales: replicas plus the replica annotations."""
    return PatchReplicaSet(
        name,
        to,
        (
            (DESIRED_REPLICAS_ANNOTATION, str(desired)),
            (MAX_REPLICAS_ANNOTATION, str(max_replicas)),
            (PROGRESSED_AT_ANNOTATION, ts(now)),
        ),
    )


def scaling_events(step: Step) -> list[str]:
    return [e.message for e in step.events if e.reason == "ScalingReplicaSet"]


def reasons(step: Step) -> list[str]:
    return [e.reason for e in step.events]


def named(cases: list[tuple[Any, ...]]) -> list[Any]:
    """A table of ``(id, *values)`` rows as pytest parameters named by their first column."""
    return [pytest.param(*case[1:], id=case[0]) for case in cases]


def only_create(step: Step) -> CreateReplicaSet:
    assert len(step.actions) == 1
    action = step.actions[0]
    assert isinstance(action, CreateReplicaSet)
    return action


def only_create_pod(step: Step) -> CreatePod:
    creates = [a for a in step.actions if isinstance(a, CreatePod)]
    assert len(creates) == 1
    return creates[0]


V1, V2, V3 = "nginx:1", "nginx:2", "nginx:3"
HOOK_PRE = Hook(FailurePolicy.ABORT, "web", ("/bin/pre",))
HOOK_MID = Hook(FailurePolicy.ABORT, "web", ("/bin/mid",))
HOOK_POST = Hook(FailurePolicy.ABORT, "web", ("/bin/post",))


# -- the record comes first --------------------------------------------------------------------------


def test_a_new_app_first_creates_its_empty_record() -> None:
    step = plan_pass(make_target(make_app()), snap(uid=""), T0)
    assert (step.phase, step.message, step.revision) == (AppPhase.PROGRESSING, "creating the app record", 0)
    assert (step.create_record, step.record, step.requeue_after) == (True, AppRecord(), 0.0)
    assert (step.actions, step.events) == ((), ())


@pytest.mark.parametrize(("uid", "emptied", "lost"), [("", False, "deleted"), (RECORD_UID, True, "emptied")])
def test_a_lost_record_is_rebuilt_from_the_replica_sets_first_and_said_so(
    uid: str, emptied: bool, lost: str
) -> None:
    # Given revisions 2 (reused by revision 4) and 3, and a record deleted or emptied by hand
    reused = rs(V1, 4, 3, history="2")
    replaced = rs(V2, 3, 0)
    lost_snap = dataclasses.replace(snap(reused, replaced, uid=uid), record_emptied=emptied)
    step = plan_pass(make_target(make_app()), lost_snap, T0)
    # Then the step writes the record rebuilt from them (creates it when it was deleted), nothing else
    assert (step.message, step.revision, step.create_record, step.actions) == (
        "rebuilding the app record",
        4,
        not uid,
        (),
    )
    assert step.record is not None
    assert [(e.revision, e.commit.sha, e.outcome, e.returns_to) for e in step.record.revisions] == [
        (2, "", Outcome.CANCELLED, None),
        (3, f"{3:040d}", Outcome.COMPLETE, None),
        (4, f"{4:040d}", Outcome.COMPLETE, 2),
    ]
    [event] = step.events
    assert (event.reason, event.warning) == ("RecordRebuilt", True)
    assert f"gitdeploy.web was {lost}; rebuilt revisions 2, 3, 4" in event.message
    assert step.record.recovery == event.message and step.record.pin is None


def test_an_emptied_record_without_replica_sets_is_said_so() -> None:
    emptied = dataclasses.replace(snap(), record_emptied=True)
    step = plan_pass(make_target(make_app()), emptied, T0)
    assert (step.create_record, step.actions) == (False, ())
    [event] = step.events
    assert event.reason == "RecordEmptied" and step.record is not None and step.record.recovery


def test_a_rebuilt_record_keeps_a_rollback_pinned() -> None:
    # Given revision 3 rolled back to revision 1's template (its ReplicaSet reused), record deleted
    back = rs(V1, 3, 3, history="1", annotations=((CAUSE_ANNOTATION, "Rollback"),))
    step = plan_pass(make_target(make_app(image=V3)), snap(back, rs(V2, 2, 0), uid=""), T0)
    assert step.record is not None and step.record.pin is not None
    assert (step.record.pin.revision, step.record.pin.template_hash, step.record.triggers_suspended) == (
        1,
        thash(V1),
        True,
    )


def test_the_rebuilt_note_goes_when_the_next_rollout_starts() -> None:
    record = AppRecord(revisions=(entry(V1, 1),), recovery="the app record gitdeploy.web was deleted")
    step = plan_pass(make_target(make_app(image=V2)), snap(rs(V1, 1, 3), record=record), T0)
    assert step.record is not None and step.record.recovery == ""
    settled = plan_pass(make_target(make_app(image=V1)), snap(rs(V1, 1, 3), record=record), T0)
    assert settled.record is None or settled.record.recovery == record.recovery


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


# -- scaling -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("replicas", "to", "max_replicas", "direction"),
    [(5, 5, 7, "up"), (2, 2, 3, "down"), (10, 10, 13, "up"), (0, 0, 0, "down")],
)
def test_a_replicas_only_change_scales_without_a_new_revision(
    replicas: int, to: int, max_replicas: int, direction: str
) -> None:
    current = rs(V1, 1, 3)
    record = AppRecord(revisions=(entry(V1, 1),))
    step = plan_pass(make_target(make_app(V1, replicas=replicas)), snap(current, record=record), T0 + 5)
    assert step.actions == (scaled(current.name, to, replicas, max_replicas, T0 + 5),)
    assert step.events == (
        Event("ScalingReplicaSet", f"Scaled {direction} replica set {current.name} to {to}"),
    )
    assert (step.phase, step.revision, step.record, step.requeue_after) == (AppPhase.COMPLETE, 1, None, 1.0)


def test_scaling_a_stuck_rollout_is_proportional_as_in_the_documentation() -> None:
    # 10 replicas, maxSurge 3, maxUnavailable 2: old 8, new 5 (none available); scaled to 15
    strategy = Strategy(StrategyType.ROLLING_UPDATE, rolling=RollingParams(max_surge=3, max_unavailable=2))
    old = rs(V1, 1, 8, desired=10, max_replicas=13)
    new = rs(V2, 2, 5, 5, 0, phase="Running", desired=10, max_replicas=13)
    app = make_app(V2, replicas=15, strategy=strategy)
    now = T0 + 20
    step = plan_pass(make_target(app), snap(old, new, record=AppRecord(revisions=(entry(V1, 1),))), now)
    assert step.actions == (scaled(old.name, 11, 15, 18, now), scaled(new.name, 7, 15, 18, now))
    assert scaling_events(step) == [
        f"Scaled up replica set {old.name} to 11; Scaled up replica set {new.name} to 7",
    ]
    assert (step.phase, step.revision, step.record) == (AppPhase.PROGRESSING, 2, None)
    assert not any(isinstance(a, CreateReplicaSet) for a in step.actions)


@pytest.mark.parametrize(
    ("declared", "states", "expected"),
    [
        (4, [], 4),
        (0, [ReplicaSetState("a", "a", 1, 1.0, replicas=5)], 0),
        (None, [], 1),
        (None, [ReplicaSetState("a", "a", 1, 1.0, replicas=5, desired_replicas_annotation=3)], 5),
        (None, [ReplicaSetState("a", "a", 1, 1.0, replicas=0, desired_replicas_annotation=3)], 3),
        (
            None,
            [
                ReplicaSetState("a", "a", 1, 1.0, replicas=3, desired_replicas_annotation=4),
                ReplicaSetState("b", "b", 2, 2.0, replicas=2, desired_replicas_annotation=6),
            ],
            6,
        ),
        (
            None,
            [ReplicaSetState("a", "a", 1, 1.0, replicas=3), ReplicaSetState("b", "b", 2, 2.0, replicas=2)],
            5,
        ),
    ],
    ids=[
        "declared",
        "declared zero",
        "nothing runs",
        "one active: its size",
        "none active: the size it was last scaled for",
        "several active: largest annotation",
        "several active, no annotation: sum",
    ],
)
def test_effective_replicas(declared: int | None, states: list[ReplicaSetState], expected: int) -> None:
    new = states[-1] if states else None
    assert effective_replicas(declared, new, states[:-1]) == expected


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


# -- the seed 002 walk-through, pass by pass -----------------------------------------------------------

# (old spec/current/available, new spec/current/available) → the scales of the step: upstream's
# passes back to back (it re-syncs after its own writes), so a scale-down that makes room is
# followed by the scale-up it allows in the same step
SEED_002: list[tuple[tuple[int, int, int], tuple[int, int, int], list[tuple[str, int]]]] = [
    ((3, 3, 3), (1, 0, 0), []),  # new pod not there yet: wait
    ((3, 3, 3), (1, 1, 0), []),  # not available yet: wait
    ((3, 3, 3), (1, 1, 1), [("old", 2), ("new", 2)]),
    # the sizes count, not the pods (as upstream): a pod still stopping does not hold the new one back
    ((2, 3, 3), (1, 1, 1), [("new", 2)]),
    ((2, 2, 2), (1, 1, 1), [("new", 2)]),
    ((2, 2, 2), (2, 2, 2), [("old", 1), ("new", 3)]),
    ((1, 1, 1), (2, 2, 2), [("new", 3)]),
]


@pytest.mark.parametrize(("old_counts", "new_counts", "expected"), SEED_002)
def test_seed_002_rolling_steps(
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


def test_seed_002_first_pass_creates_the_new_replica_set_with_one_pod() -> None:
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
def test_seed_002_last_pass_completes_the_revision(old_pods: int) -> None:
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


# -- the progress deadline ---------------------------------------------------------------------------


def stuck(
    *, auto_rollback: bool = False, deadline: int = 60
) -> tuple[App, ObservedReplicaSet, ObservedReplicaSet]:
    """3 old pods serving, the new ReplicaSet's one pod never available; last progress at T0."""
    app = make_app(V2, auto_rollback=auto_rollback, deadline=deadline)
    old = rs(V1, 1, 3, progressed_at=T0)
    new = rs(V2, 2, 1, 1, 0, phase="Running", started_at=T0, progressed_at=T0)
    return app, old, new


@pytest.mark.parametrize(("elapsed", "failed"), [(30.0, False), (60.0, False), (61.0, True), (500.0, True)])
def test_no_progress_for_longer_than_the_deadline_fails_the_revision(elapsed: float, failed: bool) -> None:
    app, old, new = stuck()
    record = AppRecord(revisions=(entry(V1, 1),))
    now = T0 + elapsed
    step = plan_pass(make_target(app), snap(old, new, record=record), now)
    if not failed:
        assert (step.phase, step.record, step.actions) == (AppPhase.PROGRESSING, None, ())
        assert step.requeue_after == 1.0
        return
    message = "no progress for 60 s (0/3 new pods available)"
    assert (step.phase, step.message, step.requeue_after) == (
        AppPhase.FAILED,
        f"revision 2 failed: {message}",
        None,
    )
    assert step.actions == (PatchReplicaSet(new.name, None, ((PHASE_ANNOTATION, "Failed"),)),)
    assert step.events == (Event("ProgressDeadlineExceeded", f"Revision 2 failed: {message}", warning=True),)
    assert step.record is not None and step.record.pin is None
    failed_entry = step.record.entry(2)
    assert failed_entry == RevisionEntry(
        revision=2,
        template_hash=thash(V2),
        replica_set=new.name,
        commit=CommitRef(f"{2:040d}", "Ada", "commit 2"),
        change_cause="commit 2",
        images=(("web", V2),),
        started_at=T0,
        finished_at=now,
        outcome=Outcome.FAILED,
        message=message,
        reason="ProgressDeadlineExceeded",
    )
    progressing = step.status.condition(ConditionType.PROGRESSING)
    assert progressing is not None and progressing.reason == ConditionReason.PROGRESS_DEADLINE_EXCEEDED


def test_the_deadline_counts_from_the_last_durable_progress_mark() -> None:
    app, old, _ = stuck()
    new = rs(V2, 2, 1, 1, 0, phase="Running", started_at=T0, progressed_at=T0 + 50)
    step = plan_pass(make_target(app), snap(old, new), T0 + 100)
    assert step.phase == AppPhase.PROGRESSING
    step = plan_pass(make_target(app), snap(old, new), T0 + 111)
    assert step.phase == AppPhase.FAILED


def test_a_revision_failed_by_its_deadline_writes_nothing_more() -> None:
    app, old, new = stuck()
    new = rs(V2, 2, 1, 1, 0, phase="Failed", started_at=T0, progressed_at=T0)
    record = AppRecord(
        revisions=(entry(V1, 1), entry(V2, 2, Outcome.FAILED, reason="ProgressDeadlineExceeded", message="m"))
    )
    for elapsed in (61.0, 200.0, 5000.0):
        step = plan_pass(make_target(app), snap(old, new, record=record), T0 + elapsed)
        assert (step.phase, step.record, step.actions, step.events) == (AppPhase.FAILED, None, (), ())


def test_a_revision_failed_by_its_deadline_may_still_complete() -> None:
    app, old, _ = stuck()
    new = rs(V2, 2, 3, phase="Failed", progressed_at=T0)
    old = rs(V1, 1, 0, progressed_at=T0)
    record = AppRecord(
        revisions=(
            entry(V1, 1),
            entry(V2, 2, Outcome.FAILED, reason="ProgressDeadlineExceeded", message="slow"),
        )
    )
    step = plan_pass(make_target(app), snap(old, new, record=record), T0 + 300)
    assert step.phase == AppPhase.COMPLETE
    assert step.record is not None
    done = step.record.entry(2)
    assert done is not None
    assert (done.outcome, done.message) == (Outcome.COMPLETE, "completed after it failed: slow")


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


# -- Recreate, pass by pass ----------------------------------------------------------------------------


def dc_recreate(
    replicas: int = 3, *, mid: Hook | None = HOOK_MID, kind: AppKind = AppKind.DEPLOYMENT_CONFIG
) -> App:
    params = RecreateParams(pre=HOOK_PRE, mid=mid, post=HOOK_POST)
    return make_app(
        V2, replicas=replicas, kind=kind, strategy=Strategy(StrategyType.RECREATE, recreate=params)
    )


def recreate_pass(
    app: App,
    old: tuple[int, int],
    new: tuple[int, int, int],
    hooks: dict[str, str],
    now: float = T0 + 10,
) -> Step:
    """One Recreate pass: old (spec, current), new (spec, current, available), hook pod phases."""
    old_rs = rs(V1, 1, old[0], old[1], old[1], max_replicas=3)
    new_rs = rs(V2, 2, *new, phase="Running", max_replicas=3)
    pods = tuple(
        pod(new_rs, f"hook-{phase}", state, finished_at=T0 + 5 if state in ("Succeeded", "Failed") else None)
        for phase, state in hooks.items()
    )
    return plan_pass(
        make_target(app), snap(old_rs, new_rs, pods=pods, record=AppRecord(revisions=(entry(V1, 1),))), now
    )


OK = "Succeeded"
RECREATE_STORY: list[tuple[str, tuple[int, int], tuple[int, int, int], dict[str, str], str]] = [
    ("pre hook starts", (3, 3), (0, 0, 0), {}, "create hook-pre"),
    ("pre hook runs", (3, 3), (0, 0, 0), {"pre": "Running"}, "wait"),
    ("old scaled to 0", (3, 3), (0, 0, 0), {"pre": OK}, "scale old 0"),
    ("old pods stopping", (0, 2), (0, 0, 0), {"pre": OK}, "wait"),
    ("mid hook starts", (0, 0), (0, 0, 0), {"pre": OK}, "create hook-mid"),
    ("mid hook runs", (0, 0), (0, 0, 0), {"pre": OK, "mid": "Pending"}, "wait"),
    ("first replica", (0, 0), (0, 0, 0), {"pre": OK, "mid": OK}, "scale new 1"),
    ("first replica not ready", (0, 0), (1, 1, 0), {"pre": OK, "mid": OK}, "wait"),
    ("then all", (0, 0), (1, 1, 1), {"pre": OK, "mid": OK}, "scale new 3"),
    ("all not available yet", (0, 0), (3, 3, 2), {"pre": OK, "mid": OK}, "wait"),
    ("post hook starts", (0, 0), (3, 3, 3), {"pre": OK, "mid": OK}, "create hook-post"),
    ("post hook runs", (0, 0), (3, 3, 3), {"pre": OK, "mid": OK, "post": "Running"}, "wait"),
    ("complete", (0, 0), (3, 3, 3), {"pre": OK, "mid": OK, "post": OK}, "complete"),
    (
        "complete after a failed post hook",
        (0, 0),
        (3, 3, 3),
        {"pre": OK, "mid": OK, "post": "Failed"},
        "complete",
    ),
]


def describe(step: Step) -> str:
    """The step in the short form of RECREATE_STORY."""
    if step.phase == AppPhase.COMPLETE:
        return "complete"
    if not step.actions:
        return "wait"
    assert len(step.actions) == 1, step.actions
    action = step.actions[0]
    if isinstance(action, CreatePod):
        return f"create {action.spec.role}"
    assert isinstance(action, PatchReplicaSet) and action.replicas is not None
    which = "old" if action.name == rs_name(V1) else "new"
    return f"scale {which} {action.replicas}"


@pytest.mark.parametrize(("old", "new", "hooks", "expected"), named(RECREATE_STORY))
def test_recreate_ordering_for_a_deployment_config(
    old: tuple[int, int], new: tuple[int, int, int], hooks: dict[str, str], expected: str
) -> None:
    step = recreate_pass(dc_recreate(), old, new, hooks)
    assert describe(step) == expected
    if expected != "complete":
        assert (step.phase, step.record, step.requeue_after) == (AppPhase.PROGRESSING, None, 1.0)


def test_recreate_of_a_deployment_scales_straight_to_full_size() -> None:
    app = dc_recreate(kind=AppKind.DEPLOYMENT)
    assert describe(recreate_pass(app, (0, 0), (0, 0, 0), {"pre": OK, "mid": OK})) == "scale new 3"


def test_recreate_of_a_single_replica_deployment_config_has_no_first_replica_step() -> None:
    app = dc_recreate(replicas=1)
    step = recreate_pass(app, (0, 0), (0, 0, 0), {"pre": OK, "mid": OK})
    assert describe(step) == "scale new 1"
    assert describe(recreate_pass(app, (0, 0), (1, 1, 1), {"pre": OK, "mid": OK})) == "create hook-post"


def test_recreate_without_a_mid_hook_goes_from_old_down_to_new_up() -> None:
    app = dc_recreate(mid=None)
    assert describe(recreate_pass(app, (0, 0), (0, 0, 0), {"pre": OK})) == "scale new 1"


def test_recreate_events_and_hook_pod() -> None:
    step = recreate_pass(dc_recreate(), (3, 3), (0, 0, 0), {}, now=T0 + 10)
    create = only_create_pod(step)
    assert (create.spec.name, create.spec.role, create.spec.revision, create.spec.attempt) == (
        f"{rs_name(V2)}-hook-pre",
        "hook-pre",
        2,
        1,
    )
    assert (create.spec.first_attempt_at, create.spec.owner_name, create.spec.owner_uid) == (
        T0 + 10,
        rs_name(V2),
        f"uid-{rs_name(V2)}",
    )
    assert create.spec.spec()["containers"][0]["command"] == ["/bin/pre"]
    assert step.events == (Event("HookStarted", "Running pre hook of revision 2 (attempt 1)"),)
    assert step.message == "revision 2: pre hook running"
    down = recreate_pass(dc_recreate(), (3, 3), (0, 0, 0), {"pre": OK}, now=T0 + 20)
    assert down.actions == (scaled(rs_name(V1), 0, 3, 3, T0 + 20),)
    assert down.events == (Event("ScalingReplicaSet", f"Scaled down replica set {rs_name(V1)} to 0"),)


def test_recreate_completion_records_every_hook() -> None:
    step = recreate_pass(dc_recreate(), (0, 0), (3, 3, 3), {"pre": OK, "mid": OK, "post": "Failed"})
    assert step.record is not None
    done = step.record.entry(2)
    assert done is not None
    name = rs_name(V2)
    assert sorted(done.hooks, key=lambda h: h.phase) == [
        HookResult("mid", f"{name}-hook-mid", "Succeeded"),
        HookResult("post", f"{name}-hook-post", "Ignored"),
        HookResult("pre", f"{name}-hook-pre", "Succeeded"),
    ]
    assert sorted(step.log_pods) == [f"{name}-hook-mid", f"{name}-hook-post", f"{name}-hook-pre"]
    assert step.events == (Event("RolloutComplete", "Revision 2 is complete"),)


def test_a_failed_abort_hook_fails_the_revision() -> None:
    step = recreate_pass(dc_recreate(), (0, 0), (0, 0, 0), {"pre": OK, "mid": "Failed"})
    assert step.phase == AppPhase.FAILED
    assert step.message == "revision 2 failed: the mid hook failed (Abort policy)"
    assert step.record is not None
    failed = step.record.entry(2)
    assert failed is not None
    assert (failed.outcome, failed.reason, failed.message) == (
        Outcome.FAILED,
        "HookFailed",
        "the mid hook failed (Abort policy)",
    )
    assert step.actions == (PatchReplicaSet(rs_name(V2), None, ((PHASE_ANNOTATION, "Failed"),)),)
    assert step.events == (
        Event("HookFailed", "Revision 2 failed: the mid hook failed (Abort policy)", warning=True),
    )


def test_a_failed_ignore_hook_lets_the_rollout_go_on() -> None:
    params = RecreateParams(pre=Hook(FailurePolicy.IGNORE, "web", ("/bin/pre",)))
    app = make_app(V2, strategy=Strategy(StrategyType.RECREATE, recreate=params))
    step = recreate_pass(app, (3, 3), (0, 0, 0), {"pre": "Failed"})
    assert describe(step) == "scale old 0"


def test_a_retry_hook_waits_its_backoff_then_runs_again() -> None:
    params = RecreateParams(mid=Hook(FailurePolicy.RETRY, "web", ("/bin/mid",)))
    app = make_app(V2, strategy=Strategy(StrategyType.RECREATE, recreate=params))
    old_rs = rs(V1, 1, 0, max_replicas=3)
    new_rs = rs(V2, 2, 0, phase="Running", max_replicas=3)
    failed = pod(new_rs, "hook-mid", "Failed", attempt=2, first_attempt_at=T0, finished_at=T0 + 30)
    waiting = plan_pass(make_target(app), snap(old_rs, new_rs, pods=(failed,)), T0 + 33)
    # attempt 2 failed at T0+30: the third may start 10 s later
    assert (waiting.actions, waiting.requeue_after, waiting.phase) == ((), 7.0, AppPhase.PROGRESSING)
    again = plan_pass(make_target(app), snap(old_rs, new_rs, pods=(failed,)), T0 + 40)
    assert again.actions[0] == DeletePod(failed.name)
    create = again.actions[1]
    assert isinstance(create, CreatePod)
    assert (create.spec.name, create.spec.attempt, create.spec.first_attempt_at) == (failed.name, 3, T0)
    assert again.events == (Event("HookStarted", "Running mid hook of revision 2 (attempt 3)"),)
    # past the deadline (600 s from the first attempt) the hook fails the revision
    late = pod(new_rs, "hook-mid", "Failed", attempt=5, first_attempt_at=T0, finished_at=T0 + 590)
    gave_up = plan_pass(make_target(app), snap(old_rs, new_rs, pods=(late,)), T0 + 591)
    assert gave_up.phase == AppPhase.FAILED
    assert gave_up.record is not None
    failed_entry = gave_up.record.entry(2)
    assert failed_entry is not None and failed_entry.reason == "HookFailed"
    assert failed_entry.hooks == (HookResult("mid", late.name, "Failed", attempts=5),)


def test_a_hook_pod_of_an_earlier_revision_is_replaced() -> None:
    params = RecreateParams(pre=HOOK_PRE)
    app = make_app(V1, strategy=Strategy(StrategyType.RECREATE, recreate=params))
    # revision 3 reuses the ReplicaSet of revision 1, which still owns revision 1's pre hook pod
    reused = rs(V1, 3, 0, phase="Running", history="1", max_replicas=3)
    leftover = pod(reused, "hook-pre", "Succeeded", revision=1)
    step = plan_pass(make_target(app), snap(reused, rs(V2, 2, 3, max_replicas=3), pods=(leftover,)), T0)
    assert step.actions[0] == DeletePod(leftover.name)
    create = step.actions[1]
    assert isinstance(create, CreatePod) and (create.spec.revision, create.spec.attempt) == (3, 1)


def test_the_first_replica_that_never_gets_ready_fails_at_the_deadline() -> None:
    app = dc_recreate()
    old_rs = rs(V1, 1, 0, max_replicas=3, progressed_at=T0)
    new_rs = rs(V2, 2, 1, 1, 0, phase="Running", max_replicas=3, progressed_at=T0)
    pods = tuple(pod(new_rs, f"hook-{p}", OK, finished_at=T0) for p in ("pre", "mid"))
    ok = plan_pass(make_target(app), snap(old_rs, new_rs, pods=pods), T0 + 600)
    assert (ok.phase, ok.message) == (AppPhase.PROGRESSING, "waiting for the first replica")
    late = plan_pass(make_target(app), snap(old_rs, new_rs, pods=pods), T0 + 601)
    assert late.phase == AppPhase.FAILED
    assert late.message == "revision 2 failed: the first replica did not become ready in time"


# -- Custom ----------------------------------------------------------------------------------------------


def custom_pass(
    new: tuple[int, int, int], deployer: ObservedPod | str | None, now: float = T0 + 10, *, old: int = 3
) -> Step:
    app = make_app(V2, strategy=CUSTOM)
    old_rs = rs(V1, 1, old, max_replicas=3, progressed_at=T0)
    new_rs = rs(V2, 2, *new, phase="Running", max_replicas=3, progressed_at=T0)
    pods: tuple[ObservedPod, ...] = ()
    if isinstance(deployer, str):
        pods = (pod(new_rs, "deployer", deployer, finished_at=T0 + 5, exit_code=0 if deployer == OK else 3),)
    elif deployer is not None:
        pods = (deployer,)
    return plan_pass(make_target(app), snap(old_rs, new_rs, pods=pods), now)


def test_custom_starts_its_deployer() -> None:
    step = custom_pass((0, 0, 0), None)
    create = only_create_pod(step)
    assert (create.spec.name, create.spec.role, create.spec.revision) == (
        f"{rs_name(V2)}-deploy",
        "deployer",
        2,
    )
    container = create.spec.spec()["containers"][0]
    assert (container["image"], container["command"]) == ("org/deployer:1", ["/deploy"])
    assert step.actions == (create,)
    assert step.events == (Event("DeployerStarted", "Running the custom deployer of revision 2"),)
    assert (step.phase, step.message, step.requeue_after) == (
        AppPhase.PROGRESSING,
        "custom deployer started",
        1.0,
    )


def test_custom_replaces_a_deployer_of_an_earlier_revision() -> None:
    app_rs = rs(V2, 2, 0, phase="Running")
    stale = pod(app_rs, "deployer", OK, revision=1)
    step = custom_pass((0, 0, 0), stale)
    assert step.actions[0] == DeletePod(stale.name)
    assert isinstance(step.actions[1], CreatePod)


@pytest.mark.parametrize("phase", ["Pending", "Running"])
def test_custom_waits_for_its_deployer(phase: str) -> None:
    step = custom_pass((1, 1, 0), phase)
    assert (step.phase, step.message, step.actions, step.record) == (
        AppPhase.PROGRESSING,
        "custom deployer running",
        (),
        None,
    )


def test_custom_deployer_failure_fails_the_revision() -> None:
    step = custom_pass((1, 1, 0), "Failed")
    assert (step.phase, step.message) == (
        AppPhase.FAILED,
        "revision 2 failed: the custom deployer failed with exit code 3",
    )
    assert step.record is not None
    failed = step.record.entry(2)
    assert failed is not None
    assert (failed.outcome, failed.reason) == (Outcome.FAILED, "DeployerFailed")
    assert failed.hooks == (HookResult("deployer", f"{rs_name(V2)}-deploy", "Failed", exit_code=3),)
    assert step.log_pods == (f"{rs_name(V2)}-deploy",)


def test_custom_deployer_success_with_the_replica_set_ready_completes() -> None:
    step = custom_pass((3, 3, 3), OK, old=0)
    assert step.phase == AppPhase.COMPLETE
    assert step.record is not None
    done = step.record.entry(2)
    assert done is not None and done.outcome is Outcome.COMPLETE
    assert done.hooks == (HookResult("deployer", f"{rs_name(V2)}-deploy", "Succeeded", exit_code=0),)


@pytest.mark.parametrize(("new", "elapsed"), [((0, 0, 0), 300.0), ((3, 3, 1), 300.0), ((2, 2, 2), 599.0)])
def test_custom_deployer_success_waits_for_the_replica_set(new: tuple[int, int, int], elapsed: float) -> None:
    step = custom_pass(new, OK, now=T0 + elapsed)
    assert (step.phase, step.message, step.actions) == (
        AppPhase.PROGRESSING,
        "waiting for the deployer's ReplicaSet",
        (),
    )


def test_custom_deployer_success_without_an_available_replica_set_fails_at_the_deadline() -> None:
    step = custom_pass((3, 3, 1), OK, now=T0 + 700)
    assert step.phase == AppPhase.FAILED
    assert step.message == (
        f"revision 2 failed: the custom deployer exited 0 but {rs_name(V2)} has 1/3 available"
    )
    assert step.record is not None
    failed = step.record.entry(2)
    assert failed is not None and failed.reason == "ProgressDeadlineExceeded"


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


# -- bugs ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("phase", ["Pending", "Running"])
def test_a_hook_that_never_finishes_fails_the_revision_at_the_deadline(phase: str) -> None:
    app = make_app(
        V2, deadline=60, strategy=Strategy(StrategyType.RECREATE, recreate=RecreateParams(pre=HOOK_PRE))
    )
    old_rs = rs(V1, 1, 3, max_replicas=3)
    new_rs = rs(V2, 2, 0, phase="Running", max_replicas=3, started_at=T0, progressed_at=T0)
    hung = pod(new_rs, "hook-pre", phase, created_at=T0, first_attempt_at=T0)
    step = plan_pass(make_target(app), snap(old_rs, new_rs, pods=(hung,)), T0 + 3600)
    assert step.phase == AppPhase.FAILED
    assert step.record is not None
    failed = step.record.entry(2)
    assert failed is not None and failed.outcome is Outcome.FAILED


def test_recreate_of_an_app_without_replicas_keeps_the_live_count() -> None:
    app = make_app(V2, replicas=None, strategy=RECREATE)
    # the old revision ran 4 pods (an autoscaler's count) and was scaled down by this rollout
    old_rs = rs(V1, 1, 0, desired=4, max_replicas=4)
    new_rs = rs(V2, 2, 0, phase="Running", desired=4, max_replicas=4)
    step = plan_pass(make_target(app), snap(old_rs, new_rs), T0)
    assert step.actions == (scaled(new_rs.name, 4, 4, 4, T0),)


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
