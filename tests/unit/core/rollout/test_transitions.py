"""Which rollouts a step started or ended: read from the step's events and its record, table-driven."""

from __future__ import annotations

import dataclasses
import doctest

import pytest

from gitdeploy.core.history.records import AppRecord, Cause, CommitRef, Outcome, Pin, RevisionEntry
from gitdeploy.core.models import AppKey
from gitdeploy.core.rollout import AppPhase, Event, Step, Target, transitions
from gitdeploy.core.rollout.transitions import RolloutEvent, rollout_transitions
from gitdeploy.core.scaling.progress import DeploymentStatus
from tests.fixtures.rollouts import load_app

WEB = load_app(
    """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: main, image: "nginx:1.25"}]
"""
)
COMMIT = CommitRef("a" * 40, "Ada", "Bump web")
TARGET = Target(app=WEB, template=WEB.template, template_hash=WEB.template_hash, commit=COMMIT)
NOW = 1_700_000_100.0
STARTED = Event("RolloutStarted", "Rolling out revision 3")
SCALED = Event("ScalingReplicaSet", "Scaled up replica set web-x to 1")


def entry(revision: int, outcome: Outcome, cause: Cause = Cause.CONFIG_CHANGE) -> RevisionEntry:
    return RevisionEntry(
        revision,
        f"h{revision}",
        f"web-h{revision}",
        COMMIT,
        cause=cause,
        started_at=NOW - 30,
        finished_at=NOW,
        outcome=outcome,
    )


def record(*entries: RevisionEntry) -> AppRecord:
    return AppRecord(revisions=entries)


def step(revision: int, *events: Event, after: AppRecord | None = None) -> Step:
    return Step(AppPhase.PROGRESSING, "", revision, DeploymentStatus(), events=events, record=after)


ROLLBACK_PIN = Pin(2, "h2", "digest", cause=Cause.AUTO_ROLLBACK, rolled_back_from=3, by="gitdeploy")


@pytest.mark.parametrize(
    ("name", "target", "before", "the_step", "expected"),
    [
        ("nothing happened", TARGET, record(), step(1, SCALED), []),
        (
            "a new revision started",
            TARGET,
            record(),
            step(3, STARTED, SCALED),
            [("started", 3, "ConfigChange")],
        ),
        (
            "a revision completed",
            TARGET,
            record(entry(1, Outcome.COMPLETE)),
            step(2, after=record(entry(1, Outcome.COMPLETE), entry(2, Outcome.COMPLETE))),
            [("completed", 2, "ConfigChange")],
        ),
        (
            "a revision failed",
            TARGET,
            record(entry(1, Outcome.COMPLETE)),
            step(2, after=record(entry(1, Outcome.COMPLETE), entry(2, Outcome.FAILED))),
            [("failed", 2, "ConfigChange")],
        ),
        (
            "an outcome already recorded is not repeated (record rewritten for its status)",
            TARGET,
            record(entry(2, Outcome.FAILED)),
            step(2, after=record(entry(2, Outcome.FAILED))),
            [],
        ),
        (
            "a failed revision that completes later is reported again",
            TARGET,
            record(entry(2, Outcome.FAILED)),
            step(2, after=record(entry(2, Outcome.COMPLETE))),
            [("completed", 2, "ConfigChange")],
        ),
        (
            "a newer template cancels the running one and starts",
            TARGET,
            record(),
            step(3, STARTED, after=record(entry(2, Outcome.CANCELLED))),
            [("cancelled", 2, "ConfigChange"), ("started", 3, "ConfigChange")],
        ),
        (
            "a rollback starts as rolled_back",
            dataclasses.replace(TARGET, cause=Cause.AUTO_ROLLBACK, pin=ROLLBACK_PIN),
            record(entry(3, Outcome.FAILED)),
            step(4, STARTED),
            [("rolled_back", 4, "AutoRollback")],
        ),
        (
            "a completed rollback keeps its cause",
            TARGET,
            record(entry(4, Outcome.RUNNING, Cause.AUTO_ROLLBACK)),
            step(4, after=record(entry(4, Outcome.COMPLETE, Cause.AUTO_ROLLBACK))),
            [("completed", 4, "AutoRollback")],
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_rollout_transitions(
    name: str, target: Target, before: AppRecord, the_step: Step, expected: list[tuple[str, int, str]]
) -> None:
    found = rollout_transitions(target, before, the_step, NOW)
    assert [(t.event.value, t.entry.revision, t.cause) for t in found] == expected
    assert all(t.app == AppKey("shop", "web") for t in found)


def test_a_started_entry_says_what_is_deployed_and_a_rollback_where_from() -> None:
    [started] = rollout_transitions(TARGET, record(), step(3, STARTED), NOW)
    assert started.entry == RevisionEntry(
        revision=3,
        template_hash=WEB.template_hash,
        replica_set=f"web-{WEB.template_hash}",
        commit=COMMIT,
        change_cause="Bump web",
        images=(("main", "nginx:1.25"),),
        started_at=NOW,
    )
    assert started.seconds is None
    rollback = dataclasses.replace(TARGET, cause=Cause.AUTO_ROLLBACK, pin=ROLLBACK_PIN)
    [back] = rollout_transitions(rollback, record(), step(4, STARTED), NOW)
    assert (back.event, back.entry.rolled_back_from, back.entry.rolled_back_to, back.entry.by) == (
        RolloutEvent.ROLLED_BACK,
        3,
        2,
        "gitdeploy",
    )


def test_an_ended_rollout_carries_its_duration() -> None:
    [ended] = rollout_transitions(TARGET, record(), step(2, after=record(entry(2, Outcome.COMPLETE))), NOW)
    assert ended.seconds == 30.0


def test_docstring_examples() -> None:
    result = doctest.testmod(transitions)
    assert result.attempted > 0 and result.failed == 0
