"""What the loop says of an app after a pass, and the one amendment of its record that says it.

:func:`judge` turns a step into the verdict (sync, health, message) shown by ``gitdeploy status``;
:class:`StatusVerdict` is that verdict as the record stores it, and :meth:`StatusVerdict.apply` is
the one place that amends an app record with it (the prune opt-out, the ``status``, a stale
image-trigger note): the step's own record write carries it (see
:meth:`~gitdeploy.controller.rollouts.RolloutRunner.run_step`), so a steady state writes nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from gitdeploy.controller.imagetriggers import IMAGE_NOTE_PREFIX, image_message
from gitdeploy.core.history.records import AppRecord, Cause, SyncStatus
from gitdeploy.core.imagetriggers import ImageDecision
from gitdeploy.core.models import App
from gitdeploy.core.rollout import AppPhase, Step, Target
from gitdeploy.core.sync.syncstate import Health, Sync, classify


@dataclass(frozen=True)
class StatusVerdict:
    """The loop's verdict on one app, as its record's ``status`` holds it."""

    sync: str
    health: str
    message: str
    location: str = ""
    digest: str = ""
    paused: bool = False
    image_triggers: tuple[str, ...] = ()
    prune_protected: bool | None = None
    """The app's ``gitdeploy.io/prune: "false"`` (None: leave the record's as it is)."""
    note: str | None = None
    """The image-trigger note of the message (None: the message has no such part to keep current)."""

    def apply(
        self, record: AppRecord, now: float, head: str, manifest_commit: Callable[[], str] | None = None
    ) -> AppRecord:
        """``record`` with this verdict, changed only where the verdict is (sync, health, where the
        app is, its digest, pause or triggers; a stale image note). ``manifest_commit`` is asked only
        when the status is rewritten (a git history walk per head, shared by all apps)."""
        if self.prune_protected is not None and record.prune_protected != self.prune_protected:
            record = dataclasses.replace(record, prune_protected=self.prune_protected)
        current = record.status
        verdict = (self.sync, self.health, self.location, self.digest, self.paused, self.image_triggers)
        if (
            current is None
            or (
                current.sync,
                current.health,
                current.location,
                current.manifest_digest,
                current.paused,
                current.image_triggers,
            )
            != verdict
        ):
            status = SyncStatus(
                self.sync,
                self.health,
                self.message,
                head,
                self.location,
                now,
                self.digest,
                self.paused,
                manifest_commit() if manifest_commit is not None else "",
                self.image_triggers,
            )
            return dataclasses.replace(record, status=status, last_synced_commit=head)
        if self.note is not None and self._note_is_stale(current.message):
            return dataclasses.replace(record, status=dataclasses.replace(current, message=self.message))
        return record

    def _note_is_stale(self, stored: str) -> bool:
        """Whether the stored message lacks an image-trigger problem that appeared, or keeps one
        that went away (the status is rewritten only when sync or health change)."""
        note = self.note
        if note:
            return (note in self.message) != (note in stored)
        return IMAGE_NOTE_PREFIX in stored and IMAGE_NOTE_PREFIX not in self.message


def judge(
    app: App,
    step: Step,
    target: Target,
    images: ImageDecision,
    note: str,
    *,
    refusal: str | None,
    problem: str | None,
) -> tuple[Sync, Health, str]:
    """The verdict on ``app`` after ``step``: the head's refusal or the app's invalid manifest
    first, then a pin, then the step's own message with what image triggers add."""
    pin = target.pin
    sync, health = classify(step, pinned=pin is not None)
    if refusal is not None:
        return Sync.INVALID_SETTINGS, health, refusal
    if problem is not None:
        return Sync.INVALID_MANIFEST, health, problem
    if pin is not None and step.phase is AppPhase.COMPLETE:
        how = "rollback" if pin.cause is Cause.ROLLBACK else "automatic rollback"
        return (
            sync,
            health,
            (
                f"pinned to revision {pin.revision}'s template by {how} ({pin.reason}); a commit "
                f"that changes the manifest, or `gitdeploy deploy {app.key} --latest`, rolls forward"
            ),
        )
    return sync, health, image_message(step.message, step.phase, images, note)
