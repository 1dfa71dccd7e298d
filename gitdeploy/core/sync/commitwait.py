"""Whether an app's state reflects a given commit yet (``gitdeploy rollout status APP --commit SHA``).

Right after ``git push`` the app's current revision is still the previous commit's: waiting for
"the current rollout" would pass a deploy the loop has not even seen. What counts instead:

* a revision caused by the commit (its ``commit`` is the commit that last changed the app's
  manifest): Complete is done, Failed or Cancelled is a failure, anything else is under way;
* no such revision, but the loop's verdict was written at that commit (``SyncStatus.commit``, the
  head it compared against, or ``manifest_commit``, the commit that last changed the manifest):
  an invalid manifest or settings is a failure, Synced/Pinned and Healthy as the cluster shows it
  is done (nothing to roll out, or scaling only), anything else is under way;
* otherwise the loop has not reached the commit for this app. The verdict is written only when it
  changes, so a commit that does not change the app's manifest is never reported for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from gitdeploy.core.history.records import Outcome, RevisionEntry, SyncStatus
from gitdeploy.core.sync.syncstate import Health, Sync


class Reached(StrEnum):
    NOT_YET = "NotYet"
    IN_PROGRESS = "InProgress"
    DONE = "Done"
    FAILED = "Failed"


@dataclass(frozen=True)
class CommitProgress:
    reached: Reached
    message: str
    revision: int = 0


def same_commit(full: str, given: str) -> bool:
    """``given`` (short or full, any case) names ``full``.

    >>> full = "0123456789abcdef"
    >>> same_commit(full, "0123456"), same_commit(full, "01234568"), same_commit("", "")
    (True, False, False)
    """
    return bool(full and given) and full.startswith(given.lower())


def commit_progress(
    sha: str, revisions: Sequence[RevisionEntry], status: SyncStatus | None, live: tuple[str, str]
) -> CommitProgress:
    """How far the app is at commit ``sha``: ``revisions`` oldest first (the log plus a rollout in
    flight), ``status`` the loop's stored verdict, ``live`` (sync, health) as ``status`` shows now.

    >>> from gitdeploy.core.history.records import CommitRef
    >>> failed = Outcome.FAILED
    >>> rev = RevisionEntry(2, "h", "web-h", CommitRef("abcdef1234"), outcome=failed, message="deadline")
    >>> commit_progress("abcdef1", [rev], None, ("OutOfSync", "Degraded"))
    CommitProgress(reached=<Reached.FAILED: 'Failed'>, message='revision 2 failed: deadline', revision=2)
    >>> seen = SyncStatus("Synced", "Healthy", commit="9999aaaa", manifest_commit="abcdef1234")
    >>> commit_progress("abcdef1", [], seen, ("Synced", "Healthy")).reached
    <Reached.DONE: 'Done'>
    >>> commit_progress("1234567", [rev], seen, ("Synced", "Healthy")).reached
    <Reached.NOT_YET: 'NotYet'>
    """
    caused = [entry for entry in revisions if same_commit(entry.commit.sha, sha)]
    if caused:
        return _revision_progress(caused[-1])
    if status is None or not (same_commit(status.commit, sha) or same_commit(status.manifest_commit, sha)):
        return CommitProgress(Reached.NOT_YET, "the loop has not reached this commit for the app yet")
    if status.sync in (Sync.INVALID_MANIFEST, Sync.INVALID_SETTINGS):
        return CommitProgress(Reached.FAILED, f"{status.sync}: {status.message}")
    sync, health = live
    if sync in (Sync.SYNCED, Sync.PINNED) and health == Health.HEALTHY:
        return CommitProgress(Reached.DONE, "nothing to roll out")
    return CommitProgress(Reached.IN_PROGRESS, f"{sync}/{health}")


def _revision_progress(entry: RevisionEntry) -> CommitProgress:
    revision = entry.revision
    if entry.outcome is Outcome.COMPLETE:
        return CommitProgress(Reached.DONE, f"revision {revision} complete", revision)
    if entry.outcome is Outcome.FAILED:
        why = entry.message or entry.reason
        return CommitProgress(Reached.FAILED, f"revision {revision} failed: {why}", revision)
    if entry.outcome is Outcome.CANCELLED:
        return CommitProgress(
            Reached.FAILED,
            f"revision {revision} was cancelled before it completed (a newer revision)",
            revision,
        )
    return CommitProgress(Reached.IN_PROGRESS, f"revision {revision} in progress", revision)


__all__ = ["CommitProgress", "Reached", "commit_progress", "same_commit"]
