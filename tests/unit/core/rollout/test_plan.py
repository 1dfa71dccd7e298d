"""A pass starts with the app record: a new app's record is created first, a lost or emptied one is
rebuilt from the ReplicaSets (:mod:`gitdeploy.core.rollout.plan`).

Each test builds what the cluster would hold (ReplicaSets with gitdeploy's annotations, hook and
deployer pods, the app record) with tests/fixtures/rolloutpass.py, calls :func:`plan_pass` once and
checks the exact step.
"""

from __future__ import annotations

import dataclasses

import pytest

from gitdeploy.core.history.records import AppRecord, Outcome
from gitdeploy.core.observed import CAUSE_ANNOTATION
from gitdeploy.core.rollout import AppPhase, plan_pass
from tests.fixtures.rolloutpass import (
    RECORD_UID,
    T0,
    V1,
    V2,
    V3,
    entry,
    make_app,
    make_target,
    rs,
    snap,
    thash,
)

# -- the record comes first --------------------------------------------------------------------------


def test_a_new_app_first_creates_its_empty_record() -> None:
    step = plan_pass(make_target(make_app()), snap(uid=""), T0)
    assert (step.phase, step.message, step.revision) == (AppPhase.PROGRESSING, "creating the app record", 0)
    assert (step.create_record, step.record, step.requeue_after) == (True, AppRecord(), 0.0)
    assert (step.actions, step.events) == ((), ())


@pytest.mark.parametrize(("uid", "emptied", "lost"), [("", False, "deleted"), (RECORD_UID, True, "emptied")])
def test_a_lost_record_is_rebuilt_from_the_replica_sets_first_and_said_so(
    uid: str, emptied: bool, lost: str
) -> None:
    # Given revisions 2 (reused by revision 4) and 3, and a record deleted or emptied by hand
    reused = rs(V1, 4, 3, history="2")
    replaced = rs(V2, 3, 0)
    lost_snap = dataclasses.replace(snap(reused, replaced, uid=uid), record_emptied=emptied)
    step = plan_pass(make_target(make_app()), lost_snap, T0)
    # Then the step writes the record rebuilt from them (creates it when it was deleted), nothing else
    assert (step.message, step.revision, step.create_record, step.actions) == (
        "rebuilding the app record",
        4,
        not uid,
        (),
    )
    assert step.record is not None
    assert [(e.revision, e.commit.sha, e.outcome, e.returns_to) for e in step.record.revisions] == [
        (2, "", Outcome.CANCELLED, None),
        (3, f"{3:040d}", Outcome.COMPLETE, None),
        (4, f"{4:040d}", Outcome.COMPLETE, 2),
    ]
    [event] = step.events
    assert (event.reason, event.warning) == ("RecordRebuilt", True)
    assert f"gitdeploy.web was {lost}; rebuilt revisions 2, 3, 4" in event.message
    assert step.record.recovery == event.message and step.record.pin is None


def test_an_emptied_record_without_replica_sets_is_said_so() -> None:
    emptied = dataclasses.replace(snap(), record_emptied=True)
    step = plan_pass(make_target(make_app()), emptied, T0)
    assert (step.create_record, step.actions) == (False, ())
    [event] = step.events
    assert event.reason == "RecordEmptied" and step.record is not None and step.record.recovery


def test_a_rebuilt_record_keeps_a_rollback_pinned() -> None:
    # Given revision 3 rolled back to revision 1's template (its ReplicaSet reused), record deleted
    back = rs(V1, 3, 3, history="1", annotations=((CAUSE_ANNOTATION, "Rollback"),))
    step = plan_pass(make_target(make_app(image=V3)), snap(back, rs(V2, 2, 0), uid=""), T0)
    assert step.record is not None and step.record.pin is not None
    assert (step.record.pin.revision, step.record.pin.template_hash, step.record.triggers_suspended) == (
        1,
        thash(V1),
        True,
    )


def test_the_rebuilt_note_goes_when_the_next_rollout_starts() -> None:
    record = AppRecord(revisions=(entry(V1, 1),), recovery="the app record gitdeploy.web was deleted")
    step = plan_pass(make_target(make_app(image=V2)), snap(rs(V1, 1, 3), record=record), T0)
    assert step.record is not None and step.record.recovery == ""
    settled = plan_pass(make_target(make_app(image=V1)), snap(rs(V1, 1, 3), record=record), T0)
    assert settled.record is None or settled.record.recovery == record.recovery
