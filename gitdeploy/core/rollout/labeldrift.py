"""Hand edits of the labels of an app's ReplicaSet (pure; the reads and writes are the controller's).

gitdeploy finds an app's ReplicaSets by their labels (``gitdeploy.io/app``, the managed-by label,
``gitdeploy.io/template-hash``). ``kubectl label rs web-<hash> gitdeploy.io/app-`` hides one from
those lists; a pass would then plan a second ReplicaSet for the template it runs, and meet 409
AlreadyExists on its name. Its name is deterministic (``<app>-<hash>``, and the revision log keeps
it), so when the record knows a template but no listed ReplicaSet runs it,
:func:`hidden_replica_sets` names the ones to read by name (no extra request while they are
listed): the target's, and during a rollout those of the revisions it replaces, which may still
run pods. Its selector (immutable) says whether it is the one gitdeploy made for that template:
then :func:`label_changes` says what to put back and :func:`told_relabelled` what was undone.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gitdeploy.core.hashing import TEMPLATE_HASH_LABEL
from gitdeploy.core.history.records import Outcome
from gitdeploy.core.observed import APP_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE, ObservedReplicaSet
from gitdeploy.core.rollout.drift import DRIFT_CORRECTED
from gitdeploy.core.rollout.inputs import Snapshot
from gitdeploy.core.rollout.outputs import Event, Step


@dataclass(frozen=True)
class NamedReplicaSet:
    """A ReplicaSet read by name: its labels and the template hash its selector matches."""

    name: str
    labels: tuple[tuple[str, str], ...]
    selector_hash: str


def own_labels(app: str, template_hash: str) -> dict[str, str]:
    """The labels gitdeploy puts on the ReplicaSet of ``app`` for ``template_hash``."""
    return {TEMPLATE_HASH_LABEL: template_hash, APP_LABEL: app, MANAGED_BY_LABEL: MANAGED_BY_VALUE}


def app_by_name(name: str) -> str:
    """The app of gitdeploy's ReplicaSet ``name`` (``<app>-<hash>``; a template hash has no dash),
    which its labels may no longer say.

    >>> app_by_name("shop-web-5d8f7c")
    'shop-web'
    """
    return name.rpartition("-")[0]


def labels_edited(rs: ObservedReplicaSet) -> bool:
    """Whether the labels of gitdeploy's ReplicaSet ``rs`` no longer name the app and template
    hash that its name does (``kubectl label rs web-<hash> gitdeploy.io/app-``, seen by a watch
    of the managed ReplicaSets).

    >>> from gitdeploy.core.scaling.replicasets import ReplicaSetState
    >>> def seen(app: str, label_hash: str) -> ObservedReplicaSet:
    ...     return ObservedReplicaSet("shop", app, ReplicaSetState("web-abc", label_hash, 1, 0.0))
    >>> labels_edited(seen("web", "abc")), labels_edited(seen("", "abc")), labels_edited(seen("web", ""))
    (False, True, True)
    """
    return rs.name != f"{rs.app}-{rs.state.template_hash}"


def hidden_replica_sets(app: str, template_hash: str, snap: Snapshot) -> tuple[tuple[str, str], ...]:
    """``(name, template hash)`` of each ReplicaSet to read by name: the revision log knows its
    template but no listed ReplicaSet of the app runs it (its labels may have been changed by
    hand). The target's first; then those of the revisions from the newest Complete one on, which
    may still run pods a rollout must scale down (older ones were scaled to 0 when it completed).
    Empty while every one of them is listed: no extra request.

    >>> from gitdeploy.core.history.records import AppRecord, CommitRef, Outcome, RevisionEntry
    >>> old = RevisionEntry(1, "abc", "web-abc", CommitRef("a"), outcome=Outcome.COMPLETE)
    >>> new = RevisionEntry(2, "def", "web-def", CommitRef("b"))
    >>> snap = Snapshot(replica_sets=(), pods=(), record=AppRecord(revisions=(old, new)))
    >>> hidden_replica_sets("web", "def", snap)
    (('web-def', 'def'), ('web-abc', 'abc'))
    >>> hidden_replica_sets("web", "new", Snapshot(replica_sets=(), pods=(), record=AppRecord()))
    ()
    """
    listed = {rs.state.template_hash for rs in snap.replica_sets}
    revisions = snap.record.revisions
    stable = max((n for n, e in enumerate(revisions) if e.outcome is Outcome.COMPLETE), default=0)
    wanted = dict.fromkeys([template_hash, *(e.template_hash for e in revisions[stable:])])
    hidden = []
    for wanted_hash in wanted:
        known = [e for e in revisions if e.template_hash == wanted_hash]
        if known and wanted_hash not in listed:
            hidden.append((known[-1].replica_set or f"{app}-{wanted_hash}", wanted_hash))
    return tuple(hidden)


def label_changes(found: NamedReplicaSet, app: str, template_hash: str) -> tuple[str, ...]:
    """What was changed of gitdeploy's labels on ``found`` (empty: nothing), e.g.
    ``gitdeploy.io/app: removed``, ``gitdeploy.io/template-hash: abc -> edited``.

    >>> found = NamedReplicaSet("web-abc", (("gitdeploy.io/template-hash", "x"),), "abc")
    >>> label_changes(found, "web", "abc")[:2]
    ('gitdeploy.io/template-hash: abc -> x', 'gitdeploy.io/app: removed')
    """
    labels = dict(found.labels)
    changes = []
    for key, value in own_labels(app, template_hash).items():
        if key not in labels:
            changes.append(f"{key}: removed")
        elif labels[key] != value:
            changes.append(f"{key}: {value} -> {labels[key]}")
    return tuple(changes)


def is_own(found: NamedReplicaSet, template_hash: str) -> bool:
    """Whether ``found`` is the ReplicaSet gitdeploy made for ``template_hash``: its selector (which
    cannot change) matches that hash."""
    return found.selector_hash == template_hash


def relabel_event(name: str, changes: tuple[str, ...]) -> Event:
    """The ``DriftCorrected`` event that says which labels of ReplicaSet ``name`` were put back."""
    message = f"{name}: its labels were changed by hand ({', '.join(changes)}); restored them"
    return Event(DRIFT_CORRECTED, message, warning=True)


def told_relabelled(step: Step, name: str, changes: tuple[str, ...]) -> Step:
    """``step`` with the ``DriftCorrected`` event first and its message saying what was put back."""
    event = relabel_event(name, changes)
    message = f"{step.message}; restored the labels of {name}, changed by hand"
    return dataclasses.replace(step, events=(event, *step.events), message=message)


def foreign_message(found: NamedReplicaSet, app: str, template_hash: str) -> str:
    """Why a ReplicaSet with the name gitdeploy needs cannot be used, and what to do."""
    return (
        f"ReplicaSet {found.name} exists but is not the one gitdeploy made for {app}'s template "
        f"{template_hash} (its selector matches template hash {found.selector_hash or '(none)'}); "
        f"gitdeploy will not change or delete it: rename or delete it, and the next pass creates {app}'s"
    )


__all__ = [
    "NamedReplicaSet",
    "app_by_name",
    "foreign_message",
    "hidden_replica_sets",
    "is_own",
    "label_changes",
    "labels_edited",
    "own_labels",
    "relabel_event",
    "told_relabelled",
]
