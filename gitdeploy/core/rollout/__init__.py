"""The rollout planner: one pass for one app, as a pure function of desired and observed state.

:func:`plan_pass` looks at what the app should run (:class:`Target`) and what the cluster runs
(:class:`Snapshot`: the app's ReplicaSets, its hook and deployer pods, its record) at time ``now``,
and returns one :class:`Step`: the actions to take now, the record to write (if anything reached an
outcome), the events to record, the status, and when to look again. It never sleeps or waits.

Where the state of a rollout lives, so that a restarted gitdeploy resumes it:

* the new ReplicaSet's annotations: revision, commit, cause, phase (``Running``, ``Complete``,
  ``Failed``), when the rollout started and when it last made progress;
* the hook and deployer pods (named after the ReplicaSet, annotated with revision and attempt);
* the app record (outcomes of finished revisions, a rollback pin).

The record wins over an annotation: a crash between writing an outcome to the record and annotating
the ReplicaSet is repaired on the next pass. Rollout arithmetic is :mod:`gitdeploy.core.rolling`,
:mod:`~gitdeploy.core.proportional`, :mod:`~gitdeploy.core.progress` and
:mod:`~gitdeploy.core.retention`; this module sequences it with the strategies and hooks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from gitdeploy.core.drift import DRIFT_CORRECTED, describe_correction, find_drift
from gitdeploy.core.hooks import (
    DEPLOYER_ACTIVE_DEADLINE_SECONDS,
    DEPLOYER_ROLE,
    HookStatus,
    HookVerdict,
    build_deployer_pod,
    build_hook_pod,
    evaluate_hook,
    hook_role,
    lingering_pods,
)
from gitdeploy.core.models import (
    App,
    AppKind,
    FailurePolicy,
    Hook,
    PodReplacementPolicy,
    PodTemplate,
    StrategyType,
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
    PodCensus,
    PodSpec,
    ReplicaSetSpec,
    record_name,
)
from gitdeploy.core.progress import (
    ConditionReason,
    ConditionStatus,
    ConditionType,
    DeploymentCondition,
    DeploymentStatus,
    calculate_rollout_status,
    calculate_status,
    record_new_replica_set,
    record_pause,
    remove_condition,
    seconds_until_progress_check,
)
from gitdeploy.core.proportional import (
    compute_replica_annotations,
    is_scaling_event,
    needs_annotation_update,
    plan_proportional_scaling,
)
from gitdeploy.core.records import (
    AppRecord,
    Cause,
    CommitRef,
    HookResult,
    Outcome,
    Pin,
    RevisionEntry,
)
from gitdeploy.core.recovery import rebuild_record, revision_entry_of
from gitdeploy.core.replicasets import (
    ReplicaSetState,
    ScaleAction,
    apply_scale_actions,
    split_replica_sets,
    sum_replicas,
)
from gitdeploy.core.retention import select_replica_sets_to_delete
from gitdeploy.core.rolling import (
    Bound,
    merge_passes,
    plan_new_replica_set_scale,
    plan_rolling_passes,
    plan_rolling_step,
)
from gitdeploy.core.timestamps import format_timestamp, parse_timestamp

DEFAULT_REQUEUE_SECONDS = 1.0
"""How soon to look again at a rollout that waits for pods."""
WATCHED_REQUEUE_SECONDS = 5.0
"""The same while a watch of the app's ReplicaSets wakes the loop when pods become ready: only a
fallback for a change the watch missed (see ``plan_pass(watched=...)``)."""


# -- inputs ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """What an app should run now: git's template, or a pinned revision's after a rollback.

    ``auto_start`` is False when the template may not roll out by itself (a DeploymentConfig with no
    ConfigChange trigger): a rollout then starts only on request; scaling still applies.
    """

    app: App
    template: PodTemplate
    template_hash: str
    commit: CommitRef
    cause: str = Cause.CONFIG_CHANGE.value
    change_cause: str = ""
    auto_start: bool = True
    manifest_digest: str = ""
    pin: Pin | None = None
    """Set when the target comes from the record's pin rather than git."""


@dataclass(frozen=True)
class Snapshot:
    """What the cluster holds for one app. ``record_uid`` is empty when there is no record (a new
    app, or a record someone deleted); ``record_emptied``: the record exists but was emptied by hand."""

    replica_sets: tuple[ObservedReplicaSet, ...] = ()
    pods: tuple[ObservedPod, ...] = ()
    record: AppRecord = dataclasses.field(default_factory=AppRecord)
    record_uid: str = ""
    record_emptied: bool = False
    pod_census: PodCensus | None = None
    """The app's pods per ReplicaSet, terminating ones included; None when they were not
    listed (only strategies for which :func:`wants_pod_census` is true need them)."""


def wants_pod_census(app: App) -> bool:
    """Whether a pass over ``app`` needs its pods counted (:class:`PodCensus`): Recreate awaits
    the removal of every old pod, not only what ReplicaSet status reports, before the mid hook
    and before any new pod (seed 000: "Successful removal is awaited before any Pod of the new
    revision is created")."""
    return app.strategy.type is StrategyType.RECREATE or counts_terminating_pods(app)


def counts_terminating_pods(app: App) -> bool:
    """Whether terminating pods count against a rolling update's ``maxSurge``
    (``podReplacementPolicy: TerminationComplete``)."""
    return (
        app.strategy.type.is_rolling
        and app.pod_replacement_policy is PodReplacementPolicy.TERMINATION_COMPLETE
    )


# -- outputs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    reason: str
    message: str
    warning: bool = False


@dataclass(frozen=True)
class CreateReplicaSet:
    spec: ReplicaSetSpec


@dataclass(frozen=True)
class PatchReplicaSet:
    """Scale (``replicas`` not None) and/or annotate a ReplicaSet in one write."""

    name: str
    replicas: int | None
    annotations: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DeleteReplicaSet:
    name: str


@dataclass(frozen=True)
class CreatePod:
    spec: PodSpec


@dataclass(frozen=True)
class DeletePod:
    name: str


Action = CreateReplicaSet | PatchReplicaSet | DeleteReplicaSet | CreatePod | DeletePod


class AppPhase:
    """The one-word state of an app, as ``gitdeploy status`` shows it."""

    PROGRESSING = "Progressing"
    COMPLETE = "Complete"
    FAILED = "Failed"
    PAUSED = "Paused"
    WAITING = "Waiting"
    """A new template that may not roll out by itself (no ConfigChange trigger)."""


@dataclass(frozen=True)
class Step:
    """One pass's decisions. The executor writes ``record`` first, then runs ``actions`` in order."""

    phase: str
    message: str
    revision: int
    status: DeploymentStatus
    actions: tuple[Action, ...] = ()
    events: tuple[Event, ...] = ()
    record: AppRecord | None = None
    create_record: bool = False
    """Write ``record`` as a new ConfigMap (the app had none)."""
    requeue_after: float | None = None
    """Seconds until the next pass; None when the app is settled (look again on change only)."""
    log_pods: tuple[str, ...] = ()
    """Hook/deployer pods whose log tail the executor adds to ``record`` before writing it."""


# -- small helpers ---------------------------------------------------------------------------------


def effective_replicas(
    declared: int | None, new_rs: ReplicaSetState | None, old: Sequence[ReplicaSetState]
) -> int:
    """The app's replicas: the manifest's, else the live count (room for an autoscaler), else 1.

    >>> rs = ReplicaSetState("web-a", "a", 1, 1.0, replicas=5, desired_replicas_annotation=3)
    >>> effective_replicas(4, rs, []), effective_replicas(None, rs, []), effective_replicas(None, None, [])
    (4, 5, 1)
    """
    if declared is not None:
        return declared
    everything = [rs for rs in [new_rs, *old] if rs is not None]
    active = [rs for rs in everything if rs.is_active]
    if len(active) == 1:
        return active[0].replicas
    annotated = [
        rs.desired_replicas_annotation for rs in active if rs.desired_replicas_annotation is not None
    ]
    if annotated:
        return max(annotated)
    if active:
        return sum_replicas(active)
    # Nothing runs (a Recreate between scale-down and scale-up): the size it was last scaled for.
    remembered = [rs.desired_replicas_annotation for rs in everything if rs.desired_replicas_annotation]
    return max(remembered, default=1)


def _bounds(app: App) -> tuple[Bound, Bound]:
    if app.strategy.rolling is not None:
        return app.strategy.rolling.max_surge, app.strategy.rolling.max_unavailable
    return None, None


def _strategy_name(app: App) -> str:
    """The name the rollout math understands (Custom counts as Recreate: no surge, all at once)."""
    kind = app.strategy.type
    return kind.value if kind.is_rolling else StrategyType.RECREATE.value


def _intervals(app: App) -> tuple[float, float]:
    """``(after a scale, while waiting)``: DeploymentConfig's updatePeriod/interval, else 1 s."""
    rolling = app.strategy.rolling
    if app.kind is AppKind.DEPLOYMENT_CONFIG and rolling is not None:
        return float(rolling.update_period_seconds), float(rolling.interval_seconds)
    return DEFAULT_REQUEUE_SECONDS, DEFAULT_REQUEUE_SECONDS


def _scale_event(actions: Sequence[ScaleAction]) -> Event | None:
    """One ScalingReplicaSet event for a step's scales, each in the Kubernetes controller's words.

    >>> _scale_event([ScaleAction("web-1", 8, 6), ScaleAction("web-2", 2, 4)]).message
    'Scaled down replica set web-1 to 6; Scaled up replica set web-2 to 4'
    """
    scales = [
        f"Scaled {action.direction} replica set {action.name} to {action.to_replicas}"
        for action in actions
        if action.direction
    ]
    return Event("ScalingReplicaSet", "; ".join(scales)) if scales else None


STATUS_BEHIND = "waiting for the ReplicaSet controller to catch up with the last scale"
"""A step that scales nothing: a ReplicaSet's status is of an older spec (its
``observedGeneration`` is behind), so its counts (available pods above all) may be stale, and
scaling by them could take more pods down than the bounds allow. Its status update wakes the loop."""


# -- the pass --------------------------------------------------------------------------------------


@dataclass
class _Pass:
    """The working state of one :func:`plan_pass` call."""

    target: Target
    snap: Snapshot
    now: float
    previous: DeploymentStatus | None
    watched: bool = False

    def __post_init__(self) -> None:
        self.app = self.target.app
        self.by_name = {rs.name: rs for rs in self.snap.replica_sets}
        states = [rs.state for rs in self.snap.replica_sets]
        census = self.snap.pod_census
        if census is not None and counts_terminating_pods(self.app):
            states = [dataclasses.replace(rs, pods=census.of(rs.name)) for rs in states]
        self.new, self.old = split_replica_sets(states, self.target.template_hash)
        self.states = states
        self.replicas = effective_replicas(self.app.replicas, self.new, self.old)
        self.strategy = _strategy_name(self.app)
        self.surge, self.unavailable = _bounds(self.app)
        self.latest = max([self.snap.record.latest_revision, *(rs.revision for rs in states)])
        self.actions: list[Action] = []
        self.events: list[Event] = []
        self.record: AppRecord | None = None
        self.log_pods: list[str] = []
        self.scaled: list[ScaleAction] = []
        """This step's scales (creating a ReplicaSet with pods included), told in one event."""
        self.outcome: list[Event] = []
        """Told after the scales (a rollout that the step's scales complete)."""

    # -- plumbing ---------------------------------------------------------------------------------

    def step(self, phase: str, message: str, requeue: float | None, status: DeploymentStatus) -> Step:
        revision = self.new.revision if self.new is not None else self.latest
        scaled = _scale_event(self.scaled)
        return Step(
            phase=phase,
            message=message,
            revision=revision,
            status=status,
            actions=tuple(self.actions),
            events=(*self.events, *([scaled] if scaled is not None else []), *self.outcome),
            record=self.record,
            requeue_after=requeue,
            log_pods=tuple(self.log_pods),
        )

    def replica_annotations(self) -> tuple[tuple[str, str], ...]:
        marks = compute_replica_annotations(self.strategy, self.replicas, self.surge, self.unavailable)
        return (*marks.as_pairs(), (PROGRESSED_AT_ANNOTATION, format_timestamp(self.now)))

    def patch(self, name: str, replicas: int | None, pairs: Sequence[tuple[str, str]]) -> None:
        """Write ``pairs`` (and ``replicas``) to ReplicaSet ``name``, one write per ReplicaSet and
        step: an annotation-only write planned earlier in the step joins this one, and annotations
        join an earlier scale, which keeps its place (the order of scales keeps the pod bounds).
        A ReplicaSet this step creates is created with them: a scale moves its creation to the
        scale's place, after the step's scale-downs."""
        for index, earlier in enumerate(self.actions):
            if isinstance(earlier, CreateReplicaSet) and earlier.spec.name == name:
                spec = earlier.spec
                joined = tuple((dict(spec.annotations) | dict(pairs)).items())
                if replicas is None:
                    self.actions[index] = CreateReplicaSet(dataclasses.replace(spec, annotations=joined))
                    return
                del self.actions[index]
                self.actions.append(
                    CreateReplicaSet(dataclasses.replace(spec, replicas=replicas, annotations=joined))
                )
                return
            if not isinstance(earlier, PatchReplicaSet) or earlier.name != name:
                continue
            joined = tuple((dict(earlier.annotations) | dict(pairs)).items())
            if replicas is None:
                self.actions[index] = PatchReplicaSet(name, earlier.replicas, joined)
                return
            del self.actions[index]
            pairs = joined
            break
        self.actions.append(PatchReplicaSet(name, replicas, tuple(pairs)))

    def scale(self, actions: Sequence[ScaleAction]) -> None:
        for action in actions:
            self.patch(action.name, action.to_replicas, self.replica_annotations())
        self.scaled += actions
        self.states = list(apply_scale_actions(self.states, actions))
        self.new, self.old = split_replica_sets(self.states, self.target.template_hash)

    def resync(self, first: Sequence[ScaleAction] = ()) -> tuple[ScaleAction, ...]:
        """The rolling scales of this step: ``first`` (proportional scaling), then the passes the
        Kubernetes controller makes back to back by re-syncing after its own writes, merged into
        one write per ReplicaSet (:func:`~gitdeploy.core.rolling.plan_rolling_passes`). A
        DeploymentConfig takes one pass per step: its ``updatePeriodSeconds`` paces the scales."""
        assert self.new is not None
        if self.app.kind is AppKind.DEPLOYMENT_CONFIG:
            return tuple(first) or plan_rolling_step(*self.bounds(), self.new, self.old)
        return merge_passes(plan_rolling_passes(*self.bounds(), self.new, self.old, first=first))

    def bounds(self) -> tuple[str, int, Bound, Bound]:
        """``(strategy, replicas, maxSurge, maxUnavailable)``, as the rolling math takes them."""
        return self.strategy, self.replicas, self.surge, self.unavailable

    def rolling_intervals(self) -> tuple[float, float]:
        """``(after a scale, while waiting)`` of a rolling update (see :func:`_intervals`), which
        waits for ReplicaSet status only: while a watch tells the loop of it, they are fallbacks."""
        if self.watched and self.app.kind is not AppKind.DEPLOYMENT_CONFIG:
            return WATCHED_REQUEUE_SECONDS, WATCHED_REQUEUE_SECONDS
        return _intervals(self.app)

    def annotate(self, name: str, *pairs: tuple[str, str]) -> None:
        self.patch(name, None, pairs)

    def status(self) -> DeploymentStatus:
        """The status after this pass's actions, with the progress deadline applied."""
        return calculate_rollout_status(
            app=self.app.name,
            strategy=self.strategy,
            replicas=self.replicas,
            max_surge=self.surge,
            max_unavailable=self.unavailable,
            generation=0,
            progress_deadline_seconds=self.app.progress_deadline_seconds,
            new_rs=self.new,
            replica_sets=self.states,
            previous=self.baseline(),
            now=self.now,
        )

    def last_progress(self) -> float:
        """When the rollout last provably progressed: from durable marks (annotations, hook pods)."""
        times = [self.started_at()]
        for rs in self.snap.replica_sets:
            stamp = parse_timestamp(rs.annotation(PROGRESSED_AT_ANNOTATION))
            if stamp is not None:
                times.append(stamp)
        times += [p.finished_at for p in self.current_pods() if p.finished_at is not None]
        return max(times)

    def baseline(self) -> DeploymentStatus:
        """The previous status, with its progress time moved up to the durable marks.

        After a restart there is no previous status in memory; the current counts then serve
        (nothing looks like progress) with the last durable progress time.
        """
        previous = self.previous
        if previous is None:
            previous = calculate_status(
                strategy=self.strategy,
                replicas=self.replicas,
                max_surge=self.surge,
                max_unavailable=self.unavailable,
                generation=0,
                new_rs=self.new,
                replica_sets=[rs.state for rs in self.snap.replica_sets],
                previous=DeploymentStatus(),
                now=self.now,
            )
        marked = self.last_progress()
        current = previous.condition(ConditionType.PROGRESSING)
        if current is None or current.status != ConditionStatus.TRUE or current.last_update_time < marked:
            rs_name = self.new.name if self.new is not None else self.app.name
            updated = DeploymentCondition(
                ConditionType.PROGRESSING,
                ConditionStatus.TRUE,
                ConditionReason.REPLICA_SET_UPDATED,
                f'ReplicaSet "{rs_name}" is progressing.',
                marked,
                marked,
            )
            previous = dataclasses.replace(
                previous,
                conditions=(*remove_condition(previous.conditions, ConditionType.PROGRESSING), updated),
            )
        return previous

    # -- the current revision ------------------------------------------------------------------------

    def new_observed(self) -> ObservedReplicaSet | None:
        return self.by_name.get(self.new.name) if self.new is not None else None

    def started_at(self) -> float:
        observed = self.new_observed()
        stamp = parse_timestamp(observed.annotation(STARTED_AT_ANNOTATION)) if observed else None
        if stamp is not None:
            return stamp
        return self.new.created_at if self.new is not None else self.now

    def phase(self) -> str:
        """The current revision's phase: the record's outcome if it has one, else the annotation."""
        if self.new is None:
            return ""
        entry = self.snap.record.entry(self.new.revision)
        if (
            entry is not None
            and entry.outcome is not Outcome.RUNNING
            and entry.template_hash == self.new.template_hash
        ):
            return entry.outcome.value
        observed = self.new_observed()
        return observed.annotation(PHASE_ANNOTATION, Outcome.RUNNING.value) if observed else ""

    def current_pods(self) -> list[ObservedPod]:
        if self.new is None:
            return []
        prefix = f"{self.new.name}-"
        return [p for p in self.snap.pods if p.name.startswith(prefix) and p.revision == self.new.revision]

    def pod(self, role: str) -> ObservedPod | None:
        if self.new is None:
            return None
        prefix = f"{self.new.name}-"
        return next((p for p in self.snap.pods if p.role == role and p.name.startswith(prefix)), None)

    def deadline_seconds(self) -> int:
        return self.app.progress_deadline_seconds

    # -- starting a rollout --------------------------------------------------------------------------

    def needs_new_revision(self) -> bool:
        return starts_rollout(self.target.template_hash, self.snap)

    def start(self) -> Step:
        revision = self.latest + 1
        target = self.target
        self.cancel_superseded(revision)
        annotations: list[tuple[str, str]] = [
            (REVISION_ANNOTATION, str(revision)),
            (COMMIT_ANNOTATION, target.commit.sha),
            (AUTHOR_ANNOTATION, target.commit.author),
            (SUBJECT_ANNOTATION, target.commit.subject),
            (CHANGE_CAUSE_ANNOTATION, target.change_cause or target.commit.subject),
            (CAUSE_ANNOTATION, target.cause),
            (PHASE_ANNOTATION, Outcome.RUNNING.value),
            (STARTED_AT_ANNOTATION, format_timestamp(self.now)),
        ]
        staged = (
            self.app.strategy.type is StrategyType.CUSTOM
            or bool(self.app.strategy.hooks)
            or not (self.app.strategy.type.is_rolling)
        )
        created = self.new is None
        if self.new is None:
            # Created empty here; the step's first scale of it (below) creates it with its pods.
            spec = ReplicaSetSpec(
                namespace=self.app.namespace,
                app=self.app.name,
                template=target.template,
                template_hash=target.template_hash,
                selector_labels=self.app.selector.match_labels,
                replicas=0,
                annotations=(*annotations, *self.replica_annotations()),
                min_ready_seconds=self.app.min_ready_seconds,
            )
            self.actions.append(CreateReplicaSet(spec))
            name = spec.name
            self.states = [*self.states, ReplicaSetState(name, target.template_hash, revision, self.now)]
            self.new, self.old = split_replica_sets(self.states, target.template_hash)
        else:
            name = self.new.name
            history = [h for h in self.by_name[name].annotation(REVISION_HISTORY_ANNOTATION).split(",") if h]
            history.append(str(self.new.revision))
            annotations.append((REVISION_HISTORY_ANNOTATION, ",".join(history[-10:])))
            self.annotate(name, *annotations, *self.replica_annotations())
            self.states = [
                dataclasses.replace(rs, revision=revision) if rs.name == name else rs for rs in self.states
            ]
            self.new, self.old = split_replica_sets(self.states, target.template_hash)
        requeue = 0.0  # hooks and Recreate go on at once
        if not staged:
            assert self.new is not None
            if created and self.app.kind is AppKind.DEPLOYMENT_CONFIG:
                # A DeploymentConfig's step is one pass, besides the creation that sizes its ReplicaSet.
                grown = plan_new_replica_set_scale(*self.bounds(), self.new, self.old)
                self.scale([grown] if grown is not None else [])
            self.scale(self.resync())  # the first wave at once, not one scale per pass
            requeue = self.rolling_intervals()[0]
        cause = f" ({target.cause})" if target.cause != Cause.CONFIG_CHANGE.value else ""
        self.events.insert(
            0,
            Event(
                "RolloutStarted",
                f"Rolling out revision {revision}{cause}: commit {target.commit.short} "
                f"{target.commit.subject!r} by {target.commit.author or 'unknown'}",
            ),
        )
        if target.pin is not None and target.cause == Cause.AUTO_ROLLBACK.value:
            self.events.append(
                Event(
                    "DeploymentRollback",
                    f"Rolled back {self.app.name} to revision {target.pin.revision}",
                    warning=True,
                )
            )
        status = record_new_replica_set(
            self.baseline(),
            name,
            created=created,
            progress_deadline_seconds=self.deadline_seconds(),
            now=self.now,
        )
        return self.step(AppPhase.PROGRESSING, f"revision {revision} started", requeue, status)

    def cancel_superseded(self, revision: int) -> None:
        """A rollout still running when a newer template arrives is Cancelled (rollover)."""
        record = self.snap.record
        for rs in self.snap.replica_sets:
            if rs.state.template_hash == self.target.template_hash:
                continue
            if rs.annotation(PHASE_ANNOTATION) != Outcome.RUNNING.value:
                continue
            entry = record.entry(rs.state.revision)
            if entry is not None and entry.outcome is not Outcome.RUNNING:
                continue
            cancelled = dataclasses.replace(
                self.entry_for(rs, Outcome.CANCELLED),
                message=f"superseded by revision {revision} before it completed",
            )
            record = record.with_entry(cancelled)
            self.events.append(
                Event("RolloutCancelled", f"Revision {rs.state.revision} superseded by revision {revision}")
            )
        if record is not self.snap.record:
            self.record = record

    # -- outcomes ------------------------------------------------------------------------------------

    def entry_for(self, rs: ObservedReplicaSet, outcome: Outcome) -> RevisionEntry:
        """The revision log entry of ``rs``'s revision, from its annotations and hook pods."""
        template = rs.template or self.target.template
        policies = {phase: hook.failure_policy for phase, hook in self.app.strategy.hooks.items()}

        def outcome_of(pod: ObservedPod) -> str:
            phase = pod.role.removeprefix("hook-")
            ignored = phase == "post" or policies.get(phase) is FailurePolicy.IGNORE
            return "Ignored" if pod.phase == "Failed" and ignored else pod.phase

        hooks = tuple(
            HookResult(
                phase=p.role.removeprefix("hook-"),
                pod=p.name,
                outcome=outcome_of(p),
                attempts=p.attempt,
                exit_code=p.exit_code,
            )
            for p in self.snap.pods
            if p.name.startswith(f"{rs.name}-") and p.revision == rs.state.revision
        )
        self.log_pods += [h.pod for h in hooks if h.outcome in ("Succeeded", "Failed", "Ignored")]
        pin = self.target.pin
        rolled_back = pin is not None and pin.template_hash == rs.state.template_hash
        return dataclasses.replace(
            revision_entry_of(rs, outcome, template),
            finished_at=self.now,
            hooks=hooks,
            rolled_back_from=pin.rolled_back_from if pin is not None and rolled_back else None,
            rolled_back_to=pin.revision if pin is not None and rolled_back else None,
            by=pin.by if pin is not None and rolled_back else "",
        )

    def finish(self, status: DeploymentStatus) -> Step:
        assert self.new is not None
        observed = self.by_name[self.new.name]
        previous = self.snap.record.entry(self.new.revision)
        entry = self.entry_for(observed, Outcome.COMPLETE)
        if previous is not None and previous.outcome is Outcome.FAILED:
            entry = dataclasses.replace(entry, message=f"completed after it failed: {previous.message}")
        self.record = (self.record or self.snap.record).with_entry(entry)
        self.annotate(self.new.name, (PHASE_ANNOTATION, Outcome.COMPLETE.value))
        self.outcome.append(Event("RolloutComplete", f"Revision {self.new.revision} is complete"))
        waits = self.cleanup()
        requeue = DEFAULT_REQUEUE_SECONDS if waits else None
        return self.step(AppPhase.COMPLETE, f"revision {self.new.revision} complete", requeue, status)

    def fail(self, reason: str, message: str, status: DeploymentStatus) -> Step:
        """Mark the current revision Failed; with auto-rollback, pin the last Complete revision."""
        assert self.new is not None
        if self.phase() == Outcome.FAILED.value:  # already recorded: keep waiting, write nothing
            return self.step(AppPhase.FAILED, f"revision {self.new.revision} failed: {message}", None, status)
        observed = self.by_name[self.new.name]
        entry = dataclasses.replace(self.entry_for(observed, Outcome.FAILED), message=message, reason=reason)
        record = (self.record or self.snap.record).with_entry(entry)
        self.annotate(self.new.name, (PHASE_ANNOTATION, Outcome.FAILED.value))
        self.events.append(Event(reason, f"Revision {self.new.revision} failed: {message}", warning=True))
        requeue: float | None = None
        if self.app.auto_rollback:
            failing = self.new.template_hash
            earlier = [
                e
                for e in record.revisions
                if e.outcome is Outcome.COMPLETE
                and e.revision < self.new.revision
                and e.template_hash != failing
            ]
            good = max(earlier, key=lambda e: e.revision, default=None)
            reusable = good is not None and any(rs.template_hash == good.template_hash for rs in self.old)
            if good is not None and reusable and good.template_hash != self.new.template_hash:
                record = dataclasses.replace(
                    record,
                    pin=Pin(
                        revision=good.revision,
                        template_hash=good.template_hash,
                        manifest_digest=self.target.manifest_digest,
                        reason=f"revision {self.new.revision} failed: {message}",
                        cause=Cause.AUTO_ROLLBACK.value,
                        rolled_back_from=self.new.revision,
                        by="gitdeploy (autoRollback)",
                    ),
                )
                requeue = 0.0
                message += f"; rolling back to revision {good.revision}"
            elif good is None:
                message += "; no earlier Complete revision to roll back to"
            else:
                message += (
                    f"; revision {good.revision}'s ReplicaSet is gone: roll back with `gitdeploy rollback`"
                )
        self.record = record
        return self.step(AppPhase.FAILED, f"revision {self.new.revision} failed: {message}", requeue, status)

    def cleanup(self) -> bool:
        """Delete old ReplicaSets beyond the revision history limit (only once a rollout is done).

        One this step scaled waits for a status that shows it without pods (Kubernetes deletes no
        ReplicaSet before): True when one waits so."""
        doomed = select_replica_sets_to_delete(
            self.states, self.target.template_hash, self.app.revision_history_limit
        )
        scaled = {action.name for action in self.scaled}
        for rs in doomed:
            if rs.name not in scaled:
                self.actions.append(DeleteReplicaSet(rs.name))
        return any(rs.name in scaled for rs in doomed)

    # -- hooks ---------------------------------------------------------------------------------------

    def run_hook(self, phase: str, hook: Hook, template: PodTemplate) -> tuple[HookStatus, float | None]:
        """Advance the hook of ``phase``; returns its status and, unless done, when to look again."""
        assert self.new is not None
        role = hook_role(phase)
        pod = self.pod(role)
        first_start = self.now
        if pod is not None and pod.revision == self.new.revision:
            first_start = pod.first_attempt_at if pod.first_attempt_at is not None else pod.created_at
        status = evaluate_hook(
            pod,
            hook.failure_policy,
            phase,
            revision=self.new.revision,
            deadline=first_start + self.deadline_seconds(),
            now=self.now,
        )
        _, waiting = _intervals(self.app)
        if status.verdict in (HookVerdict.START, HookVerdict.RETRY):
            attempt = 1 if status.verdict is HookVerdict.START or pod is None else pod.attempt + 1
            if pod is not None:
                self.actions.append(DeletePod(pod.name))
            self.actions.append(CreatePod(self.hook_pod(phase, hook, template, attempt, first_start)))
            self.events.append(
                Event(
                    "HookStarted", f"Running {phase} hook of revision {self.new.revision} (attempt {attempt})"
                )
            )
            return status, waiting
        if status.verdict is HookVerdict.WAIT_RETRY:
            assert status.retry_at is not None
            return status, max(status.retry_at - self.now, 0.0)
        if status.verdict is HookVerdict.RUNNING:
            return status, waiting
        return status, None

    def hook_pod(
        self, phase: str, hook: Hook, template: PodTemplate, attempt: int, first_attempt_at: float
    ) -> PodSpec:
        assert self.new is not None
        observed = self.new_observed()
        return build_hook_pod(
            namespace=self.app.namespace,
            app=self.app.name,
            replica_set=self.new.name,
            owner_uid=observed.uid if observed is not None else "",
            revision=self.new.revision,
            attempt=attempt,
            first_attempt_at=first_attempt_at,
            phase=phase,
            hook=hook,
            template=template,
            resources_json=self.app.strategy.resources_json,
            active_deadline_seconds=self.deadline_seconds(),  # each attempt may use the whole deadline
        )

    def hook_gate(self, phase: str, hook: Hook | None, status: DeploymentStatus) -> Step | None:
        """None when the hook is absent or done; otherwise the Step to return this pass.

        An automatic rollback runs no hooks: like OpenShift scaling the last good deployment back up,
        it restores what ran, and the hooks (the failed revision's strategy) are what just failed; a
        failed mid hook would otherwise fail the rollback too, with every old pod already stopped."""
        if hook is None or self.new is None or self.target.cause == Cause.AUTO_ROLLBACK.value:
            return None
        verdict, requeue = self.run_hook(phase, hook, self.target.template)
        if verdict.verdict.done:
            return None
        if verdict.verdict is HookVerdict.FAILED:
            pod = self.pod(hook_role(phase))
            hung = pod is not None and (not pod.terminal or pod.reason == "DeadlineExceeded")
            what = f"did not finish within its deadline ({self.deadline_seconds()} s)" if hung else "failed"
            policy = hook.failure_policy.value
            return self.fail("HookFailed", f"the {phase} hook {what} ({policy} policy)", status)
        return self.step(
            AppPhase.PROGRESSING, f"revision {self.new.revision}: {phase} hook running", requeue, status
        )

    # -- strategies ----------------------------------------------------------------------------------

    def rolling(self) -> Step:
        assert self.new is not None
        params = self.app.strategy.rolling
        status = self.status()
        gate = self.hook_gate("pre", params.pre if params else None, status)
        if gate is not None:
            return gate
        after_scale, waiting = self.rolling_intervals()
        if not self.observed_current():
            return self.step(AppPhase.PROGRESSING, STATUS_BEHIND, waiting, status)
        proportional: tuple[ScaleAction, ...] = ()
        if is_scaling_event(self.replicas, self.states):
            proportional = plan_proportional_scaling(
                self.strategy, self.replicas, self.surge, self.unavailable, self.new, self.old
            )
        self.scale(self.resync(proportional))
        post = params.post if params else None
        if self.actions and post is None and self.drains_to_completion():
            return self.finish(self.status())
        status = self.status()
        if self.actions:
            return self.step(AppPhase.PROGRESSING, self.progress_message(), after_scale, status)
        return self.after_scaling(post, status, waiting)

    def drains_to_completion(self) -> bool:
        """Whether this step's scales complete the rollout: they take the last old ReplicaSets to 0
        while every new pod is available. If so, the step counts the pods of those ReplicaSets as
        gone, as Kubernetes does once their ReplicaSet controller deleted them, right after the
        write (terminating pods are not counted): the Deployment controller's next sync finds the
        rollout complete; the step that makes it so says so, and the rollout takes one pass fewer."""
        drained = {action.name for action in self.scaled if action.to_replicas == 0}
        states = [
            dataclasses.replace(rs, current=0, ready=0, available=0) if rs.name in drained else rs
            for rs in self.states
        ]
        new, old = split_replica_sets(states, self.target.template_hash)
        if not drained or not self.is_complete(new, old):
            return False
        self.states, self.new, self.old = states, new, old
        return True

    def recreate(self) -> Step:
        assert self.new is not None
        params = self.app.strategy.recreate
        status = self.status()
        gate = self.hook_gate("pre", params.pre if params else None, status)
        if gate is not None:
            return gate
        _, waiting = _intervals(self.app)
        if not self.observed_current():
            return self.step(AppPhase.PROGRESSING, STATUS_BEHIND, waiting, status)
        active_old = [rs for rs in self.old if rs.is_active]
        if active_old:
            self.scale([ScaleAction(rs.name, rs.replicas, 0) for rs in active_old])
            return self.step(AppPhase.PROGRESSING, "scaling down the old revision", waiting, self.status())
        if self.old_pods_exist():
            if self.timed_out(status):
                return self.fail("ProgressDeadlineExceeded", "the old pods did not stop in time", status)
            return self.step(AppPhase.PROGRESSING, "waiting for old pods to stop", waiting, status)
        gate = self.hook_gate("mid", params.mid if params else None, status)
        if gate is not None:
            return gate
        first_replica = self.app.kind is AppKind.DEPLOYMENT_CONFIG and self.replicas > 1
        if first_replica and self.new.replicas == 0:
            self.scale([ScaleAction(self.new.name, 0, 1)])
            return self.step(AppPhase.PROGRESSING, "starting the first replica", waiting, self.status())
        if first_replica and self.new.replicas == 1 and self.new.available < 1:
            if self.timed_out(status):
                return self.fail(
                    "ProgressDeadlineExceeded", "the first replica did not become ready in time", status
                )
            return self.step(AppPhase.PROGRESSING, "waiting for the first replica", waiting, status)
        if self.new.replicas != self.replicas:
            self.scale([ScaleAction(self.new.name, self.new.replicas, self.replicas)])
            return self.step(AppPhase.PROGRESSING, self.progress_message(), waiting, self.status())
        return self.after_scaling(params.post if params else None, status, waiting)

    def old_pods_exist(self) -> bool:
        """A pod of an old ReplicaSet still exists: counted by its status, or, terminating ones
        included, in the pod census (which a ReplicaSet's status leaves out)."""
        census = self.snap.pod_census
        return any(rs.current > 0 or (census is not None and census.of(rs.name) > 0) for rs in self.old)

    def custom(self) -> Step:
        assert self.new is not None and self.app.strategy.custom is not None
        status = self.status()
        _, waiting = _intervals(self.app)
        pod = self.pod(DEPLOYER_ROLE)
        if pod is None or pod.revision != self.new.revision:
            if self.phase() == Outcome.FAILED.value:  # its deployer was stopped: never start another
                entry = self.snap.record.entry(self.new.revision)
                why = entry.message if entry is not None else "the custom deployer was stopped"
                return self.held(AppPhase.FAILED, f"revision {self.new.revision} failed: {why}")
            observed = self.new_observed()
            if pod is not None:
                self.actions.append(DeletePod(pod.name))
            self.actions.append(
                CreatePod(
                    build_deployer_pod(
                        namespace=self.app.namespace,
                        app=self.app.name,
                        replica_set=self.new.name,
                        owner_uid=observed.uid if observed is not None else "",
                        revision=self.new.revision,
                        params=self.app.strategy.custom,
                        template=self.target.template,
                        resources_json=self.app.strategy.resources_json,
                        active_deadline_seconds=self.app.strategy.active_deadline_seconds
                        or DEPLOYER_ACTIVE_DEADLINE_SECONDS,
                    )
                )
            )
            self.events.append(
                Event("DeployerStarted", f"Running the custom deployer of revision {self.new.revision}")
            )
            return self.step(AppPhase.PROGRESSING, "custom deployer started", waiting, status)
        if pod.phase == "Failed":
            code = f" with exit code {pod.exit_code}" if pod.exit_code is not None else ""
            return self.fail("DeployerFailed", f"the custom deployer failed{code}", status)
        if pod.phase != "Succeeded":
            if self.timed_out(status):
                return self.fail(
                    "ProgressDeadlineExceeded", "the custom deployer did not finish in time", status
                )
            return self.step(AppPhase.PROGRESSING, "custom deployer running", waiting, status)
        if (
            self.new.replicas == self.replicas
            and self.new.available >= self.replicas
            and self.observed_current()
        ):
            return self.finish(status)
        if self.timed_out(status):
            return self.fail(
                "ProgressDeadlineExceeded",
                f"the custom deployer exited 0 but {self.new.name} has {self.new.available}/{self.replicas} "
                "available",
                status,
            )
        return self.step(AppPhase.PROGRESSING, "waiting for the deployer's ReplicaSet", waiting, status)

    def after_scaling(self, post: Hook | None, status: DeploymentStatus, waiting: float) -> Step:
        """No scaling to do: complete (after the post hook), failed by deadline, or still waiting."""
        assert self.new is not None
        if self.is_complete():
            gate = self.hook_gate("post", post, status)
            if gate is not None:
                return gate
            return self.finish(status)
        if self.timed_out(status) and self.phase() != Outcome.FAILED.value:
            return self.fail(
                "ProgressDeadlineExceeded",
                f"no progress for {self.deadline_seconds()} s "
                f"({self.new.available}/{self.replicas} new pods available)",
                status,
            )
        requeue = seconds_until_progress_check(
            status,
            replicas=self.replicas,
            generation=0,
            progress_deadline_seconds=self.deadline_seconds(),
            now=self.now,
        )
        phase = AppPhase.FAILED if self.phase() == Outcome.FAILED.value else AppPhase.PROGRESSING
        return self.step(phase, self.progress_message(), min(waiting, requeue or waiting), status)

    def timed_out(self, status: DeploymentStatus) -> bool:
        condition = status.condition(ConditionType.PROGRESSING)
        return condition is not None and condition.reason == ConditionReason.PROGRESS_DEADLINE_EXCEEDED

    def observed_current(self) -> bool:
        return all(rs.observed_generation_current for rs in self.snap.replica_sets)

    def is_complete(
        self, new: ReplicaSetState | None = None, old: Sequence[ReplicaSetState] | None = None
    ) -> bool:
        """Every pod new and available, none old: this pass's ReplicaSets, or ``new`` and ``old``."""
        new = new or self.new
        assert new is not None
        return (
            new.replicas == self.replicas
            and new.available >= self.replicas
            and new.current == self.replicas
            and all(rs.replicas == 0 and rs.current == 0 for rs in (self.old if old is None else old))
            and self.observed_current()
        )

    def progress_message(self) -> str:
        assert self.new is not None
        old = sum(rs.current for rs in self.old)
        return f"revision {self.new.revision}: {self.new.available} of {self.replicas} new pods available" + (
            f", {old} old pods left" if old else ""
        )

    # -- settled and held apps -----------------------------------------------------------------------

    def settled(self) -> Step:
        """The current revision is Complete: keep its size, repair drift, apply the history limit."""
        assert self.new is not None
        drift = find_drift(self.new, self.old, self.replicas)
        drifted = bool(drift)
        if is_scaling_event(self.replicas, self.states):
            self.scale(
                plan_proportional_scaling(
                    self.strategy, self.replicas, self.surge, self.unavailable, self.new, self.old
                )
            )
            drift = ()  # the app's size changed in git: not told apart from a hand change
        elif drifted and self.app.strategy.type.is_rolling:
            self.scale(self.resync())
        elif drifted:
            self.scale([ScaleAction(rs.name, rs.replicas, 0) for rs in self.old if rs.is_active])
            if self.new.replicas != self.replicas:
                self.scale([ScaleAction(self.new.name, self.new.replicas, self.replicas)])
        elif needs_annotation_update(
            self.new, compute_replica_annotations(self.strategy, self.replicas, self.surge, self.unavailable)
        ):
            self.annotate(self.new.name, *self.replica_annotations()[:2])
        if drift:
            scaled_to = {action.name: action.to_replicas for action in self.scaled}
            self.events.append(Event(DRIFT_CORRECTED, describe_correction(drift, scaled_to), warning=True))
        if self.by_name[self.new.name].annotation(PHASE_ANNOTATION) != Outcome.COMPLETE.value:
            self.annotate(self.new.name, (PHASE_ANNOTATION, Outcome.COMPLETE.value))
        self.cleanup()
        status = self.status()
        settled = not any(isinstance(a, PatchReplicaSet) and a.replicas is not None for a in self.actions)
        requeue = None if settled and self.is_complete() else DEFAULT_REQUEUE_SECONDS
        return self.step(AppPhase.COMPLETE, f"revision {self.new.revision} complete", requeue, status)

    def held(self, phase: str, message: str) -> Step:
        """No rollout may progress (paused, or waiting for a manual deploy): only scaling applies."""
        new = self.new if not self.needs_new_revision() else None
        old = [rs for rs in self.states if new is None or rs.name != new.name]
        if is_scaling_event(self.replicas, self.states):
            self.scale(
                plan_proportional_scaling(
                    self.strategy, self.replicas, self.surge, self.unavailable, new, old
                )
            )
        status = calculate_status(
            strategy=self.strategy,
            replicas=self.replicas,
            max_surge=self.surge,
            max_unavailable=self.unavailable,
            generation=0,
            new_rs=new,
            replica_sets=self.states,
            previous=self.previous or DeploymentStatus(),
            now=self.now,
        )
        status = record_pause(
            status,
            paused=phase == AppPhase.PAUSED,
            progress_deadline_seconds=self.deadline_seconds(),
            now=self.now,
        )
        return self.step(phase, message, None, status)


def starts_rollout(template_hash: str, snap: Snapshot) -> bool:
    """Whether a pass towards ``template_hash`` would start a new revision (a cheap pre-check)."""
    states = [rs.state for rs in snap.replica_sets]
    new, _ = split_replica_sets(states, template_hash)
    latest = max([snap.record.latest_revision, *(rs.revision for rs in states)])
    return new is None or new.revision < latest or new.revision == 0


def plan_pass(
    target: Target,
    snap: Snapshot,
    now: float,
    previous: DeploymentStatus | None = None,
    *,
    watched: bool = False,
) -> Step:
    """One pass for one app: what to do now to move it towards ``target``.

    ``previous`` is the status the last pass returned (kept in memory by the caller; ``None``
    after a restart, when progress times are read from the cluster instead). ``watched``: the
    caller watches the app's ReplicaSets and passes over it as soon as its pods change, so a
    rolling update waiting for pods is looked at again after :data:`WATCHED_REQUEUE_SECONDS`
    (the progress deadline still on time), not :data:`DEFAULT_REQUEUE_SECONDS`. A rollback pin
    the target no longer honours (git moved on) is cleared in the record this step writes, and a
    served ``deploy --latest`` request too.
    """
    step = _stop_lingering_pods(target, snap, _plan(target, snap, now, previous, watched))
    if step.create_record or snap.record_emptied:
        return step
    record = step.record or snap.record
    if record.pin == snap.record.pin != target.pin:
        # The step left the pin alone: clear it when git moved on, or bind it to the manifest.
        record = dataclasses.replace(record, pin=target.pin)
    starting = step.phase is AppPhase.PROGRESSING and starts_rollout(target.template_hash, snap)
    if record.deploy_requested and starting:
        record = dataclasses.replace(record, deploy_requested=False)  # `deploy --latest` is served
    if record.recovery and starting:
        record = dataclasses.replace(record, recovery="")  # a rebuilt record is news until the next rollout
    if record != (step.record or snap.record):
        step = dataclasses.replace(step, record=record)
    return step


def _restore_record(run: _Pass, snap: Snapshot, now: float) -> Step:
    """Write the record before anything else: a new app's empty one, or, when the record was
    deleted or emptied while ReplicaSets remain, the one their annotations describe (said so in
    a warning event). The record owns nothing, so its loss never touched a pod."""
    status = run.status() if run.new is not None else DeploymentStatus()
    lost = "emptied" if snap.record_emptied else "deleted"
    rebuilt = rebuild_record(snap.replica_sets, lost=lost, now=now)
    record, events = snap.record, tuple[Event, ...]()
    if rebuilt is not None:
        record, events = rebuilt.record, (Event("RecordRebuilt", rebuilt.message, warning=True),)
    elif snap.record_emptied:
        note = f"the app record {record_name(run.app.name)} was emptied; no ReplicaSet to rebuild it from"
        record = dataclasses.replace(record, recovery=note)
        events = (Event("RecordEmptied", note, warning=True),)
    return Step(
        phase=AppPhase.PROGRESSING,
        message="rebuilding the app record" if rebuilt is not None else "creating the app record",
        revision=run.latest,
        status=status,
        events=events,
        record=record,
        create_record=not snap.record_uid,
        requeue_after=0.0,
    )


def _stop_lingering_pods(target: Target, snap: Snapshot, step: Step) -> Step:
    """``step`` with deletes of the hook and deployer pods still running whose rollout is over: it
    completed or failed (a hook past its deadline fails it), or a newer revision cancelled it. A
    held app (paused, waiting for a deploy) keeps them. Their log tail goes to the record the step
    writes, if any (see :func:`~gitdeploy.core.hooks.lingering_pods`)."""
    if step.phase in (AppPhase.PAUSED, AppPhase.WAITING):
        return step
    in_progress = None
    if step.phase == AppPhase.PROGRESSING:
        new, _ = split_replica_sets([rs.state for rs in snap.replica_sets], target.template_hash)
        in_progress = new.name if new is not None else None
    deleted = {action.name for action in step.actions if isinstance(action, DeletePod)}
    doomed = [name for name in lingering_pods(snap.pods, in_progress, step.revision) if name not in deleted]
    if not doomed:
        return step
    logged = (*step.log_pods, *doomed) if step.record is not None else step.log_pods
    return dataclasses.replace(
        step, actions=(*step.actions, *(DeletePod(name) for name in doomed)), log_pods=logged
    )


def _plan(
    target: Target, snap: Snapshot, now: float, previous: DeploymentStatus | None, watched: bool
) -> Step:
    run = _Pass(target, snap, now, previous, watched)
    app = target.app
    if not snap.record_uid or snap.record_emptied:
        return _restore_record(run, snap, now)
    if app.paused:
        return run.held(AppPhase.PAUSED, "paused: no rollout progresses until `paused` is removed")
    if run.needs_new_revision():
        if not target.auto_start:
            return run.held(
                AppPhase.WAITING,
                "the template changed but the app has no ConfigChange trigger: "
                f"run `gitdeploy deploy {app.key}` to roll it out",
            )
        return run.start()
    phase = run.phase()
    if phase == Outcome.COMPLETE.value:
        return run.settled()
    entry = snap.record.entry(run.new.revision) if run.new is not None else None
    if phase == Outcome.FAILED.value and (entry is None or entry.reason != "ProgressDeadlineExceeded"):
        return run.held(AppPhase.FAILED, f"revision {run.latest} failed: {entry.message if entry else ''}")
    if app.strategy.type is StrategyType.CUSTOM:
        return run.custom()
    if app.strategy.type.is_rolling:
        return run.rolling()
    return run.recreate()


__all__ = [
    "Action",
    "AppPhase",
    "CreatePod",
    "CreateReplicaSet",
    "DeletePod",
    "DeleteReplicaSet",
    "Event",
    "PatchReplicaSet",
    "Snapshot",
    "Step",
    "Target",
    "effective_replicas",
    "plan_pass",
    "revision_entry_of",
    "starts_rollout",
    "wants_pod_census",
]
