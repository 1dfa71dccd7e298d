"""What one pass knows: :class:`RolloutContext`, and the bookkeeping every part shares.

A pass reads a :class:`~gitdeploy.core.rollout.inputs.Target` and a
:class:`~gitdeploy.core.rollout.inputs.Snapshot` at time ``now``, computes the app's
:class:`~gitdeploy.core.scaling.rollingmath.RolloutBounds` and splits its ReplicaSets into the current
revision's and the old ones; the parts (start, strategies, hooks, outcomes) then plan scales,
writes and events into the context, which :meth:`RolloutContext.step` turns into one Step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from gitdeploy.core.history.records import AppRecord, Outcome
from gitdeploy.core.models import App, AppKind, StrategyType
from gitdeploy.core.observed import (
    PHASE_ANNOTATION,
    PROGRESSED_AT_ANNOTATION,
    STARTED_AT_ANNOTATION,
    ObservedPod,
    ObservedReplicaSet,
)
from gitdeploy.core.rollout.hooks import runs_the_rollout
from gitdeploy.core.rollout.inputs import Snapshot, Target, counts_terminating_pods, starts_rollout
from gitdeploy.core.rollout.outputs import Action, AppPhase, CreateReplicaSet, Event, PatchReplicaSet, Step
from gitdeploy.core.scaling.progress import DeploymentStatus
from gitdeploy.core.scaling.proportional import compute_replica_annotations
from gitdeploy.core.scaling.replicasets import (
    ReplicaSetState,
    ScaleAction,
    apply_scale_actions,
    split_replica_sets,
    sum_replicas,
)
from gitdeploy.core.scaling.rollingmath import (
    RolloutBounds,
    merge_passes,
    plan_rolling_passes,
    plan_rolling_step,
)
from gitdeploy.core.timestamps import format_timestamp, parse_timestamp

DEFAULT_REQUEUE_SECONDS = 1.0
"""How soon to look again at a rollout that waits for pods."""
WATCHED_REQUEUE_SECONDS = 5.0
"""The same while a watch of the app's ReplicaSets wakes the loop when pods become ready: only a
fallback for a change the watch missed (see ``plan_pass(watched=...)``)."""

STATUS_BEHIND = "waiting for the ReplicaSet controller to catch up with the last scale"
"""A step that scales nothing: a ReplicaSet's status is of an older spec (its
``observedGeneration`` is behind), so its counts (available pods above all) may be stale, and
scaling by them could take more pods down than the bounds allow. Its status update wakes the loop."""


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


def bounds_of(app: App, replicas: int) -> RolloutBounds:
    """The bounds the rollout math takes for ``app`` at ``replicas`` (Custom counts as Recreate:
    no surge, all at once; Canary as RollingUpdate with its own bounds; the bounds of a strategy
    without rolling parameters are the defaults)."""
    kind = app.strategy.type
    canary = app.strategy.canary
    if canary is not None:  # past its steps a canary ends as a rolling update, in its bounds
        return RolloutBounds(
            StrategyType.ROLLING_UPDATE.value, replicas, canary.max_surge, canary.max_unavailable
        )
    strategy = kind.value if kind.is_rolling else StrategyType.RECREATE.value
    rolling = app.strategy.rolling
    if rolling is not None:
        return RolloutBounds(strategy, replicas, rolling.max_surge, rolling.max_unavailable)
    return RolloutBounds(strategy, replicas, None, None)


def intervals(app: App) -> tuple[float, float]:
    """``(after a scale, while waiting)``: DeploymentConfig's updatePeriod/interval, else 1 s."""
    rolling = app.strategy.rolling
    if app.kind is AppKind.DEPLOYMENT_CONFIG and rolling is not None:
        return float(rolling.update_period_seconds), float(rolling.interval_seconds)
    return DEFAULT_REQUEUE_SECONDS, DEFAULT_REQUEUE_SECONDS


def scale_event(actions: Sequence[ScaleAction]) -> Event | None:
    """One ScalingReplicaSet event for a step's scales, each in the Kubernetes controller's words.

    >>> scale_event([ScaleAction("web-1", 8, 6), ScaleAction("web-2", 2, 4)]).message
    'Scaled down replica set web-1 to 6; Scaled up replica set web-2 to 4'
    """
    scales = [
        f"Scaled {action.direction} replica set {action.name} to {action.to_replicas}"
        for action in actions
        if action.direction
    ]
    return Event("ScalingReplicaSet", "; ".join(scales)) if scales else None


@dataclass(slots=True)
class RolloutContext:
    """The working state of one pass over one app. Built by :meth:`of`; the parts of the engine
    read it and add to its actions, events and record (slots: no field outside these)."""

    target: Target
    """What the app should run (git's template, or a pinned revision's)."""
    snapshot: Snapshot
    """What the cluster held when the pass began; never changed."""
    now: float
    """The time of the pass (the caller's clock: the engine reads none)."""
    previous: DeploymentStatus | None
    """The status the last pass returned; None after a restart."""
    watched: bool
    """A watch of the app's ReplicaSets wakes the loop: waiting rollouts look again less often."""
    app: App
    """``target.app``."""
    bounds: RolloutBounds
    """Strategy, effective replicas and maxSurge/maxUnavailable, as the rollout math takes them."""
    by_name: dict[str, ObservedReplicaSet]
    """The observed ReplicaSets by name (annotations, uid, template)."""
    states: list[ReplicaSetState]
    """Every ReplicaSet as the math sees it, with this pass's planned scales applied."""
    new: ReplicaSetState | None
    """The ReplicaSet of ``target``'s template (the current revision), if there is one."""
    old: tuple[ReplicaSetState, ...]
    """The others, oldest first."""
    latest: int
    """The highest revision the record or a ReplicaSet knows."""
    actions: list[Action] = field(default_factory=list)
    """The writes of this step, in order."""
    events: list[Event] = field(default_factory=list)
    """Events told before the step's scales."""
    scaled: list[ScaleAction] = field(default_factory=list)
    """This step's scales (creating a ReplicaSet with pods included), told in one event."""
    outcome: list[Event] = field(default_factory=list)
    """Told after the scales (a rollout that the step's scales complete)."""
    record: AppRecord | None = None
    """The record to write, when this step changes it."""
    log_pods: list[str] = field(default_factory=list)
    """Hook and deployer pods whose log tail goes to the record."""
    explain_with_pods: str = ""
    """See :attr:`Step.explain_with_pods`."""

    @classmethod
    def of(
        cls, target: Target, snapshot: Snapshot, now: float, previous: DeploymentStatus | None, watched: bool
    ) -> RolloutContext:
        app = target.app
        states = [rs.state for rs in snapshot.replica_sets]
        census = snapshot.pod_census
        if census is not None and counts_terminating_pods(app):
            states = [dataclasses.replace(rs, pods=census.of(rs.name)) for rs in states]
        new, old = split_replica_sets(states, target.template_hash)
        return cls(
            target=target,
            snapshot=snapshot,
            now=now,
            previous=previous,
            watched=watched,
            app=app,
            bounds=bounds_of(app, effective_replicas(app.replicas, new, old)),
            by_name={rs.name: rs for rs in snapshot.replica_sets},
            states=states,
            new=new,
            old=old,
            latest=max([snapshot.record.latest_revision, *(rs.revision for rs in states)]),
        )

    @property
    def replicas(self) -> int:
        return self.bounds.replicas

    # -- the step -----------------------------------------------------------------------------------

    def step(self, phase: AppPhase, message: str, requeue: float | None, status: DeploymentStatus) -> Step:
        revision = self.new.revision if self.new is not None else self.latest
        scaled = scale_event(self.scaled)
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
            explain_with_pods=self.explain_with_pods,
        )

    def replica_annotations(self) -> tuple[tuple[str, str], ...]:
        marks = compute_replica_annotations(self.bounds)
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

    def annotate(self, name: str, *pairs: tuple[str, str]) -> None:
        self.patch(name, None, pairs)

    def scale(self, actions: Sequence[ScaleAction]) -> None:
        for action in actions:
            self.patch(action.name, action.to_replicas, self.replica_annotations())
        self.scaled += actions
        self.resplit(list(apply_scale_actions(self.states, actions)))

    def resplit(self, states: list[ReplicaSetState]) -> None:
        """Take ``states`` as the app's ReplicaSets and split them again into new and old."""
        self.states = states
        self.new, self.old = split_replica_sets(states, self.target.template_hash)

    def resync(self, first: Sequence[ScaleAction] = ()) -> tuple[ScaleAction, ...]:
        """The rolling scales of this step: ``first`` (proportional scaling), then the passes the
        Kubernetes controller makes back to back by re-syncing after its own writes, merged into
        one write per ReplicaSet (:func:`~gitdeploy.core.scaling.rollingmath.plan_rolling_passes`). A
        DeploymentConfig takes one pass per step: its ``updatePeriodSeconds`` paces the scales."""
        assert self.new is not None
        if self.app.kind is AppKind.DEPLOYMENT_CONFIG:
            return tuple(first) or plan_rolling_step(self.bounds, self.new, self.old)
        return merge_passes(plan_rolling_passes(self.bounds, self.new, self.old, first=first))

    # -- what the snapshot says --------------------------------------------------------------------

    def needs_new_revision(self) -> bool:
        return starts_rollout(self.target.template_hash, self.snapshot)

    def new_observed(self) -> ObservedReplicaSet | None:
        return self.by_name.get(self.new.name) if self.new is not None else None

    def current_pods(self) -> list[ObservedPod]:
        if self.new is None:
            return []
        prefix = f"{self.new.name}-"
        return [
            p
            for p in self.snapshot.pods
            if runs_the_rollout(p) and p.name.startswith(prefix) and p.revision == self.new.revision
        ]

    def pod(self, role: str) -> ObservedPod | None:
        if self.new is None:
            return None
        prefix = f"{self.new.name}-"
        return next((p for p in self.snapshot.pods if p.role == role and p.name.startswith(prefix)), None)

    def deadline_seconds(self) -> int:
        return self.app.progress_deadline_seconds

    def started_at(self) -> float:
        """When the current revision's rollout started (its annotation, else its creation)."""
        observed = self.new_observed()
        stamp = parse_timestamp(observed.annotation(STARTED_AT_ANNOTATION)) if observed else None
        if stamp is not None:
            return stamp
        return self.new.created_at if self.new is not None else self.now

    def current_outcome(self) -> Outcome | None:
        """The current revision's outcome: the record's if it has one, else the phase annotation
        (Running when it is unreadable); None when there is no current revision."""
        if self.new is None:
            return None
        entry = self.snapshot.record.entry(self.new.revision)
        if (
            entry is not None
            and entry.outcome is not Outcome.RUNNING
            and entry.template_hash == self.new.template_hash
        ):
            return entry.outcome
        observed = self.new_observed()
        return Outcome.parse(observed.annotation(PHASE_ANNOTATION)) if observed else None

    def observed_current(self) -> bool:
        return all(rs.observed_generation_current for rs in self.snapshot.replica_sets)

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
        return f"revision {self.new.revision}: {self.pods_message()}"

    def pods_message(self) -> str:
        """``2 of 4 new pods available, 2 old pods left`` (the old ones when there are any)."""
        assert self.new is not None
        old = sum(rs.current for rs in self.old)
        return f"{self.new.available} of {self.replicas} new pods available" + (
            f", {old} old pods left" if old else ""
        )
