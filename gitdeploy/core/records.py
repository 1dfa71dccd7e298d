"""The app record: an app's durable revision log and control state (DESIGN.md, "The cluster model").

It is stored as JSON in the ConfigMap ``gitdeploy.<app>``. In-flight rollout state does not live
here: it is on the ReplicaSets (annotations) and hook pods, so the record is written only when a
revision reaches an outcome or the control state changes: a handful of writes per rollout.

The JSON is versioned and tolerant: unknown keys are ignored, missing ones take their defaults, so
an older gitdeploy reads a newer record and the other way round.

>>> entry = RevisionEntry(revision=1, template_hash="abc", replica_set="web-abc",
...                       commit=CommitRef("0123456789abcdef", "Ada", "first"), outcome=Outcome.COMPLETE)
>>> record = AppRecord(revisions=(entry,))
>>> AppRecord.from_json(record.to_json()) == record
True
>>> AppRecord.from_json("").revisions
()

A record emptied by hand (no ``version``) is not a new app's record: :func:`is_emptied` tells
them apart, so that the history can be rebuilt from the ReplicaSets instead of starting anew
(see :mod:`gitdeploy.core.recovery`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gitdeploy.core.observed import record_name
from gitdeploy.errors import DamagedRecordError

RECORD_VERSION = 1
MAX_REVISIONS = 100
"""Revisions kept in the log; the oldest go first (a ConfigMap holds at most 1 MiB)."""
MAX_LOG_CHARS = 2000
"""Characters of a hook pod's log kept on its revision (the tail)."""


class Outcome(StrEnum):
    RUNNING = "Running"
    COMPLETE = "Complete"
    FAILED = "Failed"
    CANCELLED = "Cancelled"


class Cause(StrEnum):
    """Why a revision was rolled out."""

    CONFIG_CHANGE = "ConfigChange"
    IMAGE_CHANGE = "ImageChange"
    ROLLBACK = "Rollback"
    AUTO_ROLLBACK = "AutoRollback"
    MANUAL = "Manual"


@dataclass(frozen=True)
class CommitRef:
    sha: str
    author: str = ""
    subject: str = ""

    @property
    def short(self) -> str:
        return self.sha[:7]


@dataclass(frozen=True)
class HookResult:
    """What a lifecycle hook (or the custom deployer) did for a revision."""

    phase: str
    """``pre``, ``mid``, ``post`` or ``deployer``."""
    pod: str
    outcome: str
    """``Succeeded``, ``Failed``, ``Ignored`` (failed, failure ignored) or ``Running``."""
    attempts: int = 1
    exit_code: int | None = None
    log: str = ""


@dataclass(frozen=True)
class RevisionEntry:
    revision: int
    template_hash: str
    replica_set: str
    commit: CommitRef
    cause: str = Cause.CONFIG_CHANGE.value
    change_cause: str = ""
    images: tuple[tuple[str, str], ...] = ()
    """``(container, image)`` as deployed, digests included when resolved."""
    started_at: float | None = None
    finished_at: float | None = None
    outcome: Outcome = Outcome.RUNNING
    message: str = ""
    reason: str = ""
    """Why it failed, for machines: ``ProgressDeadlineExceeded``, ``HookFailed`` or ``DeployerFailed``."""
    hooks: tuple[HookResult, ...] = ()
    rolled_back_from: int | None = None
    rolled_back_to: int | None = None
    by: str = ""
    returns_to: int | None = None
    """The earlier revision whose template (and ReplicaSet) this one brought back, e.g. after a revert."""


@dataclass(frozen=True)
class Pin:
    """The app runs ``revision``'s template instead of git's, as long as its manifest is unchanged."""

    revision: int
    template_hash: str
    manifest_digest: str
    """Digest of the app's manifest when the pin was set; another digest means git moved on."""
    reason: str = ""
    cause: str = Cause.ROLLBACK.value
    rolled_back_from: int | None = None
    by: str = ""
    template: str = ""
    """The pinned template as canonical JSON, when it was rebuilt from git because the revision's
    ReplicaSet was gone; empty when the ReplicaSet holds it."""
    restore: tuple[str, ...] = ()
    """Settings of the revision's manifest restored with its template (``rollback --change-*``):
    any of ``scaling`` (replicas, selector), ``strategy``, ``triggers``."""
    manifest: str = ""
    """The revision's manifest as canonical JSON, read from git, when ``restore`` is set."""


@dataclass(frozen=True)
class SyncStatus:
    """What the loop last concluded about the app (for ``gitdeploy status`` in another process).

    Written only when ``sync`` or ``health`` change, never on every pass.
    """

    sync: str
    health: str
    message: str = ""
    commit: str = ""
    """The config repo commit the loop compared against."""
    location: str = ""
    """``file:line`` of the app's manifest."""
    updated_at: float = 0.0
    manifest_digest: str = ""
    """Digest of the app's manifest at ``commit`` (a rollback pin is set against it)."""
    paused: bool = False
    """The manifest says ``paused: true``."""


@dataclass(frozen=True)
class AppRecord:
    revisions: tuple[RevisionEntry, ...] = ()
    pin: Pin | None = None
    triggers_suspended: bool = False
    suspended_reason: str = ""
    last_synced_commit: str = ""
    status: SyncStatus | None = None
    deploy_requested: bool = False
    """``gitdeploy deploy --latest`` asked for a rollout of git's template although the app has no
    ConfigChange trigger; cleared when that rollout starts."""
    recovery: str = ""
    """Set when the record was rebuilt from the ReplicaSets' annotations after it was deleted or
    emptied (what happened, what was lost); shown in the app's status until the next rollout."""
    prune_protected: bool = False
    """The app's manifest said ``gitdeploy.io/prune: "false"``: never prune it, also once its
    manifest is gone (kept here because git no longer says so then)."""
    prune_confirmed: str = ""
    """The commit whose held prune of this app a person confirmed (``gitdeploy prune --confirm``)."""
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """Keys this version does not know, kept so that writing the record back loses nothing."""

    @property
    def latest_revision(self) -> int:
        return max((e.revision for e in self.revisions), default=0)

    def entry(self, revision: int) -> RevisionEntry | None:
        return next((e for e in self.revisions if e.revision == revision), None)

    def outcome_of(self, revision: int, annotated_phase: str) -> Outcome:
        """How ``revision`` stands: the log's word once it is final, else the phase annotation of
        its ReplicaSet (more current while the revision runs; Running when unreadable)."""
        entry = self.entry(revision)
        if entry is not None and entry.outcome is not Outcome.RUNNING:
            return entry.outcome
        try:
            return Outcome(annotated_phase)
        except ValueError:
            return Outcome.RUNNING

    def last_complete(self, *, before: int | None = None) -> RevisionEntry | None:
        """The newest Complete revision (below ``before`` when given)."""
        candidates = [
            e
            for e in self.revisions
            if e.outcome is Outcome.COMPLETE and (before is None or e.revision < before)
        ]
        return max(candidates, key=lambda e: e.revision, default=None)

    def with_entry(self, entry: RevisionEntry) -> AppRecord:
        """The record with ``entry`` added or replacing the entry of the same revision."""
        others = [e for e in self.revisions if e.revision != entry.revision]
        ordered = sorted([*others, entry], key=lambda e: e.revision)[-MAX_REVISIONS:]
        return dataclasses.replace(self, revisions=tuple(ordered))

    # -- JSON ------------------------------------------------------------------------------------

    def to_json(self) -> str:
        body: dict[str, Any] = dict(self.extra)
        body.update(
            {
                "version": RECORD_VERSION,
                "revisions": [_entry_to_json(e) for e in self.revisions],
                "pin": None if self.pin is None else _pin_to_json(self.pin),
                "triggersSuspended": self.triggers_suspended,
                "suspendedReason": self.suspended_reason,
                "lastSyncedCommit": self.last_synced_commit,
                "status": None if self.status is None else _status_to_json(self.status),
                "deployRequested": self.deploy_requested,
                "recovery": self.recovery,
                "pruneProtected": self.prune_protected,
                "pruneConfirmed": self.prune_confirmed,
            }
        )
        return json.dumps(body, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> AppRecord:
        """Parse a stored record; an empty text is an empty record. Damage → DamagedRecordError."""
        if not text.strip():
            return cls()
        try:
            body = json.loads(text)
            if not isinstance(body, dict):
                raise TypeError("not an object")
            known = {
                "version",
                "revisions",
                "pin",
                "triggersSuspended",
                "suspendedReason",
                "lastSyncedCommit",
                "status",
                "deployRequested",
                "recovery",
                "pruneProtected",
                "pruneConfirmed",
            }
            return cls(
                revisions=tuple(_entry_from_json(e) for e in body.get("revisions") or []),
                pin=None if not body.get("pin") else _pin_from_json(body["pin"]),
                triggers_suspended=bool(body.get("triggersSuspended", False)),
                suspended_reason=str(body.get("suspendedReason", "")),
                last_synced_commit=str(body.get("lastSyncedCommit", "")),
                status=None if not body.get("status") else _status_from_json(body["status"]),
                deploy_requested=bool(body.get("deployRequested", False)),
                recovery=str(body.get("recovery", "")),
                prune_protected=bool(body.get("pruneProtected", False)),
                prune_confirmed=str(body.get("pruneConfirmed", "")),
                extra={k: v for k, v in body.items() if k not in known},
            )
        except (ValueError, TypeError, KeyError, AttributeError) as bad:
            raise DamagedRecordError(f"the app record is damaged ({type(bad).__name__}: {bad})") from bad


def is_emptied(payload: str) -> bool:
    """Whether a stored record was emptied (by hand: gitdeploy always writes a ``version``).

    >>> is_emptied(""), is_emptied("{}"), is_emptied(AppRecord().to_json()), is_emptied("[")
    (True, True, False, False)
    """
    if not payload.strip():
        return True
    try:
        body = json.loads(payload)
    except ValueError:
        return False
    return isinstance(body, dict) and "version" not in body


def load_record(namespace: str, app: str, payload: str) -> AppRecord:
    """The record of ``namespace/app`` as stored; unreadable → :class:`DamagedRecordError` that
    says what to do (a record is safe to delete: it owns no ReplicaSet)."""
    try:
        return AppRecord.from_json(payload)
    except DamagedRecordError as bad:
        name = record_name(app)
        raise DamagedRecordError(
            f"the app record of {namespace}/{app} (ConfigMap {name}) cannot be read: "
            f"{bad.message.removeprefix('the app record is damaged ')}; gitdeploy changes nothing "
            "of the app until it can",
            hint=f"repair it with `kubectl edit configmap {name} -n {namespace}`, or delete it "
            f"(`kubectl delete configmap {name} -n {namespace}`): gitdeploy then rebuilds it from "
            "the ReplicaSets' annotations and no pod is touched (hook logs and revisions whose "
            "ReplicaSet is gone are lost)",
        ) from bad


def _entry_to_json(e: RevisionEntry) -> dict[str, Any]:
    out: dict[str, Any] = {
        "revision": e.revision,
        "templateHash": e.template_hash,
        "replicaSet": e.replica_set,
        "commit": {"sha": e.commit.sha, "author": e.commit.author, "subject": e.commit.subject},
        "cause": e.cause,
        "changeCause": e.change_cause,
        "images": [{"container": c, "image": i} for c, i in e.images],
        "startedAt": e.started_at,
        "finishedAt": e.finished_at,
        "outcome": e.outcome.value,
        "message": e.message,
        "reason": e.reason,
        "hooks": [
            {
                "phase": h.phase,
                "pod": h.pod,
                "outcome": h.outcome,
                "attempts": h.attempts,
                "exitCode": h.exit_code,
                "log": h.log[-MAX_LOG_CHARS:],
            }
            for h in e.hooks
        ],
        "by": e.by,
    }
    if e.rolled_back_from is not None:
        out["rolledBackFrom"] = e.rolled_back_from
    if e.rolled_back_to is not None:
        out["rolledBackTo"] = e.rolled_back_to
    if e.returns_to is not None:
        out["returnsTo"] = e.returns_to
    return out


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _entry_from_json(raw: Mapping[str, Any]) -> RevisionEntry:
    commit = raw.get("commit") or {}
    return RevisionEntry(
        revision=int(raw["revision"]),
        template_hash=str(raw.get("templateHash", "")),
        replica_set=str(raw.get("replicaSet", "")),
        commit=CommitRef(
            str(commit.get("sha", "")), str(commit.get("author", "")), str(commit.get("subject", ""))
        ),
        cause=str(raw.get("cause", Cause.CONFIG_CHANGE.value)),
        change_cause=str(raw.get("changeCause", "")),
        images=tuple((str(i["container"]), str(i["image"])) for i in raw.get("images") or []),
        started_at=_optional_float(raw.get("startedAt")),
        finished_at=_optional_float(raw.get("finishedAt")),
        outcome=Outcome(raw.get("outcome", Outcome.RUNNING.value)),
        message=str(raw.get("message", "")),
        reason=str(raw.get("reason", "")),
        hooks=tuple(
            HookResult(
                phase=str(h.get("phase", "")),
                pod=str(h.get("pod", "")),
                outcome=str(h.get("outcome", "")),
                attempts=int(h.get("attempts", 1)),
                exit_code=_optional_int(h.get("exitCode")),
                log=str(h.get("log", "")),
            )
            for h in raw.get("hooks") or []
        ),
        rolled_back_from=_optional_int(raw.get("rolledBackFrom")),
        rolled_back_to=_optional_int(raw.get("rolledBackTo")),
        by=str(raw.get("by", "")),
        returns_to=_optional_int(raw.get("returnsTo")),
    )


def _pin_to_json(pin: Pin) -> dict[str, Any]:
    return {
        "revision": pin.revision,
        "templateHash": pin.template_hash,
        "manifestDigest": pin.manifest_digest,
        "reason": pin.reason,
        "cause": pin.cause,
        "rolledBackFrom": pin.rolled_back_from,
        "by": pin.by,
        "template": pin.template,
        "restore": list(pin.restore),
        "manifest": pin.manifest,
    }


def _pin_from_json(raw: Mapping[str, Any]) -> Pin:
    return Pin(
        revision=int(raw["revision"]),
        template_hash=str(raw["templateHash"]),
        manifest_digest=str(raw.get("manifestDigest", "")),
        reason=str(raw.get("reason", "")),
        cause=str(raw.get("cause", Cause.ROLLBACK.value)),
        rolled_back_from=_optional_int(raw.get("rolledBackFrom")),
        by=str(raw.get("by", "")),
        template=str(raw.get("template", "")),
        restore=tuple(str(r) for r in raw.get("restore") or ()),
        manifest=str(raw.get("manifest", "")),
    )


def _status_to_json(status: SyncStatus) -> dict[str, Any]:
    return {
        "sync": status.sync,
        "health": status.health,
        "message": status.message,
        "commit": status.commit,
        "location": status.location,
        "updatedAt": status.updated_at,
        "manifestDigest": status.manifest_digest,
        "paused": status.paused,
    }


def _status_from_json(raw: Mapping[str, Any]) -> SyncStatus:
    return SyncStatus(
        sync=str(raw.get("sync", "")),
        health=str(raw.get("health", "")),
        message=str(raw.get("message", "")),
        commit=str(raw.get("commit", "")),
        location=str(raw.get("location", "")),
        updated_at=float(raw.get("updatedAt", 0.0) or 0.0),
        manifest_digest=str(raw.get("manifestDigest", "")),
        paused=bool(raw.get("paused", False)),
    )
