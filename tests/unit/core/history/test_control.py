"""Table-driven tests of the record changes rollback and deployment control make (pure)."""

from __future__ import annotations

import dataclasses

import pytest

from gitdeploy.core.history.control import (
    RollbackChoice,
    SkippedRollback,
    apply_rollback,
    cancel,
    choose_rollback,
    enable_triggers,
    request_latest,
    retry,
)
from gitdeploy.core.history.records import AppRecord, CommitRef, Outcome, Pin, RevisionEntry, SyncStatus
from gitdeploy.errors import PermanentError

NOW = 1_700_000_000.0


def rev(n: int, template: str, outcome: Outcome = Outcome.COMPLETE, sha: str = "") -> RevisionEntry:
    return RevisionEntry(
        n, template, f"web-{template}", CommitRef((sha or str(n)) * 40), outcome=outcome, message=f"m{n}"
    )


# revisions 1..5: templates a, b, a (a revert), c (Failed), d (Complete)
LOG = (
    rev(1, "a", sha="1"),
    rev(2, "b", sha="2"),
    rev(3, "a", sha="3"),
    rev(4, "c", Outcome.FAILED, sha="4"),
    rev(5, "d", sha="abcd"),
)
RECORD = AppRecord(revisions=LOG)


@pytest.mark.parametrize(
    ("current", "to_revision", "to_commit", "target"),
    [
        (5, None, None, 3),  # newest Complete before 5 with another template (4 Failed is skipped)
        (3, None, None, 2),  # 2 has another template than 3
        (2, None, None, 1),
        (5, 1, None, 1),
        (5, 4, None, 4),  # a chosen revision may be a failed one
        (5, None, "2222", 2),
        (5, None, "ABCD", None),  # the current revision's own commit: skipped
        (2, None, "33333333", 3),
    ],
    ids=["default skips failed", "default from 3", "default from 2", "to 1", "to failed 4", "to commit",
         "to own commit", "to later commit"],
)  # fmt: skip
def test_choose_rollback_picks_the_target(
    current: int, to_revision: int | None, to_commit: str | None, target: int | None
) -> None:
    record = RECORD
    if target is None:
        with pytest.raises(SkippedRollback, match="already at revision 5's template"):
            choose_rollback(record, record.entry(current), to_revision=to_revision, to_commit=to_commit)
        return
    choice = choose_rollback(record, record.entry(current), to_revision=to_revision, to_commit=to_commit)
    assert (choice.current.revision, choice.target.revision) == (current, target)


@pytest.mark.parametrize(
    ("record", "current", "kwargs", "error", "message"),
    [
        (RECORD, None, {}, PermanentError, "has no revision to roll back from yet"),
        (RECORD, 5, {"to_revision": 9}, PermanentError, r"has no revision 9 \(kept revisions: 1–5\)"),
        (RECORD, 5, {"to_commit": "ab"}, PermanentError, "too short to identify"),
        (RECORD, 5, {"to_commit": "ffff"}, PermanentError, "no revision of web was deployed from"),
        (RECORD, 3, {"to_revision": 1}, SkippedRollback, "already at revision 1's template"),
        (AppRecord(revisions=LOG[:1]), 1, {}, PermanentError, "no earlier Complete revision"),
        (AppRecord(revisions=(rev(1, "a"), rev(2, "a"))), 2, {}, PermanentError, "no earlier Complete"),
    ],
    ids=["nothing deployed", "unknown revision", "short sha", "unknown commit", "same template",
         "single revision", "only the same template before"],
)  # fmt: skip
def test_choose_rollback_refuses(
    record: AppRecord, current: int | None, kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    entry = record.entry(current) if current is not None else None
    with pytest.raises(error, match=message):
        choose_rollback(record, entry, app="web", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "pin_fields"),
    [
        ({}, {"template_hash": "a", "template": "", "reason": "rolled back by alice", "restore": ()}),
        ({"message": "checkout broken"}, {"reason": "checkout broken"}),
        ({"template": '{"spec":{}}', "template_hash": "rebuilt"}, {"template_hash": "rebuilt"}),
        (
            {"restore": ("scaling", "strategy"), "manifest": '{"kind":"Deployment"}'},
            {"restore": ("scaling", "strategy"), "manifest": '{"kind":"Deployment"}'},
        ),
    ],
    ids=["default", "message", "rebuilt from git", "restores settings"],
)
def test_apply_rollback_pins_the_target_and_suspends_triggers(
    kwargs: dict[str, object], pin_fields: dict[str, object]
) -> None:
    choice = RollbackChoice(current=LOG[4], target=LOG[2])
    args: dict[str, object] = {"manifest_digest": "d1", "by": "alice", "message": "", "now": NOW, **kwargs}
    record = apply_rollback(RECORD, choice, **args)  # type: ignore[arg-type]
    assert record.pin is not None
    assert (record.pin.revision, record.pin.rolled_back_from, record.pin.by) == (3, 5, "alice")
    assert record.pin.manifest_digest == "d1"
    for name, value in pin_fields.items():
        assert getattr(record.pin, name) == value, name
    assert record.triggers_suspended
    assert record.suspended_reason.startswith("rollback from revision 5 to 3 by alice at ")
    assert record.revisions == RECORD.revisions  # the loop writes the new revision, not the command


PINNED = dataclasses.replace(
    RECORD, pin=Pin(3, "a", "d1"), triggers_suspended=True, suspended_reason="x", deploy_requested=False
)


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (PINNED, dataclasses.replace(PINNED, pin=None, triggers_suspended=False, suspended_reason="")),
        (RECORD, RECORD),
    ],
    ids=["pinned and suspended", "nothing to resume"],
)
def test_enable_triggers_resumes_and_releases_the_pin(record: AppRecord, expected: AppRecord) -> None:
    assert enable_triggers(record) == expected


@pytest.mark.parametrize(
    ("record", "in_progress", "expected"),
    [
        (PINNED, False, dataclasses.replace(PINNED, pin=None, deploy_requested=True)),
        (RECORD, False, dataclasses.replace(RECORD, deploy_requested=True)),
        (RECORD, True, None),
    ],
    ids=["releases the pin", "requests a rollout", "refused in progress"],
)
def test_request_latest(record: AppRecord, in_progress: bool, expected: AppRecord | None) -> None:
    if expected is None:
        with pytest.raises(PermanentError, match="has a rollout in progress"):
            request_latest(record, in_progress=in_progress, app="shop/web")
        return
    updated = request_latest(record, in_progress=in_progress)
    assert updated == expected
    assert updated.triggers_suspended == record.triggers_suspended  # triggers are another switch


RUNNING = AppRecord(
    revisions=(*LOG, rev(6, "e", Outcome.RUNNING)),
    status=SyncStatus("OutOfSync", "Progressing", manifest_digest="d6"),
)


@pytest.mark.parametrize(
    ("record", "current", "pinned", "message"),
    [
        (RUNNING, 6, 5, ""),
        (AppRecord(revisions=(rev(1, "a"), rev(2, "b", Outcome.RUNNING))), 2, 1, ""),
        (AppRecord(revisions=(rev(1, "a"), rev(2, "a", Outcome.RUNNING))), 2, None, "no earlier Complete"),
        (RECORD, 5, None, "has no rollout in progress"),
        (RECORD, 4, None, r"has no rollout in progress \(revision 4 is Failed\)"),
    ],
    ids=["to the last Complete", "to revision 1", "same template before", "complete", "failed"],
)
def test_cancel(record: AppRecord, current: int, pinned: int | None, message: str) -> None:
    entry = record.entry(current)
    assert entry is not None
    if pinned is None:
        with pytest.raises(PermanentError, match=message):
            cancel(record, entry, by="bob", now=NOW, app="shop/web")
        return
    updated = cancel(record, entry, by="bob", now=NOW)
    cancelled = updated.entry(current)
    assert cancelled is not None and cancelled.outcome is Outcome.CANCELLED
    assert cancelled.finished_at == NOW and cancelled.message.startswith(
        f"revision {current} cancelled by bob"
    )
    assert updated.pin is not None
    assert (updated.pin.revision, updated.pin.rolled_back_from) == (pinned, current)
    assert updated.pin.manifest_digest == (record.status.manifest_digest if record.status else "")


FAILED_LAST = AppRecord(
    revisions=(
        rev(1, "a"),
        dataclasses.replace(rev(2, "b", Outcome.FAILED), reason="HookFailed", finished_at=NOW),
    )
)


@pytest.mark.parametrize(
    ("record", "current", "message"),
    [
        (FAILED_LAST, 2, ""),
        (dataclasses.replace(FAILED_LAST, pin=Pin(2, "b", "")), 2, ""),  # a pin on its own template
        (RECORD, 5, "last revision 5 is Complete, not Failed: nothing to retry"),
        (RUNNING, 6, "last revision 6 is Running, not Failed"),
        (dataclasses.replace(FAILED_LAST, pin=Pin(1, "a", "")), 2, "is pinned to revision 1"),
    ],
    ids=["failed", "pinned to itself", "complete", "running", "pinned elsewhere"],
)
def test_retry(record: AppRecord, current: int, message: str) -> None:
    entry = record.entry(current)
    assert entry is not None
    if message:
        with pytest.raises(PermanentError, match=message):
            retry(record, entry, by="carol", now=NOW, app="shop/web")
        return
    updated = retry(record, entry, by="carol", now=NOW)
    again = updated.entry(current)
    assert again is not None
    assert (again.revision, again.outcome, again.reason, again.finished_at) == (2, Outcome.RUNNING, "", None)
    assert again.message.startswith("retried by carol at ") and again.message.endswith("(it had failed: m2)")
    assert again.template_hash == entry.template_hash and again.commit == entry.commit
    assert updated.latest_revision == record.latest_revision  # no new revision number
    assert updated.pin == record.pin
