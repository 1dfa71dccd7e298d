"""How far an app is at a given commit (``gitdeploy rollout status APP --commit SHA``), pure:
by the revision the commit caused, else by the loop's verdict written at that commit, else not
reached yet."""

from __future__ import annotations

import pytest

from gitdeploy.core.history.records import CommitRef, FailureReason, Outcome, RevisionEntry, SyncStatus
from gitdeploy.core.sync.commitwait import CommitProgress, Reached, commit_progress
from tests.fixtures.rolloutpass import named

SHA = "abcdef1234567890abcdef1234567890abcdef12"
OTHER = "1234567890abcdef1234567890abcdef12345678"


def revision(number: int, sha: str, outcome: Outcome, message: str = "", reason: str = "") -> RevisionEntry:
    return RevisionEntry(
        number,
        f"h{number}",
        f"web-h{number}",
        CommitRef(sha),
        outcome=outcome,
        message=message,
        reason=reason,
    )


BY_REVISION = [
    # (id, revisions oldest first, progress)
    (
        "complete",
        [revision(2, SHA, Outcome.COMPLETE)],
        CommitProgress(Reached.DONE, "revision 2 complete", 2),
    ),
    (
        "failed, by its message",
        [revision(2, SHA, Outcome.FAILED, "deadline exceeded")],
        CommitProgress(Reached.FAILED, "revision 2 failed: deadline exceeded", 2),
    ),
    (
        "failed without a message: its reason",
        [revision(2, SHA, Outcome.FAILED, reason=FailureReason.ROLLOUT_ABORTED)],
        CommitProgress(Reached.FAILED, "revision 2 failed: RolloutAborted", 2),
    ),
    (
        "cancelled by a newer revision",
        [revision(2, SHA, Outcome.CANCELLED), revision(3, OTHER, Outcome.RUNNING)],
        CommitProgress(Reached.FAILED, "revision 2 was cancelled before it completed (a newer revision)", 2),
    ),
    (
        "in flight",
        [revision(2, SHA, Outcome.RUNNING)],
        CommitProgress(Reached.IN_PROGRESS, "revision 2 in progress", 2),
    ),
    (
        "the latest revision of the commit counts (a retry)",
        [revision(2, SHA, Outcome.FAILED, "crash"), revision(3, SHA, Outcome.COMPLETE)],
        CommitProgress(Reached.DONE, "revision 3 complete", 3),
    ),
]


@pytest.mark.parametrize(("revisions", "progress"), named(BY_REVISION))
def test_a_revision_the_commit_caused_decides(
    revisions: list[RevisionEntry], progress: CommitProgress
) -> None:
    assert commit_progress("ABCDEF1", revisions, None, ("OutOfSync", "Progressing")) == progress


BY_VERDICT = [
    # (id, stored verdict, live (sync, health), reached, message)
    ("no verdict yet", None, ("Unknown", "Unknown"), Reached.NOT_YET, "the loop has not reached this commit"),
    (
        "a verdict of another commit",
        SyncStatus("Synced", "Healthy", commit=OTHER, manifest_commit=OTHER),
        ("Synced", "Healthy"),
        Reached.NOT_YET,
        "the loop has not reached this commit",
    ),
    (
        "an invalid manifest at the commit fails",
        SyncStatus("InvalidManifest", "Healthy", "apps/web.yaml:3: replicas must be a number", commit=SHA),
        ("InvalidManifest", "Healthy"),
        Reached.FAILED,
        "InvalidManifest: apps/web.yaml:3: replicas must be a number",
    ),
    (
        "invalid settings at the commit fail",
        SyncStatus("InvalidSettings", "Healthy", "gitdeploy.yaml: bad", commit=SHA),
        ("InvalidSettings", "Healthy"),
        Reached.FAILED,
        "InvalidSettings: gitdeploy.yaml: bad",
    ),
    (
        "synced and healthy at the commit: nothing to roll out",
        SyncStatus("Synced", "Healthy", commit=SHA),
        ("Synced", "Healthy"),
        Reached.DONE,
        "nothing to roll out",
    ),
    (
        "pinned and healthy is done too",
        SyncStatus("Pinned", "Healthy", manifest_commit=SHA),
        ("Pinned", "Healthy"),
        Reached.DONE,
        "nothing to roll out",
    ),
    (
        "at the commit, pods still coming: under way",
        SyncStatus("Synced", "Healthy", commit=SHA),
        ("Synced", "Progressing"),
        Reached.IN_PROGRESS,
        "Synced/Progressing",
    ),
]


@pytest.mark.parametrize(("stored", "live", "reached", "message"), named(BY_VERDICT))
def test_without_a_revision_the_verdict_at_the_commit_decides(
    stored: SyncStatus | None, live: tuple[str, str], reached: Reached, message: str
) -> None:
    progress = commit_progress("abcdef1", [revision(1, OTHER, Outcome.COMPLETE)], stored, live)
    assert (progress.reached, progress.revision) == (reached, 0)
    assert progress.message.startswith(message)
