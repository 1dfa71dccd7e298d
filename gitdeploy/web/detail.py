"""What the app page shows: the app as ``status`` shows it, its revisions as ``history`` shows
them, the ReplicaSets that run it, its events, its pin and suspended image triggers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.inspect import (
    AppView,
    TemplateDiff,
    list_app_views,
    revision_history,
    template_diff,
)
from gitdeploy.core.history.records import RevisionEntry
from gitdeploy.core.history.wording import describe_age, describe_cause, describe_outcome, describe_pin
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import PHASE_ANNOTATION, record_name
from gitdeploy.core.sync.syncstate import Sync
from gitdeploy.core.timestamps import parse_timestamp
from gitdeploy.core.weblinks import CommitLinks
from gitdeploy.errors import NotFoundError
from gitdeploy.web.hooklogs import HookLog, read_hook_logs

EVENTS_SHOWN = 20


@dataclass(frozen=True)
class RevisionLine:
    """One row of the revision timeline, in the words of ``gitdeploy history``."""

    revision: int
    sha: str
    short: str
    subject: str
    author: str
    age: str
    cause: str
    outcome: str
    images: str
    link: str | None = None
    """The commit's page on the repo's web site, when one is configured (``--repo-web-url``)."""


@dataclass(frozen=True)
class ReplicaSetLine:
    """One ReplicaSet of the app and its pods (the running rollout, newest first)."""

    name: str
    revision: int
    phase: str
    desired: int
    replicas: int
    ready: int
    available: int


@dataclass(frozen=True)
class EventLine:
    age: str
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class AppDetail:
    view: AppView
    revisions: Sequence[RevisionLine]
    """Newest first."""
    replica_sets: Sequence[ReplicaSetLine]
    events: Sequence[EventLine]
    notes: Sequence[str]
    """A pin the loop has not reported yet (why, and the way out). Suspended image triggers and a
    reported pin are in the app's message, as ``status`` shows them."""
    diff: TemplateDiff | None
    """What the current revision changed in the template (None with no revision)."""
    hook_logs: Sequence[HookLog] = ()
    commit_link: str | None = None
    """The current revision's commit on the repo's web site, when one is configured."""


def revision_line(entry: RevisionEntry, now: float, links: CommitLinks | None = None) -> RevisionLine:
    return RevisionLine(
        revision=entry.revision,
        sha=entry.commit.sha,
        short=entry.commit.short,
        subject=entry.commit.subject,
        author=entry.commit.author,
        age=describe_age(entry.started_at, now),
        cause=describe_cause(entry),
        outcome=describe_outcome(entry),
        images=", ".join(image for _, image in entry.images),
        link=links.link(entry.commit.sha) if links is not None else None,
    )


@dataclass(frozen=True)
class Comparison:
    """Which two revisions' templates the app page compares: ``?from=1&to=3``."""

    before: int
    after: int

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> Comparison | None:
        """The comparison a request asks for; None without one (or with one that is no number).

        >>> Comparison.from_query({"from": "1", "to": "3"}), Comparison.from_query({"from": "x"})
        (Comparison(before=1, after=3), None)
        """
        before, after = query.get("from", ""), query.get("to", "")
        return cls(int(before), int(after)) if before.isdigit() and after.isdigit() else None


def read_app_detail(
    cluster: Cluster,
    key: AppKey,
    now: float,
    comparison: Comparison | None = None,
    links: CommitLinks | None = None,
) -> AppDetail:
    """The app page of ``key`` (NotFoundError when gitdeploy does not manage it), with the template
    diff ``comparison`` asks for (else what the current revision changed)."""
    views = list_app_views(cluster, key.namespace, key.name)
    if not views:
        raise NotFoundError(f"no app {key}", hint="the apps page lists the apps gitdeploy runs")
    entries, record = revision_history(cluster, key)
    replica_sets = sorted(
        cluster.list_replica_sets(key.namespace, key.name), key=lambda rs: rs.state.revision, reverse=True
    )
    view = views[0]
    notes = []
    if record.pin is not None and view.sync != Sync.PINNED:  # Pinned: the message says it already
        notes.append(describe_pin(str(key), record.pin))
    diff = _diff(cluster, key, entries, comparison)
    revisions = [revision_line(e, now, links) for e in reversed(entries)]
    current = next((r for r in revisions if r.revision == view.revision), None)
    return AppDetail(
        view=view,
        revisions=revisions,
        replica_sets=[
            ReplicaSetLine(
                rs.name,
                rs.state.revision,
                record.outcome_of(rs.state.revision, rs.annotation(PHASE_ANNOTATION)).value,
                rs.state.desired_replicas_annotation or rs.state.replicas,
                rs.state.replicas,
                rs.state.ready,
                rs.state.available,
            )
            for rs in replica_sets
        ],
        events=_events(cluster, key, [rs.name for rs in replica_sets], now),
        notes=notes,
        diff=diff,
        hook_logs=read_hook_logs(cluster, key, entries),
        commit_link=current.link if current is not None else None,
    )


def _diff(
    cluster: Cluster, key: AppKey, entries: list[RevisionEntry], comparison: Comparison | None
) -> TemplateDiff | None:
    if not entries:
        return None
    if comparison is None:
        return template_diff(cluster, key, entries, entries[-1].revision)
    known = {e.revision for e in entries}
    for revision in (comparison.before, comparison.after):
        if revision not in known:
            raise NotFoundError(f"{key} has no revision {revision}", hint="its history lists the revisions")
    return template_diff(cluster, key, entries, comparison.after, against=comparison.before)


def _events(cluster: Cluster, key: AppKey, replica_sets: list[str], now: float) -> list[EventLine]:
    """The newest events about the app, its record and its ReplicaSets."""
    about = {key.name, record_name(key.name), *replica_sets}
    found = [
        e for e in cluster.list_events(key.namespace) if (e.get("involvedObject") or {}).get("name") in about
    ]
    return [
        EventLine(
            describe_age(_event_time(e), now),
            str(e.get("type") or ""),
            str(e.get("reason") or ""),
            str(e.get("message") or ""),
        )
        for e in reversed(found[-EVENTS_SHOWN:])
    ]


def _event_time(event: dict[str, object]) -> float | None:
    stamp = event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
    return parse_timestamp(stamp) if isinstance(stamp, str) else None
