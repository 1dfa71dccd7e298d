"""A canary's progress deadline on the embedded cluster and a fake clock, as Argo Rollouts
applies ``progressDeadlineSeconds``: a step whose pods never become available passes it (the
revision Fails, or with ``progressDeadlineAbort: true`` is aborted back to the stable), while
time spent in a pause is not counted."""

from __future__ import annotations

from gitdeploy.core.history.records import FailureReason, Outcome
from gitdeploy.core.models import App
from gitdeploy.core.rollout import Step
from gitdeploy.core.scaling.progress import ConditionReason, ConditionType
from tests.fixtures.argorollouts import canary_rollout
from tests.fixtures.canaries import canary_bounds, check_every_write, sizes
from tests.fixtures.rollouts import World, commit, load_app

STEPS = """\
      - setWeight: 50
      - pause: {duration: 1h}
      - setWeight: 75
"""
V2 = commit("Bump web to 1.26", 2)


def rollout(image: str, abort: bool) -> App:
    """web with a 60 s progress deadline (and ``progressDeadlineAbort`` when ``abort``)."""
    spec = f"  replicas: 4\n  progressDeadlineSeconds: 60\n  progressDeadlineAbort: {str(abort).lower()}\n"
    return load_app(canary_rollout(image, steps=STEPS).replace("  replicas: 4\n", spec))


def deployed(world: World, abort: bool) -> tuple[App, App]:
    """Given web v1 at full size, and v2 (whose pods crash when crashing images are set)."""
    v1 = rollout("nginx:1.25", abort)
    world.roll(v1, commit("Deploy web", 1))
    v2 = rollout("nginx:1.26", abort)
    check_every_write(world, canary_bounds(v2))
    return v1, v2


def exceeded(step: Step) -> bool:
    condition = step.status.condition(ConditionType.PROGRESSING) if step.status is not None else None
    return condition is not None and condition.reason == ConditionReason.PROGRESS_DEADLINE_EXCEEDED


def test_progress_deadline_abort_sends_a_stuck_canary_back_to_the_stable(world: World) -> None:
    v1, v2 = deployed(world, abort=True)
    # Given 1.26's pods never become available
    world.set_crashing_images("nginx:1.26")

    # When its canary gets no further than its first setWeight for longer than 60 s
    started = world.clock.now()
    world.roll(v2, V2, check=canary_bounds(v2))

    # Then it was aborted: the stable back at full size, the canary gone, the revision Failed
    assert sizes(world, v2, v1) == (0, 4)
    entry = world.record(v2).entry(2)
    assert entry is not None and (entry.outcome, entry.reason) == (
        Outcome.FAILED,
        FailureReason.ROLLOUT_ABORTED,
    )
    assert "aborted by progressDeadlineAbort (step 1/3: no progress for 60 s" in entry.message
    assert entry.finished_at is not None and entry.finished_at - started > 60
    assert world.violations == []


def test_without_abort_the_deadline_marks_the_revision_failed_and_the_canary_stays(world: World) -> None:
    v1, v2 = deployed(world, abort=False)
    world.set_crashing_images("nginx:1.26")

    # When the canary is stuck at its first setWeight past the deadline
    world.roll(v2, V2, check=canary_bounds(v2), until=lambda s: "failed" in s.message)

    # Then the revision is Failed by the deadline, and nothing was scaled back
    entry = world.record(v2).entry(2)
    assert entry is not None and (entry.outcome, entry.reason) == (
        Outcome.FAILED,
        FailureReason.PROGRESS_DEADLINE_EXCEEDED,
    )
    assert "step 1/3: no progress for 60 s" in entry.message
    canary, stable = sizes(world, v2, v1)
    assert canary > 0 and stable == 4  # maxUnavailable 0: the stable waits for canary pods

    # and the next passes go on walking it, not holding it (as Argo Rollouts keeps processing a
    # degraded Rollout): its pods may still come
    again = world.pass_once(v2, V2)
    assert again.message.startswith("revision 2: step 1/3 (setWeight 50%)") and again.requeue_after


def test_an_hour_in_a_pause_is_not_counted_against_a_60_s_deadline(world: World) -> None:
    v1, v2 = deployed(world, abort=True)

    # When the canary walks its steps, an hour of them in a pause
    steps = world.roll(v2, V2, check=canary_bounds(v2), limit_seconds=7200, tick=3600)

    # Then it completes, never past its deadline
    assert not [s for s in steps if exceeded(s)]
    entry = world.record(v2).entry(2)
    assert entry is not None and (entry.outcome, entry.message) == (Outcome.COMPLETE, "")
    assert sizes(world, v2, v1) == (4, 0)
    assert world.violations == []
