"""The app record: its JSON form, tolerance of unknown and damaged payloads, trimming, and lookups."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gitdeploy.core.history.records import (
    MAX_LOG_BYTES,
    MAX_REVISIONS,
    RECORD_BUDGET_BYTES,
    RECORD_VERSION,
    AppRecord,
    Cause,
    CommitRef,
    HookResult,
    Outcome,
    Pin,
    RevisionEntry,
    SyncStatus,
    bound_log,
    fit_revisions,
    load_record,
)
from gitdeploy.errors import DamagedRecordError


def entry(
    revision: int,
    outcome: Outcome = Outcome.COMPLETE,
    template_hash: str = "",
    **fields: Any,
) -> RevisionEntry:
    return RevisionEntry(
        revision=revision,
        template_hash=template_hash or f"h{revision}",
        replica_set=f"web-{template_hash or f'h{revision}'}",
        commit=CommitRef(f"{revision:040d}"),
        outcome=outcome,
        **fields,
    )


FULL_ENTRY = RevisionEntry(
    revision=7,
    template_hash="bcdf245678",
    replica_set="web-bcdf245678",
    commit=CommitRef("0123456789abcdef0123456789abcdef01234567", "Ada Lovelace", "Bump the engine"),
    cause=Cause.AUTO_ROLLBACK,
    change_cause="rollback to revision 5: revision 6 failed",
    images=(("web", "nginx@sha256:" + "a" * 64), ("sidecar", "envoy:1.30")),
    started_at=1_700_000_000.0,
    finished_at=1_700_000_042.5,
    outcome=Outcome.FAILED,
    message="no progress for 600 s",
    reason="ProgressDeadlineExceeded",
    hooks=(
        HookResult("pre", "web-bcdf245678-hook-pre", "Succeeded", attempts=1, exit_code=0, log="migrated"),
        HookResult("mid", "web-bcdf245678-hook-mid", "Failed", attempts=3, exit_code=2, log="boom"),
        HookResult("post", "web-bcdf245678-hook-post", "Running"),
    ),
    rolled_back_from=6,
    rolled_back_to=5,
    by="gitdeploy (autoRollback)",
    returns_to=5,
)
FULL_PIN = Pin(
    revision=5,
    template_hash="zzxx998877",
    manifest_digest="0123456789abcdef",
    reason="revision 6 failed",
    cause=Cause.AUTO_ROLLBACK,
    rolled_back_from=6,
    by="alice",
    restore=("scaling", "strategy"),
    manifest='{"kind":"Deployment"}',
)
FULL_RECORD = AppRecord(
    revisions=(entry(5, template_hash="zzxx998877"), FULL_ENTRY),
    pin=FULL_PIN,
    triggers_suspended=True,
    suspended_reason="rolled back by alice",
    last_synced_commit="f" * 40,
    status=SyncStatus(
        sync="OutOfSync",
        health="Degraded",
        message="revision 7 failed",
        commit="e" * 40,
        location="apps/web.yaml:3",
        updated_at=1_700_000_100.0,
    ),
    prune_protected=True,
    prune_confirmed="d" * 40,
)


# -- round trip --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        AppRecord(),
        FULL_RECORD,
        AppRecord(revisions=(entry(1, Outcome.RUNNING),)),
        AppRecord(revisions=(entry(1, Outcome.CANCELLED, started_at=0.0, finished_at=0.0),)),
        AppRecord(pin=Pin(1, "h1", "")),
        AppRecord(revisions=(FULL_ENTRY,), pin=None, triggers_suspended=False, last_synced_commit="abc"),
    ],
    ids=["empty", "every field", "running", "cancelled at epoch 0", "bare pin", "no pin"],
)
def test_json_round_trip_keeps_every_field(record: AppRecord) -> None:
    again = AppRecord.from_json(record.to_json())
    assert again == record
    # equality of the dataclass covers every field except extra; check the nested values explicitly too
    assert again.revisions == record.revisions
    assert again.pin == record.pin
    assert again.status == record.status


def test_json_form_uses_the_documented_keys() -> None:
    body = json.loads(FULL_RECORD.to_json())
    assert sorted(body) == [
        "deployRequested",
        "lastSyncedCommit",
        "pin",
        "pruneConfirmed",
        "pruneProtected",
        "recovery",
        "revisions",
        "status",
        "suspendedReason",
        "triggersSuspended",
        "version",
    ]
    assert body["version"] == RECORD_VERSION == 1
    assert body["pin"] == {
        "revision": 5,
        "templateHash": "zzxx998877",
        "manifestDigest": "0123456789abcdef",
        "reason": "revision 6 failed",
        "cause": "AutoRollback",
        "rolledBackFrom": 6,
        "by": "alice",
        "template": "",
        "restore": ["scaling", "strategy"],
        "manifest": '{"kind":"Deployment"}',
    }
    full = body["revisions"][1]
    assert full["commit"] == {
        "sha": "0123456789abcdef0123456789abcdef01234567",
        "author": "Ada Lovelace",
        "subject": "Bump the engine",
    }
    assert full["images"] == [
        {"container": "web", "image": "nginx@sha256:" + "a" * 64},
        {"container": "sidecar", "image": "envoy:1.30"},
    ]
    assert (full["startedAt"], full["finishedAt"], full["outcome"], full["reason"]) == (
        1_700_000_000.0,
        1_700_000_042.5,
        "Failed",
        "ProgressDeadlineExceeded",
    )
    assert full["hooks"][1] == {
        "phase": "mid",
        "pod": "web-bcdf245678-hook-mid",
        "outcome": "Failed",
        "attempts": 3,
        "exitCode": 2,
        "log": "boom",
    }
    assert (full["rolledBackFrom"], full["rolledBackTo"], full["by"], full["returnsTo"]) == (
        6,
        5,
        "gitdeploy (autoRollback)",
        5,
    )
    assert body["status"] == {
        "sync": "OutOfSync",
        "health": "Degraded",
        "message": "revision 7 failed",
        "commit": "e" * 40,
        "location": "apps/web.yaml:3",
        "updatedAt": 1_700_000_100.0,
        "manifestDigest": "",
        "paused": False,
        "manifestCommit": "",
    }
    # optional rollback fields are left out when unset
    plain = body["revisions"][0]
    assert "rolledBackFrom" not in plain and "rolledBackTo" not in plain and "returnsTo" not in plain
    assert plain["startedAt"] is None and plain["finishedAt"] is None


def test_json_is_canonical() -> None:
    text = FULL_RECORD.to_json()
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    assert AppRecord.from_json(text).to_json() == text


def test_a_hook_log_is_trimmed_to_its_tail_when_written() -> None:
    log = "x" * 10 + "y" * MAX_LOG_BYTES
    record = AppRecord(revisions=(entry(1, hooks=(HookResult("pre", "p", "Failed", log=log),)),))
    stored = AppRecord.from_json(record.to_json())
    assert stored.revisions[0].hooks[0].log == "y" * MAX_LOG_BYTES
    assert MAX_LOG_BYTES == 4096


@pytest.mark.parametrize(
    ("log", "limit", "kept"),
    [
        ("plain\n", 4096, "plain\n"),
        ("\x1b[1;31mred\x1b[0m and \x1b[38;5;82mgreen\x1b[m\n", 4096, "red and green\n"),
        ("\x1b]0;title\x07after", 4096, "after"),
        ("10%\r50%\r100%\n", 4096, "10%50%100%\n"),
        ("tab\tstays\x00\x7f", 4096, "tab\tstays"),
        ("0123456789", 4, "6789"),
        ("日本語のログ", 6, "ログ"),  # 3 bytes a character: a whole number of them
        ("日本語のログ", 7, "ログ"),  # a cut inside a character drops the partial one
        ("\U0001f680\U0001f680", 5, "\U0001f680"),
        ("\x1b[31m" + "é" * 10, 5, "éé"),  # colour codes go before the tail is measured
        ("lone \ud800 surrogate", 4096, "lone ? surrogate"),
    ],
    ids=[
        "plain",
        "colours",
        "title",
        "carriage-returns",
        "controls",
        "ascii-tail",
        "cjk-exact",
        "cjk-cut",
        "astral",
        "colour-then-tail",
        "surrogate",
    ],
)
def test_bound_log_keeps_a_clean_utf8_tail(log: str, limit: int, kept: str) -> None:
    bounded = bound_log(log, limit)
    assert bounded == kept
    assert len(bounded.encode("utf-8")) <= limit


def hooked(revision: int, log: str) -> RevisionEntry:
    hooks = tuple(
        HookResult(phase, f"web-{revision}-{phase}", "Succeeded", log=log) for phase in ("pre", "mid", "post")
    )
    return entry(revision, hooks=hooks, message=f"revision {revision} " + "説明" * 100)


LONG_COLOURED_LOG = "".join(f"\x1b[32m{n:05d} ✓ デプロイ中 — état prêt 🚀\x1b[0m\n" for n in range(2000))


@pytest.mark.parametrize(
    ("revisions", "budget", "lean", "kept"),
    [
        (3, 10**9, [], [1, 2, 3]),  # fits: nothing changes
        (3, -1, [3], [3]),  # nothing fits: the newest revision stays, lean
        (100, RECORD_BUDGET_BYTES, "oldest", "all"),
    ],
    ids=["fits", "never-fits", "hundred-long-logs"],
)
def test_fit_revisions_drops_details_then_revisions_oldest_first(
    revisions: int, budget: int, lean: list[int] | str, kept: list[int] | str
) -> None:
    entries = tuple(hooked(n, LONG_COLOURED_LOG) for n in range(1, revisions + 1))
    fitted = fit_revisions(entries, budget)
    numbers = [e.revision for e in fitted]
    stripped = [e.revision for e in fitted if e.message == "" and all(h.log == "" for h in e.hooks)]
    assert numbers == (list(range(1, revisions + 1)) if kept == "all" else kept)
    if lean == "oldest":  # a prefix of the log lost its details, the rest kept them
        assert stripped == list(range(1, len(stripped) + 1)) and 0 < len(stripped) < revisions
    else:
        assert stripped == lean
    assert all(e.commit == entries[e.revision - 1].commit for e in fitted)


def test_a_hundred_revisions_with_long_non_ascii_hook_logs_fit_the_configmap_limit() -> None:
    record = AppRecord(revisions=tuple(hooked(n, LONG_COLOURED_LOG) for n in range(1, MAX_REVISIONS + 1)))

    text = record.to_json()

    assert len(text.encode("utf-8")) <= RECORD_BUDGET_BYTES < 1024 * 1024
    stored = AppRecord.from_json(text)
    assert [e.revision for e in stored.revisions] == list(range(1, MAX_REVISIONS + 1))
    newest = stored.revisions[-1].hooks[0].log
    assert newest and "\x1b" not in newest and len(newest.encode("utf-8")) <= MAX_LOG_BYTES
    assert newest.endswith("🚀\n")


# -- tolerance ---------------------------------------------------------------------------------------


def newer_record_json() -> str:
    newer = json.loads(FULL_RECORD.to_json())
    newer["canaryState"] = {"step": 2, "weights": [10, 90]}
    newer["futureFlag"] = True
    return json.dumps(newer)


def test_extra_holds_only_the_keys_this_version_does_not_know() -> None:
    assert AppRecord.from_json(FULL_RECORD.to_json()).extra == {}
    record = AppRecord.from_json(newer_record_json())
    assert record.extra == {"canaryState": {"step": 2, "weights": [10, 90]}, "futureFlag": True}


def test_unknown_keys_are_kept_when_the_record_is_written_back() -> None:
    record = AppRecord.from_json(newer_record_json())
    assert record.extra["canaryState"] == {"step": 2, "weights": [10, 90]}
    assert record.extra["futureFlag"] is True
    assert record == FULL_RECORD
    written = json.loads(record.with_entry(entry(8)).to_json())
    assert written["canaryState"] == {"step": 2, "weights": [10, 90]}
    assert written["futureFlag"] is True
    assert [r["revision"] for r in written["revisions"]] == [5, 7, 8]


def test_a_known_key_wins_over_a_stale_extra_of_the_same_name() -> None:
    record = AppRecord(last_synced_commit="new", extra={"lastSyncedCommit": "old", "other": 1})
    body = json.loads(record.to_json())
    assert (body["lastSyncedCommit"], body["other"]) == ("new", 1)


@pytest.mark.parametrize("text", ["", "   ", "\n\t\n"], ids=["empty", "spaces", "newlines"])
def test_empty_text_is_an_empty_record(text: str) -> None:
    record = AppRecord.from_json(text)
    assert record == AppRecord()
    assert (record.latest_revision, record.pin, record.extra) == (0, None, {})


def test_missing_keys_take_their_defaults() -> None:
    record = AppRecord.from_json('{"revisions":[{"revision":3}],"pin":{"revision":2,"templateHash":"h2"}}')
    assert record.revisions == (
        RevisionEntry(revision=3, template_hash="", replica_set="", commit=CommitRef("", "", "")),
    )
    assert record.revisions[0].outcome is Outcome.RUNNING
    assert record.revisions[0].cause == "ConfigChange"
    assert record.pin == Pin(2, "h2", "", "", Cause.ROLLBACK, None, "")
    assert (record.triggers_suspended, record.suspended_reason, record.last_synced_commit) == (False, "", "")


def test_a_null_or_empty_pin_is_no_pin() -> None:
    assert AppRecord.from_json('{"pin":null}').pin is None
    assert AppRecord.from_json('{"pin":{}}').pin is None


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "not json",
        "[]",
        '"a string"',
        "42",
        '{"revisions":5}',
        '{"revisions":["x"]}',
        '{"revisions":[{"templateHash":"h"}]}',
        '{"revisions":[{"revision":"two"}]}',
        '{"revisions":[{"revision":null}]}',
        '{"revisions":[{"revision":1,"outcome":"Exploded"}]}',
        '{"revisions":[{"revision":1,"commit":"abc"}]}',
        '{"revisions":[{"revision":1,"images":[{"container":"web"}]}]}',
        '{"revisions":[{"revision":1,"startedAt":"noon"}]}',
        '{"revisions":[{"revision":1,"hooks":[{"attempts":"many"}]}]}',
        '{"revisions":[{"revision":1,"hooks":["pre"]}]}',
        '{"pin":{"revision":1}}',
        '{"pin":"revision 1"}',
        '{"pin":{"revision":"one","templateHash":"h"}}',
    ],
)
def test_damaged_json_is_an_error_that_names_the_record_and_safe_ways_out(text: str) -> None:
    with pytest.raises(DamagedRecordError) as raised:
        load_record("shop", "web", text)
    assert raised.value.message.startswith(
        "the app record of shop/web (ConfigMap gitdeploy.web) cannot be read: ("
    )
    assert raised.value.message.endswith("gitdeploy changes nothing of the app until it can")
    assert raised.value.hint == (
        "repair it with `kubectl edit configmap gitdeploy.web -n shop`, or delete it "
        "(`kubectl delete configmap gitdeploy.web -n shop`): gitdeploy then rebuilds it from the "
        "ReplicaSets' annotations and no pod is touched (hook logs and revisions whose ReplicaSet "
        "is gone are lost)"
    )
    assert raised.value.__cause__ is not None


# -- the log -----------------------------------------------------------------------------------------


def test_with_entry_adds_in_revision_order_and_replaces_the_same_revision() -> None:
    record = AppRecord().with_entry(entry(3)).with_entry(entry(1)).with_entry(entry(2, Outcome.RUNNING))
    assert [e.revision for e in record.revisions] == [1, 2, 3]
    replaced = record.with_entry(entry(2, Outcome.FAILED, message="hook failed"))
    assert [(e.revision, e.outcome, e.message) for e in replaced.revisions] == [
        (1, Outcome.COMPLETE, ""),
        (2, Outcome.FAILED, "hook failed"),
        (3, Outcome.COMPLETE, ""),
    ]
    # the original is unchanged (frozen, functional update)
    assert record.entry(2) == entry(2, Outcome.RUNNING)


def test_with_entry_keeps_the_newest_max_revisions() -> None:
    assert MAX_REVISIONS == 100
    record = AppRecord(revisions=tuple(entry(n) for n in range(1, MAX_REVISIONS + 1)))
    grown = record.with_entry(entry(MAX_REVISIONS + 1))
    assert len(grown.revisions) == MAX_REVISIONS
    assert (grown.revisions[0].revision, grown.revisions[-1].revision) == (2, MAX_REVISIONS + 1)
    # replacing an entry at the limit trims nothing
    same = record.with_entry(entry(50, Outcome.FAILED))
    assert [e.revision for e in same.revisions] == list(range(1, MAX_REVISIONS + 1))
    assert same.entry(50) == entry(50, Outcome.FAILED)
    # the pin and control state survive a trim
    pinned = AppRecord(revisions=record.revisions, pin=FULL_PIN, triggers_suspended=True)
    assert pinned.with_entry(entry(101)).pin == FULL_PIN
    assert pinned.with_entry(entry(101)).triggers_suspended is True


@pytest.mark.parametrize(
    ("outcomes", "before", "expected"),
    [
        ([], None, None),
        ([Outcome.COMPLETE], None, 1),
        ([Outcome.COMPLETE, Outcome.COMPLETE, Outcome.FAILED], None, 2),
        ([Outcome.COMPLETE, Outcome.COMPLETE, Outcome.FAILED], 3, 2),
        ([Outcome.COMPLETE, Outcome.COMPLETE, Outcome.COMPLETE], 3, 2),
        ([Outcome.COMPLETE, Outcome.COMPLETE, Outcome.COMPLETE], 2, 1),
        ([Outcome.COMPLETE, Outcome.COMPLETE, Outcome.COMPLETE], 1, None),
        ([Outcome.COMPLETE, Outcome.CANCELLED, Outcome.RUNNING], None, 1),
        ([Outcome.FAILED, Outcome.CANCELLED, Outcome.RUNNING], None, None),
        ([Outcome.COMPLETE, Outcome.FAILED, Outcome.COMPLETE, Outcome.FAILED], 4, 3),
        ([Outcome.COMPLETE, Outcome.FAILED, Outcome.COMPLETE, Outcome.FAILED], 3, 1),
    ],
)
def test_last_complete(outcomes: list[Outcome], before: int | None, expected: int | None) -> None:
    record = AppRecord(revisions=tuple(entry(n, o) for n, o in enumerate(outcomes, start=1)))
    found = record.last_complete(before=before)
    assert (found.revision if found is not None else None) == expected


def test_last_complete_uses_revision_numbers_not_list_order() -> None:
    record = AppRecord(revisions=(entry(9), entry(4), entry(12, Outcome.FAILED)))
    newest = record.last_complete()
    assert newest is not None and newest.revision == 9
    below = record.last_complete(before=9)
    assert below is not None and below.revision == 4


def test_latest_revision_and_entry_lookup() -> None:
    record = AppRecord(revisions=(entry(2), entry(5, Outcome.FAILED), entry(3)))
    assert record.latest_revision == 5
    assert record.entry(3) == entry(3)
    assert record.entry(4) is None
    assert AppRecord().latest_revision == 0


def test_commit_short_is_seven_characters() -> None:
    assert CommitRef("0123456789abcdef").short == "0123456"
    assert CommitRef("abc").short == "abc"


@pytest.mark.parametrize(
    ("logged", "annotated", "expected"),
    [
        (None, "Complete", Outcome.COMPLETE),  # in flight, not logged yet: the annotation says
        (None, "", Outcome.RUNNING),
        (None, "Exploded", Outcome.RUNNING),  # an annotation edited by hand is no error
        (Outcome.RUNNING, "Complete", Outcome.COMPLETE),  # the annotation is more current while running
        (Outcome.RUNNING, "", Outcome.RUNNING),
        (Outcome.FAILED, "Complete", Outcome.FAILED),  # a final word in the log wins
        (Outcome.CANCELLED, "Running", Outcome.CANCELLED),
        (Outcome.COMPLETE, "Failed", Outcome.COMPLETE),
    ],
)
def test_outcome_of_a_revision(logged: Outcome | None, annotated: str, expected: Outcome) -> None:
    record = AppRecord(revisions=(entry(1), *([entry(2, logged)] if logged else [])))
    assert record.outcome_of(2, annotated) is expected
