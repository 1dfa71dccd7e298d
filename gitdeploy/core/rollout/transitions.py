"""What a pass changed about an app's rollouts, for metrics and notifications.

The planner already says everything that happened in a :class:`~gitdeploy.core.rollout.Step`: a
``RolloutStarted`` event when a revision begins, and a revision entry in the record when one
reaches an outcome. :func:`rollout_transitions` reads those (it decides nothing), so observers see
exactly the rollouts that the cluster and ``gitdeploy history`` show.

A rollout that returns to an earlier revision because of a rollback (``Rollback`` or
``AutoRollback`` cause) begins with ``rolled_back`` instead of ``started``; every rollout then ends
with one of ``completed``, ``failed`` or ``cancelled`` (superseded by a newer template).

>>> from gitdeploy.core.history.records import CommitRef
>>> before = AppRecord()
>>> entry = RevisionEntry(1, "abc", "web-abc", CommitRef("0" * 40), started_at=10.0, finished_at=25.0,
...                       outcome=Outcome.COMPLETE)
>>> after = AppRecord(revisions=(entry,))
>>> [(t.event.value, t.seconds) for t in ended_rollouts(AppKey("shop", "web"), before, after)]
[('completed', 15.0)]
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gitdeploy.core.history.records import AppRecord, Cause, Outcome, RevisionEntry
from gitdeploy.core.models import AppKey
from gitdeploy.core.rollout import Step, Target

STARTED_REASON = "RolloutStarted"
"""The reason of the event the planner emits when it starts a revision."""

ROLLBACK_CAUSES = frozenset({Cause.ROLLBACK, Cause.AUTO_ROLLBACK})


class RolloutEvent(StrEnum):
    STARTED = "started"
    ROLLED_BACK = "rolled_back"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


_ENDINGS = {
    Outcome.COMPLETE: RolloutEvent.COMPLETED,
    Outcome.FAILED: RolloutEvent.FAILED,
    Outcome.CANCELLED: RolloutEvent.CANCELLED,
}


@dataclass(frozen=True)
class RolloutTransition:
    """One rollout of one app began or ended; ``entry`` is its revision record at that moment."""

    app: AppKey
    event: RolloutEvent
    entry: RevisionEntry
    seconds: float | None = None
    """How long the rollout took (ended rollouts whose start is known)."""

    @property
    def cause(self) -> Cause:
        return self.entry.cause


def started_rollout(target: Target, step: Step, now: float) -> RolloutTransition | None:
    """The rollout ``step`` started, if it started one: its entry is built from ``target``."""
    if not any(event.reason == STARTED_REASON for event in step.events):
        return None
    pin = target.pin if target.cause in ROLLBACK_CAUSES else None
    entry = RevisionEntry(
        revision=step.revision,
        template_hash=target.template_hash,
        replica_set=f"{target.app.name}-{target.template_hash}",
        commit=target.commit,
        cause=target.cause,
        change_cause=target.change_cause or target.commit.subject,
        images=tuple((c.name, c.image) for c in target.template.containers),
        started_at=now,
        rolled_back_from=pin.rolled_back_from if pin is not None else None,
        rolled_back_to=pin.revision if pin is not None else None,
        by=pin.by if pin is not None else "",
    )
    event = RolloutEvent.ROLLED_BACK if pin is not None else RolloutEvent.STARTED
    return RolloutTransition(target.app.key, event, entry)


def ended_rollouts(app: AppKey, before: AppRecord, after: AppRecord) -> list[RolloutTransition]:
    """Revisions that reached an outcome between ``before`` and ``after`` (records of one app)."""
    ended = []
    for entry in after.revisions:
        event = _ENDINGS.get(entry.outcome)
        if event is None:
            continue
        previous = before.entry(entry.revision)
        if previous is not None and previous.outcome is entry.outcome:
            continue
        seconds = None
        if entry.started_at is not None and entry.finished_at is not None:
            seconds = max(entry.finished_at - entry.started_at, 0.0)
        ended.append(RolloutTransition(app, event, entry, seconds))
    return ended


def rollout_transitions(target: Target, before: AppRecord, step: Step, now: float) -> list[RolloutTransition]:
    """Every rollout that ``step`` (planned for ``target`` from ``before``) ended or started, in order."""
    transitions = []
    if step.record is not None:
        transitions = ended_rollouts(target.app.key, before, step.record)
    started = started_rollout(target, step, now)
    if started is not None:
        transitions.append(started)
    return transitions
