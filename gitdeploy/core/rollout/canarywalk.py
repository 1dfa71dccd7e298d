"""Canary (a Rollout's ``strategy.canary``, no traffic router): the walk through ``steps``.

A revision's canary ReplicaSet grows beside the *stable* one (the newest Complete revision) step
by step: ``setWeight`` sizes both with :func:`~.canary.basic_canary_replicas` and is done when
the sizes are reached and available (:func:`~.canary.at_step_sizes`); ``pause: {duration}``
waits that long; ``pause: {}`` waits for ``gitdeploy rollout promote``. Past the last step the
canary grows to full size and the other ReplicaSets go, as at the end of a rolling update.
Older ReplicaSets (a canary a newer commit replaced) go first, within maxUnavailable.

Where the walk lives, so that a restarted gitdeploy goes on at the same step: annotations of
the canary ReplicaSet, each value prefixed with the revision it belongs to
(:mod:`gitdeploy.core.canarystate` lists them and reads them back; an analysis step's run is
kept in :data:`~gitdeploy.core.canarystate.CANARY_ANALYSIS_ANNOTATION` (:mod:`~.canaryanalysis`),
and an analysis that fails writes the abort annotation as ``rollout abort`` does).

>>> from gitdeploy.core.canarysteps import Pause
>>> steps = (SetWeight(25), Pause(), SetWeight(50), Pause(30))
>>> walk_steps(steps, CanaryState(), lambda weight: True, now=100.0)
Walk(step=1, paused_at=100.0, wait=None, waits_for_promote=True)
>>> walk_steps(steps, CanaryState(step=1, paused_at=100.0, promoted=1), lambda w: w == 50, now=200.0)
Walk(step=3, paused_at=200.0, wait=30.0, waits_for_promote=False)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.runs import AnalysisRun
from gitdeploy.core.analysis.stored import decode_run, encode_run
from gitdeploy.core.analysistemplates import Metric
from gitdeploy.core.canarystate import (
    CANARY_ABORT_ANNOTATION,
    CANARY_PAUSED_AT_ANNOTATION,
    CANARY_STEP_ANNOTATION,
    CANARY_STEPS_ANNOTATION,
    CanaryState,
    read_canary_state,
)
from gitdeploy.core.canarysteps import AnalysisStep, CanaryParams, CanaryStep, SetWeight, encode_steps
from gitdeploy.core.history.records import FailureReason, Outcome
from gitdeploy.core.observed import PHASE_ANNOTATION, PROGRESSED_AT_ANNOTATION, ObservedReplicaSet
from gitdeploy.core.rollout.canary import at_step_sizes, basic_canary_replicas, current_weight
from gitdeploy.core.rollout.canaryanalysis import (
    BACKGROUND,
    SOON_SECONDS,
    annotation_of,
    background_run,
    describe_run,
    due_now,
    failure_summary,
    in_background,
    in_flight,
    progress,
    requeue_after,
    step_run,
)
from gitdeploy.core.rollout.canarydeadline import DEADLINE_ABORT_BY, deadline_passed, paused_status
from gitdeploy.core.rollout.context import (
    DEFAULT_REQUEUE_SECONDS,
    STATUS_BEHIND,
    WATCHED_REQUEUE_SECONDS,
    RolloutContext,
)
from gitdeploy.core.rollout.inputs import Snapshot, Target
from gitdeploy.core.rollout.outcome import fail, finish
from gitdeploy.core.rollout.outputs import AppPhase, Event, Step
from gitdeploy.core.rollout.status import status
from gitdeploy.core.scaling.progress import DeploymentStatus
from gitdeploy.core.scaling.replicasets import ReplicaSetState, ScaleAction
from gitdeploy.core.scaling.rollingmath import resolve_fenceposts
from gitdeploy.core.timestamps import format_timestamp

FAILING = (AnalysisPhase.FAILED, AnalysisPhase.ERROR)
"""The phases of an analysis run that abort the rollout."""


@dataclass(frozen=True, slots=True)
class Walk:
    """Where the walk is after this pass, and what it waits for."""

    step: int
    paused_at: float | None
    wait: float | None
    """Seconds until a timed pause ends."""
    waits_for_promote: bool


def _not_analysed(index: int) -> AnalysisPhase:
    return AnalysisPhase.RUNNING


def walk_steps(
    steps: Sequence[CanaryStep],
    state: CanaryState,
    reached: Callable[[int], bool],
    now: float,
    analysed: Callable[[int], AnalysisPhase] = _not_analysed,
) -> Walk:
    """Walk ``steps`` from ``state`` as far as they let at ``now``: a step goes on only while
    ``reached(weight)`` (the sizes of the current weight are reached and available); a
    ``setWeight`` is then done, a timed pause once its duration passed since it began, an
    analysis once ``analysed(index)`` (its run's phase after this pass) is Successful (an
    Inconclusive one waits for promote), an indefinite pause (like any step) once promoted. A
    pass walks several steps when it can."""
    index, paused_at = (len(steps), None) if state.full else (state.step, state.paused_at)
    while index < len(steps):
        step = steps[index]
        if state.promoted == index:
            index, paused_at = index + 1, None
            continue
        if not reached(current_weight(steps, index)):
            return Walk(index, paused_at, None, False)
        if isinstance(step, SetWeight):
            index, paused_at = index + 1, None
            continue
        if isinstance(step, AnalysisStep):
            phase = analysed(index)
            if phase is AnalysisPhase.SUCCESSFUL:
                index, paused_at = index + 1, None
                continue
            return Walk(index, None, None, phase is AnalysisPhase.INCONCLUSIVE)
        began = float(math.ceil(now)) if paused_at is None else paused_at  # kept in whole seconds
        if step.duration_seconds is None:
            return Walk(index, began, None, True)
        if now < began + step.duration_seconds:
            return Walk(index, began, began + step.duration_seconds - now, False)
        index, paused_at = index + 1, None
    return Walk(len(steps), None, None, False)


def walk_annotations(
    revision: int, walk: Walk, steps: tuple[CanaryStep, ...] = ()
) -> tuple[tuple[str, str], ...]:
    """The annotations that keep ``walk`` for ``revision`` (and its ``steps``, for ``status``)."""
    paused = "" if walk.paused_at is None else f"{revision}:{walk.step}:{format_timestamp(walk.paused_at)}"
    return (
        (CANARY_STEP_ANNOTATION, f"{revision}:{walk.step}"),
        (CANARY_PAUSED_AT_ANNOTATION, paused),
        (CANARY_STEPS_ANNOTATION, f"{revision}:{encode_steps(steps)}"),
    )


def split_stable(ctx: RolloutContext) -> tuple[ReplicaSetState | None, tuple[ReplicaSetState, ...]]:
    """``(stable, older)``: the stable ReplicaSet is the newest other one whose revision is
    Complete (else the newest other one with pods); the older ones are the rest, oldest first."""
    record = ctx.snapshot.record

    def complete(rs: ReplicaSetState) -> bool:
        observed = ctx.by_name.get(rs.name)
        phase = observed.annotation(PHASE_ANNOTATION) if observed is not None else ""
        return record.outcome_of(rs.revision, phase) is Outcome.COMPLETE

    candidates = [rs for rs in ctx.old if complete(rs)] or [rs for rs in ctx.old if rs.replicas > 0]
    stable = max(candidates, key=lambda rs: rs.revision, default=None)
    return stable, tuple(rs for rs in ctx.old if rs is not stable)


def scale_down_older(ctx: RolloutContext, older: Sequence[ReplicaSetState]) -> list[ScaleAction]:
    """Older ReplicaSets down, oldest first: their unavailable pods at once, available ones
    within what keeps ``replicas - maxUnavailable`` pods available (upstream
    ``scaleDownOldReplicaSetsForCanary``)."""
    params = canary_params(ctx)
    _, unavailable = resolve_fenceposts(params.max_surge, params.max_unavailable, ctx.replicas)
    budget = max(0, sum(rs.available for rs in ctx.states) - (ctx.replicas - unavailable))
    actions = []
    for rs in older:
        if rs.replicas == 0:
            continue
        broken = max(0, rs.replicas - rs.available)
        cut = min(rs.replicas, broken + budget)
        budget -= max(0, cut - broken)
        if cut:
            actions.append(ScaleAction(rs.name, rs.replicas, rs.replicas - cut))
    return actions


def canary_scales(
    ctx: RolloutContext, stable: ReplicaSetState, older: Sequence[ReplicaSetState], weight: int
) -> list[ScaleAction]:
    """This pass's scales towards ``weight``: scale-downs first (older, then whichever side
    drains), then the stable's growth, then the canary's, so every write keeps the bounds."""
    params, new = canary_params(ctx), ctx.new
    assert new is not None
    canary, kept = basic_canary_replicas(
        ctx.replicas,
        weight,
        params.max_surge,
        params.max_unavailable,
        stable.replicas,
        stable.available,
        new.replicas,
        new.available,
        older_spec=sum(rs.replicas for rs in older),
        older_available=sum(rs.available for rs in older),
    )
    sides = [ScaleAction(stable.name, stable.replicas, kept), ScaleAction(new.name, new.replicas, canary)]
    planned = [*scale_down_older(ctx, older), *(a for a in sides if a.to_replicas != a.from_replicas)]
    return sorted(planned, key=lambda action: action.to_replicas > action.from_replicas)


def canary_params(ctx: RolloutContext) -> CanaryParams:
    params = ctx.app.strategy.canary
    assert params is not None
    return params


def walk_with_analysis(
    ctx: RolloutContext, state: CanaryState, stable: ReplicaSetState | None, older: Sequence[ReplicaSetState]
) -> tuple[Walk, dict[int, AnalysisRun], AnalysisRun | None]:
    """This pass's walk from ``state``, with the analysis runs it advanced (by step index, and
    :data:`~.canaryanalysis.BACKGROUND`) and the background run (held while it is inconclusive)."""
    new, params = ctx.new, canary_params(ctx)
    assert new is not None
    observed = ctx.by_name[new.name]

    def reached(weight: int) -> bool:
        assert stable is not None and ctx.new is not None
        older_available = sum(rs.available for rs in older)
        return at_step_sizes(
            ctx.replicas,
            weight,
            ctx.new.replicas,
            ctx.new.available,
            stable.replicas,
            stable.available,
            older_available,
        )

    hashes = (stable.template_hash if stable is not None else "", new.template_hash)
    runs: dict[int, AnalysisRun] = {}

    def analysed(index: int) -> AnalysisPhase:
        runs[index] = step_run(params, observed, index, hashes, ctx.snapshot, ctx.now)
        return runs[index].phase

    at = (state.step, state.promoted)
    background = background_run(params, observed, at, hashes, ctx.snapshot, ctx.now) if stable else None
    if background is not None and background.phase is AnalysisPhase.INCONCLUSIVE:
        walk = Walk(state.step, state.paused_at, None, True)  # held until promoted, as upstream pauses
    else:
        walk = walk_steps(params.steps, state, reached, ctx.now, analysed)
    if background is not None:
        runs[BACKGROUND] = background
    return walk, runs, background


def canary(ctx: RolloutContext) -> Step:
    """One pass of a canary in progress: abort, walk the steps (an analysis step's run advanced
    with this pass's measurements; its failure aborts), scale to the current weight; past the
    last step, grow to full size and complete."""
    new, params = ctx.new, canary_params(ctx)
    steps = params.steps
    assert new is not None
    if not ctx.observed_current():
        return ctx.step(AppPhase.PROGRESSING, STATUS_BEHIND, DEFAULT_REQUEUE_SECONDS, status(ctx))
    stable, older = split_stable(ctx)
    observed = ctx.by_name[new.name]
    state = read_canary_state(observed)
    if state.aborted_by is not None:
        return abort(ctx, stable, older, state.aborted_by)
    if stable is None:  # the app's first revision: no steps, full size at once (as upstream)
        state = CanaryState(full=True)
    walk, runs, background = walk_with_analysis(ctx, state, stable, older)
    moved = walk.step != state.step
    pairs = (
        *walk_annotations(new.revision, walk, steps if stable is not None else ()),
        *analysis_annotations(new.revision, runs),
    )
    if moved:  # reaching a step is progress: the deadline starts again (a pause is not counted)
        pairs += ((PROGRESSED_AT_ANNOTATION, format_timestamp(ctx.now)),)
    if any(observed.annotation(name) != value for name, value in pairs):
        ctx.annotate(new.name, *pairs)
    ctx.events.extend(analysis_events(observed, new.revision, params, runs))
    failed = [k for k in (walk.step, BACKGROUND) if k in runs and runs[k].phase in FAILING]
    if stable is not None and failed:
        by = f"{describe_run(params, failed[0])} ({failure_summary(runs[failed[0]])})"
        ctx.annotate(new.name, (CANARY_ABORT_ANNOTATION, f"{new.revision}:{by}"))
        return abort(ctx, stable, older, by)
    if moved and stable is not None:
        ctx.events.append(Event("CanaryStep", step_news(new.revision, steps, walk.step)))
    if walk.step >= len(steps) or stable is None:
        return to_full_size(ctx, stable, older, moved)
    ctx.scale(canary_scales(ctx, stable, older, current_weight(steps, walk.step)))
    paused = walk.paused_at is not None or walk.step in runs  # an analysis has its own limits
    now = paused_status(status(ctx)) if paused or moved else status(ctx)
    late = deadline_passed(ctx, now, paused=paused, moved=moved)
    if late is not None:
        return past_deadline(ctx, stable, older, f"step {walk.step + 1}/{len(steps)}: {late}", now)
    waiting = wait_at_step(ctx, walk, runs.get(walk.step), background, now)
    starts = background is None and in_background(params, walk.step)  # this pass reached its start
    running = in_flight(ctx.snapshot.measurements, new.revision, BACKGROUND)
    return with_background(waiting, params, background, ctx.now, starts=starts, running=running)


def with_background(
    waiting: Step,
    params: CanaryParams,
    background: AnalysisRun | None,
    now: float,
    *,
    starts: bool = False,
    running: frozenset[str] = frozenset(),
) -> Step:
    """``waiting`` looked at again by the next measurement of the background analysis, or soon
    when it ``starts``: the walk reached its starting step in this pass, the next pass starts
    its run (else a timed pause would requeue only once it is over, nothing measured)."""
    if starts:
        soon: float | None = SOON_SECONDS
    else:
        soon = requeue_after(params, BACKGROUND, background, now, running) if background is not None else None
    if soon is None or (waiting.requeue_after is not None and waiting.requeue_after <= soon):
        return waiting
    return dataclasses.replace(waiting, requeue_after=soon)


def wait_at_step(
    ctx: RolloutContext,
    walk: Walk,
    run: AnalysisRun | None,
    background: AnalysisRun | None,
    now: DeploymentStatus,
) -> Step:
    """The step of a pass that stops at ``walk.step`` (``now``: the status to report): scaling,
    a timed or indefinite pause, or an analysis (``run``, or the ``background`` one) running or
    inconclusive."""
    new, params = ctx.new, canary_params(ctx)
    assert new is not None
    steps = params.steps
    where = f"revision {new.revision}: step {walk.step + 1}/{len(steps)} ({steps[walk.step].describe()})"
    if run is not None and not ctx.scaled and not run.phase.completed:
        running = in_flight(ctx.snapshot.measurements, new.revision, walk.step)
        wait = requeue_after(params, walk.step, run, ctx.now, running) or DEFAULT_REQUEUE_SECONDS
        return ctx.step(AppPhase.PROGRESSING, f"{where}, {progress(run, running)}", wait, now)
    if ctx.scaled or not (walk.waits_for_promote or walk.wait is not None):
        return ctx.step(AppPhase.PROGRESSING, f"{where}, {ctx.pods_message()}", DEFAULT_REQUEUE_SECONDS, now)
    if walk.waits_for_promote:  # Suspended, as Argo CD tells a paused Rollout
        held = next(
            (r for r in (run, background) if r is not None and r.phase is AnalysisPhase.INCONCLUSIVE), None
        )
        why = f", analysis inconclusive ({held.message})" if held is not None else ""
        message = f"{where}{why}, paused (waiting for `gitdeploy rollout promote {ctx.app.key}`)"
        return ctx.step(AppPhase.PAUSED, message, WATCHED_REQUEUE_SECONDS, now)
    assert walk.wait is not None
    return ctx.step(AppPhase.PROGRESSING, f"{where}, paused for {walk.wait:.0f} s more", walk.wait, now)


def analysis_annotations(revision: int, runs: Mapping[int, AnalysisRun]) -> tuple[tuple[str, str], ...]:
    """The annotations keeping the last step's analysis run this pass advanced, and the
    background one's (none: no such run)."""
    steps = [index for index in runs if index != BACKGROUND]
    keys = ([max(steps)] if steps else []) + ([BACKGROUND] if BACKGROUND in runs else [])
    return tuple((annotation_of(key), encode_run(revision, key, runs[key])) for key in keys)


def analysis_events(
    observed: ObservedReplicaSet, revision: int, params: CanaryParams, runs: Mapping[int, AnalysisRun]
) -> list[Event]:
    """An event for each run this pass ended (one the annotation did not hold as ended)."""
    events = []
    for key, run in sorted(runs.items()):
        was = decode_run(observed.annotation(annotation_of(key)), revision, key)
        if not run.phase.completed or (was is not None and was.phase.completed):
            continue
        what = f"Revision {revision}: {describe_run(params, key)}"
        if run.phase is AnalysisPhase.SUCCESSFUL:
            events.append(Event("AnalysisSuccessful", f"{what} succeeded"))
        else:
            summary = failure_summary(run)
            events.append(Event(f"Analysis{run.phase.value}", f"{what}: {run.phase.value}: {summary}", True))
    return events


def canary_due_measurements(
    target: Target, snapshot: Snapshot, now: float
) -> tuple[tuple[int, int, Metric], ...]:
    """The analysis measurements a pass over ``target`` at ``now`` wants taken, as
    ``(revision, step, metric)``: those of the run of the step the canary stands at."""
    params = target.app.strategy.canary
    if params is None or not (params.analysis or any(isinstance(s, AnalysisStep) for s in params.steps)):
        return ()
    rs = next((rs for rs in snapshot.replica_sets if rs.state.template_hash == target.template_hash), None)
    if rs is None:
        return ()
    state = read_canary_state(rs)
    if state.aborted_by is not None or state.full or state.step >= len(params.steps):
        return ()
    step = due_now(params, rs, state.step, now) if state.promoted != state.step else ()
    return step + due_now(params, rs, BACKGROUND, now)


def step_news(revision: int, steps: Sequence[CanaryStep], index: int) -> str:
    """The event of a canary reaching step ``index``.

    >>> from gitdeploy.core.canarysteps import Pause
    >>> step_news(3, (SetWeight(20), Pause()), 1), step_news(3, (SetWeight(20),), 1)
    ('Revision 3: step 2/2 (pause (until promoted))', 'Revision 3: past its 1 steps, to full size')
    """
    if index >= len(steps):
        return f"Revision {revision}: past its {len(steps)} steps, to full size"
    return f"Revision {revision}: step {index + 1}/{len(steps)} ({steps[index].describe()})"


def to_full_size(
    ctx: RolloutContext, stable: ReplicaSetState | None, older: Sequence[ReplicaSetState], moved: bool
) -> Step:
    """Past the last step: the canary grows to full size and the others go, within the bounds,
    as at the end of a rolling update; complete once only its pods run, all available."""
    ctx.scale(ctx.resync())
    now = paused_status(status(ctx)) if moved else status(ctx)
    if not ctx.scaled and ctx.is_complete():
        return finish(ctx, now)
    late = deadline_passed(ctx, now, paused=False, moved=moved)
    if late is not None:
        return past_deadline(ctx, stable, older, f"growing to full size: {late}", now)
    return ctx.step(AppPhase.PROGRESSING, ctx.progress_message(), DEFAULT_REQUEUE_SECONDS, now)


def past_deadline(
    ctx: RolloutContext,
    stable: ReplicaSetState | None,
    older: Sequence[ReplicaSetState],
    why: str,
    now: DeploymentStatus,
) -> Step:
    """The progress deadline passed: with ``progressDeadlineAbort`` the canary is aborted (kept
    in its abort annotation, so that the next passes go on aborting), else the revision is
    marked Failed and the walk goes on (:mod:`.canarydeadline`)."""
    new = ctx.new
    assert new is not None
    if not canary_params(ctx).progress_deadline_abort:
        return fail(ctx, FailureReason.PROGRESS_DEADLINE_EXCEEDED, why, now)
    by = f"{DEADLINE_ABORT_BY} ({why})"
    ctx.annotate(new.name, (CANARY_ABORT_ANNOTATION, f"{new.revision}:{by}"))
    return abort(ctx, stable, older, by)


def abort(
    ctx: RolloutContext, stable: ReplicaSetState | None, older: Sequence[ReplicaSetState], by: str
) -> Step:
    """``rollout abort``: the stable back to full size first, then the canary (and older ones)
    down, within the bounds; once only the stable runs, all available, the revision Fails. With
    no stable revision to go back to (the app's first) it Fails at once, its pods kept."""
    new = ctx.new
    assert new is not None
    if stable is None:
        why = f"aborted by {by}: no earlier revision to go back to, its pods keep running"
        return fail(ctx, FailureReason.ROLLOUT_ABORTED, why, status(ctx))
    ctx.scale(canary_scales(ctx, stable, older, 0))
    now = status(ctx)
    back = stable.replicas == stable.available == ctx.replicas
    gone = all(rs.replicas == rs.current == 0 for rs in (new, *older))
    if not ctx.scaled and back and gone:
        why = f"aborted by {by}: revision {stable.revision} runs at full size"
        return fail(ctx, FailureReason.ROLLOUT_ABORTED, why, now)
    message = f"revision {new.revision}: aborting (by {by}), back to the stable ReplicaSet"
    return ctx.step(AppPhase.PROGRESSING, message, DEFAULT_REQUEUE_SECONDS, now)
