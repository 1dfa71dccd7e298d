"""Canary rollouts (a Rollout's ``strategy.canary``) on the embedded cluster and a fake clock:
the steps walked in order, pauses timed and indefinite, promote, abort, and a restart mid-way;
the canary's bounds checked after every ReplicaSet write, pass and tick."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gitdeploy.controller import canary as control
from gitdeploy.controller.inspect import AppView, list_app_views, revision_history
from gitdeploy.controller.rollback import read_app, retry
from gitdeploy.core.history.records import FailureReason, Outcome
from gitdeploy.core.models import App
from gitdeploy.core.rollout import AppPhase, Step
from gitdeploy.errors import ConflictError
from tests.fixtures.argorollouts import canary_rollout
from tests.fixtures.canaries import canary_bounds, check_every_write, sizes
from tests.fixtures.rollouts import World, commit, load_app

THREE_STEPS = """\
      - setWeight: 25
      - pause: {duration: 30s}
      - setWeight: 75
"""
PROMOTE_THEN_END = """\
      - setWeight: 50
      - pause: {}
      - setWeight: 75
"""
RESTART_STEPS = """\
      - setWeight: 25
      - pause: {duration: 60}
      - setWeight: 50
      - pause: {}
"""


def deployed(world: World, steps: str) -> tuple[App, App]:
    """Given web v1 running 4 replicas (its first revision: full size at once), and its v2."""
    v1 = load_app(canary_rollout("nginx:1.25", steps=steps))
    world.roll(v1, commit("Deploy web", 1))
    assert world.record(v1).revisions[0].outcome is Outcome.COMPLETE
    assert sizes(world, v1) == (4,)
    v2 = load_app(canary_rollout("nginx:1.26", steps=steps))
    check = canary_bounds(v2)
    check_every_write(world, check)
    return v1, v2


def paused_for_promote(step: Step) -> bool:
    return "paused (waiting for" in step.message


V2 = commit("Bump web to 1.26", 2)
Check = Callable[[World], None]


def waiting_for_promote(world: World) -> tuple[App, App, Check]:
    """Given web v2's canary (commit :data:`V2`) waiting at its ``pause: {}`` at 50%: 2 canary
    pods beside 2 stable ones; and the canary's bounds."""
    v1, v2 = deployed(world, PROMOTE_THEN_END)
    check = canary_bounds(v2)
    world.roll(v2, V2, check=check, until=paused_for_promote)
    assert sizes(world, v2, v1) == (2, 2)
    return v1, v2, check


def sizes_seen(check: Check, app: App, *apps: App) -> tuple[Check, list[tuple[float, tuple[int, ...]]]]:
    """A check that also notes the apps' ReplicaSet sizes (:func:`sizes`) each time they change,
    with the time; and that list of ``(time, sizes)``."""
    seen: list[tuple[float, tuple[int, ...]]] = []

    def note(w: World) -> None:
        check(w)
        found = sizes(w, app, *apps)
        if not seen or seen[-1][1] != found:
            seen.append((w.clock.now(), found))

    return note, seen


def test_a_three_step_canary_walks_its_steps_in_order_to_the_end(world: World) -> None:
    v1, v2 = deployed(world, THREE_STEPS)
    note, seen = sizes_seen(canary_bounds(v2), v2, v1)

    # When a commit changes the image
    steps = world.roll(v2, V2, check=note)

    # Then the canary went to 25% (1 of 4, the stable kept at 3 within maxSurge 1 and
    # maxUnavailable 0), held there 30 s, went to 75%, and then took over at full size
    pairs = [pair for _, pair in seen]
    assert pairs == [(0, 4), (1, 4), (1, 3), (2, 3), (2, 2), (3, 2), (3, 1), (4, 1), (4, 0)]
    at_25 = next(t for t, pair in seen if pair == (1, 3))
    leaving_25 = next(t for t, pair in seen if pair == (2, 3))
    assert leaving_25 - at_25 >= 30
    assert any("step 2/3 (pause 30s), paused for" in s.message for s in steps)
    # and each step reached was told in an event
    assert [m for _, m in world.events(v2, "CanaryStep")] == [
        "Revision 2: step 2/3 (pause 30s)",
        "Revision 2: step 3/3 (setWeight 75%)",
        "Revision 2: past its 3 steps, to full size",
    ]
    # and the bounds held after every write, pass and tick
    assert world.violations == []
    record = world.record(v2)
    assert [(e.revision, e.outcome) for e in record.revisions] == [
        (1, Outcome.COMPLETE),
        (2, Outcome.COMPLETE),
    ]
    assert steps[-1].phase is AppPhase.COMPLETE and steps[-1].requeue_after is None
    assert world.pods(v2).available == 4


def test_an_indefinite_pause_waits_until_promoted(world: World) -> None:
    # Given the canary at its `pause: {}` at 50%
    v1, v2, check = waiting_for_promote(world)
    # When an hour passes
    started = world.clock.now()
    while world.clock.now() - started < 3600:
        step = world.pass_once(v2, V2)
        assert paused_for_promote(step) and step.phase is AppPhase.PAUSED and step.requeue_after
        world.clock.advance(step.requeue_after)
        check(world)
    # Then it still waits there
    assert sizes(world, v2, v1) == (2, 2)
    entry = world.record(v2).entry(2)
    assert entry is None or entry.outcome is Outcome.RUNNING

    # When someone promotes it
    request = control.promote(world.adapter, v2.key, full=False, by="alice@laptop")
    assert (request.revision, request.state.step) == (2, 1)
    steps = world.roll(v2, V2, check=check)

    # Then it goes on to 75% and to the end
    assert steps[-1].phase is AppPhase.COMPLETE
    assert sizes(world, v2, v1) == (4, 0)
    assert world.violations == []


def test_abort_mid_way_brings_the_stable_back_and_holds_the_revision_failed(world: World) -> None:
    v1, v2, check = waiting_for_promote(world)

    # When someone aborts the canary
    control.abort(world.adapter, v2.key, by="ada@laptop")
    steps = world.roll(v2, V2, check=check)

    # Then the stable is back at full size and the canary gone, within the bounds
    assert sizes(world, v2, v1) == (0, 4)
    pods = world.pods(v1)
    assert (pods.total, pods.available) == (4, 4)  # the canary's last pods may be Terminating
    assert world.violations == []
    # and revision 2 is Failed, aborted, by whom
    entry = world.record(v2).entry(2)
    assert entry is not None
    assert (entry.outcome, entry.reason) == (Outcome.FAILED, FailureReason.ROLLOUT_ABORTED)
    assert "aborted by ada@laptop" in entry.message
    assert steps[-1].phase is AppPhase.FAILED
    # and with git unchanged it stays so: the next passes hold it
    again = world.pass_once(v2, V2)
    assert again.phase is AppPhase.FAILED and again.actions == ()

    # When a new commit changes the template again
    v3 = load_app(canary_rollout("nginx:1.27", steps=PROMOTE_THEN_END))
    world.roll(v3, commit("Bump web to 1.27", 3), check=canary_bounds(v3), until=paused_for_promote)

    # Then a new canary starts from the stable
    assert sizes(world, v3, v1) == (2, 2)
    assert world.violations == []


def test_abort_scale_down_delay_has_no_effect_without_a_traffic_router(world: World) -> None:
    # Given a canary with abortScaleDownDelaySeconds 600 waiting at its pause at 50%
    delay = "      abortScaleDownDelaySeconds: 600\n"
    v1 = load_app(canary_rollout("nginx:1.25", steps=PROMOTE_THEN_END, extra=delay))
    world.roll(v1, commit("Deploy web", 1))
    v2 = load_app(canary_rollout("nginx:1.26", steps=PROMOTE_THEN_END, extra=delay))
    assert v2.strategy.canary is not None and v2.strategy.canary.abort_scale_down_delay_seconds == 600
    check = canary_bounds(v2)
    check_every_write(world, check)
    world.roll(v2, V2, check=check, until=paused_for_promote)
    assert sizes(world, v2, v1) == (2, 2)

    # When it is aborted
    control.abort(world.adapter, v2.key, by="ada@laptop")
    aborted_at = world.clock.now()
    note, seen = sizes_seen(check, v2, v1)
    steps = world.roll(v2, V2, check=note)

    # Then, as Argo Rollouts' basic canary (the field applies only with a traffic router), the
    # canary is not kept for 600 s: the stable comes back and the canary goes at once, a pod at a
    # time within maxSurge 1 and maxUnavailable 0, and the revision is Failed well before 600 s
    assert [found for _, found in seen] == [(2, 3), (1, 3), (1, 4), (0, 4)]
    assert seen[-1][0] - aborted_at < 600
    assert steps[-1].phase is AppPhase.FAILED
    assert world.violations == []
    # and after a restart nothing comes back up
    world.restart_gitdeploy()
    assert world.pass_once(v2, V2).phase is AppPhase.FAILED
    assert sizes(world, v2, v1) == (0, 4)


def test_a_restart_mid_canary_goes_on_at_its_step_and_keeps_its_pause(world: World) -> None:
    v1, v2 = deployed(world, RESTART_STEPS)
    check = canary_bounds(v2)

    # Given the canary 20 s into its 60 s pause at 25%
    world.roll(v2, V2, check=check, until=lambda s: "paused for" in s.message)
    began = world.clock.now()
    world.clock.advance(20)

    # When gitdeploy restarts (nothing in memory)
    world.restart_gitdeploy()
    step = world.pass_once(v2, V2)

    # Then it is still in that pause, with 40 s left, not 60
    assert "step 2/4 (pause 60s), paused for 40 s more" in step.message
    assert sizes(world, v2, v1) == (1, 3)

    # and it goes on at 50% once the 60 s are over, then waits for promote at step 4
    note, seen = sizes_seen(check, v2, v1)
    world.roll(v2, V2, check=note, until=paused_for_promote)
    assert seen[0][1] == (1, 3) and seen[1][0] >= began + 60
    assert sizes(world, v2, v1) == (2, 2)
    assert world.violations == []


def test_retry_after_an_abort_walks_the_steps_again_from_the_first(world: World) -> None:
    v1, v2, check = waiting_for_promote(world)
    control.abort(world.adapter, v2.key, by="ada@laptop")
    world.roll(v2, V2, check=check)
    assert sizes(world, v2, v1) == (0, 4)

    # When the aborted revision is retried (`gitdeploy deploy --retry`)
    retry(world.adapter, read_app(world.adapter, v2.key), by="ada@laptop", now=world.clock.now())
    steps = world.roll(v2, V2, check=check, until=paused_for_promote)

    # Then it is Running again and waits at its pause at 50%, not aborted again
    assert "revision 2: step 2/3" in steps[-1].message
    assert sizes(world, v2, v1) == (2, 2)
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.outcome is Outcome.RUNNING
    assert world.violations == []


def test_a_retry_is_refused_when_the_replica_set_changed_since_it_was_read(world: World) -> None:
    v1, v2, check = waiting_for_promote(world)
    control.abort(world.adapter, v2.key, by="ada@laptop")
    world.roll(v2, V2, check=check)

    # Given the aborted app read for a retry
    state = read_app(world.adapter, v2.key)
    assert state.current is not None

    # When its ReplicaSet changes before the retry writes (another replica, a hand)
    world.adapter.scale_replica_set(v2.key.namespace, state.current.name, None, {"example.com/by": "hand"})

    # Then the retry is refused with a conflict, and the revision is not Running again
    with pytest.raises(ConflictError) as refused:
        retry(world.adapter, state, by="ada@laptop", now=world.clock.now())
    assert "revision 2 was not retried: its ReplicaSet" in refused.value.message
    assert f"gitdeploy deploy {v2.key} --retry" in refused.value.hint
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.outcome is not Outcome.RUNNING
    assert sizes(world, v2, v1) == (0, 4)


def test_a_new_commit_mid_canary_replaces_the_canary_draining_it_first(world: World) -> None:
    v1, v2, _ = waiting_for_promote(world)

    # When a commit changes the template again while the canary waits at 50%
    v3 = load_app(canary_rollout("nginx:1.27", steps=PROMOTE_THEN_END))
    note, seen = sizes_seen(canary_bounds(v3), v3, v1, v2)
    world.roll(v3, commit("Bump web to 1.27", 3), check=note, until=paused_for_promote)

    # Then revision 2 is Cancelled and its pods go while revision 3 grows to its 50%
    assert [(e.revision, e.outcome) for e in world.record(v3).revisions] == [
        (1, Outcome.COMPLETE),
        (2, Outcome.CANCELLED),
    ]
    # (the stable kept its 2 pods throughout; the replaced canary only shrank, one pod as each new
    # one became available, within maxSurge 1 and maxUnavailable 0)
    assert [found for _, found in seen] == [(0, 2, 2), (1, 2, 2), (1, 2, 1), (2, 2, 1), (2, 2, 0)]
    assert world.violations == []


def canary_view(world: World, app: App) -> AppView:
    """``gitdeploy status``'s view of ``app``, as at the world's clock."""
    [view] = list_app_views(world.adapter, app.namespace, app.name, now=world.clock.now())
    return view


def test_status_says_where_the_canary_is_from_the_cluster_now(world: World) -> None:
    v1, v2 = deployed(world, RESTART_STEPS)

    # Given the canary at the start of its 60 s pause at 25%
    world.roll(v2, V2, check=canary_bounds(v2), until=lambda s: "paused for" in s.message)
    assert canary_view(world, v2).canary == "revision 2: step 2/4, pause 60s (resumes in 60s)"

    # When 20 s pass with no pass of the loop at all
    world.clock.advance(20)

    # Then status counts down from the pause's start in the cluster, not from the last pass's word
    view = canary_view(world, v2)
    assert view.canary == view.message == "revision 2: step 2/4, pause 60s (resumes in 40s)"
    assert view.canary_steady == "revision 2: step 2/4, pause 60s"

    # When it reaches its `pause: {}` at 50%
    world.roll(v2, V2, check=canary_bounds(v2), until=paused_for_promote)

    # Then status says it waits for promote and what goes on
    view = canary_view(world, v2)
    promote = "`gitdeploy rollout promote shop/web` goes on"
    assert view.message == f"revision 2: step 4/4, paused (waiting for promote): {promote}"
    assert view.phase == Outcome.RUNNING.value
    assert sizes(world, v2, v1) == (2, 2)


def test_history_keeps_the_steps_reached_and_who_promoted_or_aborted(world: World) -> None:
    _, v2, check = waiting_for_promote(world)

    # While the canary waits, history shows its walk so far
    entries, _ = revision_history(world.adapter, v2.key)
    assert entries[-1].canary == "reached step 2/3 (pauses: step 2 until promoted)"

    # When alice promotes it and it completes
    control.promote(world.adapter, v2.key, full=False, by="alice@laptop")
    world.roll(v2, V2, check=check)

    # Then the revision log keeps who promoted which step
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.outcome is Outcome.COMPLETE
    assert entry.canary == "all 3 steps (pauses: step 2 until promoted); promoted step 2 by alice@laptop"
    assert canary_view(world, v2).canary == ""  # a complete revision shows no canary

    # When 1.27's canary is aborted at its pause
    v3 = load_app(canary_rollout("nginx:1.27", steps=PROMOTE_THEN_END))
    world.roll(v3, commit("Bump web to 1.27", 3), check=canary_bounds(v3), until=paused_for_promote)
    control.abort(world.adapter, v3.key, by="ada@laptop")
    world.roll(v3, commit("Bump web to 1.27", 3), check=canary_bounds(v3))

    # Then status and history say who aborted it, and where
    assert canary_view(world, v3).canary == "aborted by ada@laptop at step 2/3"
    entry = world.record(v3).entry(3)
    assert entry is not None and entry.outcome is Outcome.FAILED
    assert entry.canary == "reached step 2/3 (pauses: step 2 until promoted); aborted by ada@laptop"
    assert world.violations == []
