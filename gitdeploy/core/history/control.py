"""Rollback and deployment control as record changes (pure): what ``gitdeploy rollback`` and
``gitdeploy deploy`` write into an app record for the loop to carry out.

A rollback never touches ReplicaSets itself. It sets a :class:`~gitdeploy.core.history.records.Pin` on the
record and suspends the app's image triggers; the loop's next pass rolls out the pinned template as
a new revision (reusing the target's ReplicaSet when it still exists), exactly as an automatic
rollback does. The pin holds while the app's manifest in git is the one it was set against.

>>> from gitdeploy.core.history.records import AppRecord, CommitRef, Outcome, RevisionEntry
>>> log = tuple(RevisionEntry(n, h, f"web-{h}", CommitRef(f"{n}" * 40), outcome=Outcome.COMPLETE)
...             for n, h in ((1, "aaa"), (2, "bbb"), (3, "ccc")))
>>> choice = choose_rollback(AppRecord(revisions=log), log[2])
>>> choice.target.revision, choice.current.revision
(2, 3)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gitdeploy.core.history.records import AppRecord, Cause, Outcome, Pin, RevisionEntry
from gitdeploy.core.timestamps import format_timestamp
from gitdeploy.errors import PermanentError


class SkippedRollback(PermanentError):
    """The target's template is the one running already: nothing to do (exit 0, as kubectl)."""


@dataclass(frozen=True)
class RollbackChoice:
    current: RevisionEntry
    target: RevisionEntry


def _revision_list(record: AppRecord) -> str:
    numbers = [e.revision for e in record.revisions]
    if not numbers:
        return "none"
    return f"{numbers[0]}–{numbers[-1]}" if len(numbers) > 1 else str(numbers[0])


def choose_rollback(
    record: AppRecord,
    current: RevisionEntry | None,
    *,
    to_revision: int | None = None,
    to_commit: str | None = None,
    app: str = "the app",
) -> RollbackChoice:
    """The revision running now (``current``, from the record or its ReplicaSet while in flight)
    and the one to go back to.

    Default target: the newest Complete revision before the current one with another template.
    ``to_commit`` matches a revision deployed from that commit (a sha prefix of 4+ characters;
    the newest such revision).
    """
    if current is None:
        raise PermanentError(
            f"{app} has no revision to roll back from yet",
            hint=f"`gitdeploy history {app}` shows what was deployed",
        )
    if to_revision is not None:
        target = record.entry(to_revision)
        if target is None:
            raise PermanentError(
                f"{app} has no revision {to_revision} (kept revisions: {_revision_list(record)})",
                hint=f"`gitdeploy history {app}` lists them",
            )
    elif to_commit is not None:
        prefix = to_commit.strip().lower()
        if len(prefix) < 4:
            raise PermanentError(
                f"commit {to_commit!r} is too short to identify", hint="give at least 4 hex digits of the sha"
            )
        matches = [e for e in record.revisions if e.commit.sha.lower().startswith(prefix)]
        if not matches:
            raise PermanentError(
                f"no revision of {app} was deployed from commit {to_commit}",
                hint=f"`gitdeploy history {app}` shows the commit of each revision",
            )
        target = max(matches, key=lambda e: e.revision)
    else:
        earlier = [
            e
            for e in record.revisions
            if e.revision < current.revision
            and e.outcome is Outcome.COMPLETE
            and e.template_hash != current.template_hash
        ]
        if not earlier:
            raise PermanentError(
                f"{app} has no earlier Complete revision with another template to roll back to",
                hint=f"pick one with --to-revision N (`gitdeploy history {app}`)",
            )
        target = max(earlier, key=lambda e: e.revision)
    if target.template_hash == current.template_hash:
        raise SkippedRollback(
            f"skipped rollback: {app} is already at revision {target.revision}'s template "
            f"(revision {current.revision} runs it)"
        )
    return RollbackChoice(current, target)


def apply_rollback(
    record: AppRecord,
    choice: RollbackChoice,
    *,
    manifest_digest: str,
    by: str,
    message: str,
    now: float,
    template: str = "",
    template_hash: str = "",
    restore: tuple[str, ...] = (),
    manifest: str = "",
) -> AppRecord:
    """``record`` with the pin and the suspended image triggers a rollback sets.

    ``template``/``template_hash`` are given when the target's ReplicaSet is gone and its template
    was rebuilt from git; ``restore`` names the settings of the target's ``manifest`` (canonical
    JSON, from git) that roll back with the template.
    """
    target = choice.target
    reason = message or f"rolled back by {by}"
    pin = Pin(
        revision=target.revision,
        template_hash=template_hash or target.template_hash,
        manifest_digest=manifest_digest,
        reason=reason,
        cause=Cause.ROLLBACK,
        rolled_back_from=choice.current.revision,
        by=by,
        template=template,
        restore=restore,
        manifest=manifest,
    )
    return dataclasses.replace(
        record,
        pin=pin,
        triggers_suspended=True,
        suspended_reason=(
            f"rollback from revision {choice.current.revision} to {target.revision} by {by} "
            f"at {format_timestamp(now)}: {reason}"
        ),
    )


def enable_triggers(record: AppRecord) -> AppRecord:
    """Resume image triggers; a rollback pin goes too, so git's manifest with the newest images deploys."""
    return dataclasses.replace(record, triggers_suspended=False, suspended_reason="", pin=None)


def request_latest(record: AppRecord, *, in_progress: bool, app: str = "the app") -> AppRecord:
    """Roll out git's template now: release a pin and start even without a ConfigChange trigger."""
    if in_progress:
        raise PermanentError(
            f"{app} has a rollout in progress",
            hint=f"wait for it (`gitdeploy rollout status {app}`) "
            f"or cancel it (`gitdeploy deploy {app} --cancel`)",
        )
    return dataclasses.replace(record, pin=None, deploy_requested=True)


def retry(
    record: AppRecord, current: RevisionEntry, *, by: str, now: float, app: str = "the app"
) -> AppRecord:
    """Run the Failed revision ``current`` again under its own number: its entry goes back to
    Running and says who retried it and what had failed.

    Refused when it did not fail, and while a pin holds the app on another revision.
    """
    if current.outcome is not Outcome.FAILED:
        raise PermanentError(
            f"{app}'s last revision {current.revision} is {current.outcome.value}, not Failed: "
            "nothing to retry",
            hint=f"`gitdeploy deploy {app} --latest` rolls out git's manifest",
        )
    if record.pin is not None and record.pin.template_hash != current.template_hash:
        raise PermanentError(
            f"{app} is pinned to revision {record.pin.revision} ({record.pin.reason})",
            hint=f"`gitdeploy deploy {app} --latest` releases the pin and rolls out git's manifest",
        )
    failed = f": {current.message}" if current.message else ""
    entry = dataclasses.replace(
        current,
        outcome=Outcome.RUNNING,
        message=f"retried by {by} at {format_timestamp(now)} (it had failed{failed})",
        reason="",
        finished_at=None,
    )
    return record.with_entry(entry)


def cancel(
    record: AppRecord, current: RevisionEntry, *, by: str, now: float, app: str = "the app"
) -> AppRecord:
    """Stop the rollout of ``current``: mark it Cancelled and pin the last Complete revision.

    The loop then brings the previous template back (reusing its ReplicaSet) as a new revision;
    the pin holds until the manifest changes, so the cancelled template does not start again.
    """
    if current.outcome is not Outcome.RUNNING:
        raise PermanentError(
            f"{app} has no rollout in progress (revision {current.revision} is {current.outcome.value})",
            hint=f"`gitdeploy rollback {app}` goes back to an earlier revision",
        )
    previous = record.last_complete(before=current.revision)
    if previous is None or previous.template_hash == current.template_hash:
        raise PermanentError(
            f"{app} has no earlier Complete revision to restore",
            hint="fix the manifest in git instead (the rollout keeps going until it does)",
        )
    reason = f"revision {current.revision} cancelled by {by} at {format_timestamp(now)}"
    record = record.with_entry(
        dataclasses.replace(current, outcome=Outcome.CANCELLED, message=reason, finished_at=now)
    )
    return dataclasses.replace(
        record,
        pin=Pin(
            revision=previous.revision,
            template_hash=previous.template_hash,
            manifest_digest=record.status.manifest_digest if record.status is not None else "",
            reason=reason,
            cause=Cause.ROLLBACK,
            rolled_back_from=current.revision,
            by=by,
        ),
    )


__all__ = [
    "RollbackChoice",
    "SkippedRollback",
    "apply_rollback",
    "cancel",
    "choose_rollback",
    "enable_triggers",
    "request_latest",
    "retry",
]
