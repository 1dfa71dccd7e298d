"""Rebuilding an app record from its ReplicaSets, after the record was deleted or emptied.

The record owns nothing (DESIGN.md, "The cluster model"): losing it costs history, never a pod.
What the ReplicaSets' annotations still say comes back: each ReplicaSet's revision with its
commit, author, subject, cause, change cause, images, start and phase; the earlier revisions a
reused ReplicaSet had (``gitdeploy.io/revision-history``: template known, commit unknown); and a
rollback pin when the newest revision was a rollback, so a lost record does not undo a rollback.
What only the record held is lost: hook results and logs, end times, failure messages, the
revisions whose ReplicaSets the history limit removed.

>>> from gitdeploy.core.scaling.replicasets import ReplicaSetState
>>> def rs(name, revision, phase, **more):
...     notes = {"gitdeploy.io/commit": f"c{revision}", "gitdeploy.io/phase": phase, **more}
...     state = ReplicaSetState(name, name[-1], revision, 0.0)
...     return ObservedReplicaSet("shop", "web", state, tuple(notes.items()))
>>> rebuilt = rebuild_record([rs("web-a", 3, "Complete", **{"gitdeploy.io/revision-history": "1"}),
...                          rs("web-b", 2, "Complete")], lost="deleted", now=0.0)
>>> [(e.revision, e.commit.sha, e.outcome.value) for e in rebuilt.record.revisions]
[(1, '', 'Cancelled'), (2, 'c2', 'Complete'), (3, 'c3', 'Complete')]
>>> rebuilt.message.split(" at ")[0]
'the app record gitdeploy.web was deleted; rebuilt revisions 1, 2, 3 from the ReplicaSets'
>>> rebuild_record([], lost="deleted", now=0.0) is None
True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gitdeploy.core.canaryview import read_canary_view
from gitdeploy.core.history.records import AppRecord, Cause, CommitRef, Outcome, Pin, RevisionEntry
from gitdeploy.core.models import PodTemplate
from gitdeploy.core.observed import (
    AUTHOR_ANNOTATION,
    CAUSE_ANNOTATION,
    CHANGE_CAUSE_ANNOTATION,
    COMMIT_ANNOTATION,
    PHASE_ANNOTATION,
    REVISION_HISTORY_ANNOTATION,
    STARTED_AT_ANNOTATION,
    SUBJECT_ANNOTATION,
    ObservedReplicaSet,
    newest_replica_set,
    record_name,
)
from gitdeploy.core.timestamps import format_timestamp, parse_timestamp


def revision_entry_of(
    rs: ObservedReplicaSet, outcome: Outcome, template: PodTemplate | None = None
) -> RevisionEntry:
    """What a ReplicaSet's annotations say about its revision (commit, cause, images, start)."""
    template = template or rs.template
    canary = read_canary_view(rs, rs.state.replicas)
    return RevisionEntry(
        revision=rs.state.revision,
        template_hash=rs.state.template_hash,
        replica_set=rs.name,
        commit=CommitRef(
            rs.annotation(COMMIT_ANNOTATION),
            rs.annotation(AUTHOR_ANNOTATION),
            rs.annotation(SUBJECT_ANNOTATION),
        ),
        cause=Cause.parse(rs.annotation(CAUSE_ANNOTATION), Cause.CONFIG_CHANGE),
        change_cause=rs.annotation(CHANGE_CAUSE_ANNOTATION),
        images=tuple((c.name, c.image) for c in template.containers) if template is not None else (),
        started_at=parse_timestamp(rs.annotation(STARTED_AT_ANNOTATION)),
        outcome=outcome,
        returns_to=returns_to(rs.annotation(REVISION_HISTORY_ANNOTATION)),
        canary=canary.summary() if canary is not None else "",
    )


def returns_to(history: str) -> int | None:
    """The revision a reused ReplicaSet last had (the last of its revision-history annotation)."""
    last = history.rsplit(",", 1)[-1]
    return int(last) if last.isdigit() else None


def _earlier_revisions(rs: ObservedReplicaSet) -> list[RevisionEntry]:
    """The revisions a reused ReplicaSet had before its current one: template known, the rest not."""
    earlier = [int(r) for r in rs.annotation(REVISION_HISTORY_ANNOTATION).split(",") if r.strip().isdigit()]
    return [
        RevisionEntry(
            revision=revision,
            template_hash=rs.state.template_hash,
            replica_set=rs.name,
            commit=CommitRef(""),
            outcome=Outcome.CANCELLED,
            message=(
                f"rebuilt from the revision-history of ReplicaSet {rs.name}: "
                "its commit and outcome were only in the lost record"
            ),
        )
        for revision in earlier
    ]


def _outcome(rs: ObservedReplicaSet) -> Outcome:
    try:
        return Outcome(rs.annotation(PHASE_ANNOTATION))
    except ValueError:
        return Outcome.RUNNING


def _rebuilt_pin(newest: ObservedReplicaSet, entry: RevisionEntry) -> Pin | None:
    """The pin of a rollback that the newest revision was (bound to the manifest seen next)."""
    if entry.cause not in (Cause.ROLLBACK, Cause.AUTO_ROLLBACK):
        return None
    return Pin(
        revision=entry.returns_to or entry.revision,
        template_hash=newest.state.template_hash,
        manifest_digest="",
        reason="rebuilt from the ReplicaSets after the app record was lost",
        cause=entry.cause,
    )


@dataclass(frozen=True)
class RebuiltRecord:
    record: AppRecord
    message: str
    """What happened and what was lost, for the event, the log and the app's status."""


def rebuild_record(
    replica_sets: Iterable[ObservedReplicaSet], *, lost: str, now: float
) -> RebuiltRecord | None:
    """The record that the ReplicaSets' annotations describe; None when none has a revision.

    ``lost`` says what happened to the record (``deleted``, ``emptied``).
    """
    annotated = [rs for rs in replica_sets if rs.state.revision > 0]
    newest = newest_replica_set(annotated)
    if newest is None:
        return None
    entries: dict[int, RevisionEntry] = {}
    for rs in annotated:
        for entry in _earlier_revisions(rs):
            entries.setdefault(entry.revision, entry)
    for rs in annotated:
        entries[rs.state.revision] = revision_entry_of(rs, _outcome(rs))
    pin = _rebuilt_pin(newest, entries[newest.state.revision])
    suspended = pin is not None and pin.cause is Cause.ROLLBACK
    numbers = ", ".join(str(r) for r in sorted(entries))
    message = (
        f"the app record {record_name(newest.app)} was {lost}; rebuilt revisions {numbers} from the "
        f"ReplicaSets at {format_timestamp(now)}: hook results, end times and revisions whose "
        "ReplicaSet is gone were only in the record and are lost"
        + (f"; the rollback to revision {pin.revision} holds" if pin is not None else "")
    )
    record = AppRecord(
        revisions=tuple(entries[r] for r in sorted(entries)),
        pin=pin,
        triggers_suspended=suspended,
        suspended_reason="a rollback (rebuilt from the ReplicaSets)" if suspended else "",
        recovery=message,
    )
    return RebuiltRecord(record, message)
