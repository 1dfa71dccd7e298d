"""Which ReplicaSets a pass reads by name because their labels may hide them from the lists."""

from __future__ import annotations

import pytest

from gitdeploy.core.history.records import AppRecord, CommitRef, Outcome, RevisionEntry
from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.core.rollout.drift import DRIFT_CORRECTED
from gitdeploy.core.rollout.inputs import Snapshot
from gitdeploy.core.rollout.labeldrift import (
    NamedReplicaSet,
    foreign_message,
    hidden_replica_sets,
    is_own,
    label_changes,
    told_relabelled,
)
from gitdeploy.core.rollout.outputs import AppPhase, Event, Step
from gitdeploy.core.scaling.progress import DeploymentStatus
from gitdeploy.core.scaling.replicasets import ReplicaSetState


def _entry(revision: int, template_hash: str, outcome: Outcome) -> RevisionEntry:
    return RevisionEntry(
        revision=revision,
        template_hash=template_hash,
        replica_set=f"web-{template_hash}",
        commit=CommitRef(f"c{revision}"),
        outcome=outcome,
    )


def _listed(*hashes: str) -> tuple[ObservedReplicaSet, ...]:
    return tuple(
        ObservedReplicaSet("shop", "web", ReplicaSetState(f"web-{h}", h, n + 1, float(n)))
        for n, h in enumerate(hashes)
    )


DONE, RUNNING, FAILED, CANCELLED = Outcome.COMPLETE, Outcome.RUNNING, Outcome.FAILED, Outcome.CANCELLED


@pytest.mark.parametrize(
    ("revisions", "listed", "target", "expected"),
    [
        # settled, everything listed: no read
        ([("a", DONE)], ("a",), "a", ()),
        # the target's ReplicaSet hidden
        ([("a", DONE)], (), "a", (("web-a", "a"),)),
        # a template never rolled out: nothing to read (the pass creates it)
        ([("a", DONE)], ("a",), "b", ()),
        # mid-rollout, the stable one hidden: read it, it may run pods
        ([("a", DONE), ("b", RUNNING)], ("b",), "b", (("web-a", "a"),)),
        # both hidden: the target's first
        ([("a", DONE), ("b", RUNNING)], (), "b", (("web-b", "b"), ("web-a", "a"))),
        # a cancelled revision after the stable one may still run pods too
        ([("a", DONE), ("b", CANCELLED), ("c", RUNNING)], ("a", "c"), "c", (("web-b", "b"),)),
        # revisions before the newest Complete one were scaled to 0 when it completed: not read
        ([("a", DONE), ("b", DONE), ("c", RUNNING)], ("b", "c"), "c", ()),
        # a failed revision after the stable one, its ReplicaSet gone: read (a 404 costs one GET)
        ([("a", DONE), ("b", FAILED)], ("a",), "a", (("web-b", "b"),)),
        # no Complete revision yet: every known one
        ([("a", FAILED), ("b", RUNNING)], ("b",), "b", (("web-a", "a"),)),
    ],
)
def test_hidden_replica_sets(
    revisions: list[tuple[str, Outcome]],
    listed: tuple[str, ...],
    target: str,
    expected: tuple[tuple[str, str], ...],
) -> None:
    record = AppRecord(revisions=tuple(_entry(n + 1, h, o) for n, (h, o) in enumerate(revisions)))
    snap = Snapshot(replica_sets=_listed(*listed), pods=(), record=record)
    assert hidden_replica_sets("web", target, snap) == expected


# -- a ReplicaSet read by name: whether it is gitdeploy's, and what is told when its labels go back --

OWN = NamedReplicaSet("web-a", (("gitdeploy.io/template-hash", "a"),), "a")
FOREIGN = NamedReplicaSet("web-a", (), "")


@pytest.mark.parametrize(
    ("found", "own"), [(OWN, True), (FOREIGN, False), (NamedReplicaSet("web-a", (), "b"), False)]
)
def test_only_a_replica_set_whose_selector_matches_the_hash_is_gitdeploys(
    found: NamedReplicaSet, own: bool
) -> None:
    assert is_own(found, "a") is own


def test_restored_labels_are_told_in_the_step_and_a_drift_event() -> None:
    changes = label_changes(OWN, "web", "a")
    step = Step(
        AppPhase.COMPLETE, "revision 1 complete", 1, DeploymentStatus(), events=(Event("X", "earlier"),)
    )

    told = told_relabelled(step, "web-a", changes)

    assert told.message == "revision 1 complete; restored the labels of web-a, changed by hand"
    first, earlier = told.events
    assert (first.reason, first.warning, earlier.message) == (DRIFT_CORRECTED, True, "earlier")
    assert first.message == (
        "web-a: its labels were changed by hand (gitdeploy.io/app: removed, "
        "app.kubernetes.io/managed-by: removed); restored them"
    )


def test_a_foreign_replica_set_with_the_name_is_refused_saying_what_to_do() -> None:
    message = foreign_message(FOREIGN, "web", "a")
    assert "ReplicaSet web-a exists but is not the one gitdeploy made for web's template a" in message
    assert "(its selector matches template hash (none))" in message
    assert "rename or delete it" in message
