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
(see :mod:`gitdeploy.core.history.recovery`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gitdeploy.core.observed import record_name
from gitdeploy.core.scaling.progress import ConditionReason
from gitdeploy.core.sharding import ShardClaim
from gitdeploy.errors import DamagedRecordError

RECORD_VERSION = 1
MAX_REVISIONS = 100
"""Revisions kept in the log; the oldest go first (a ConfigMap holds at most 1 MiB)."""
MAX_LOG_BYTES = 4096
"""Bytes (UTF-8) of a hook pod's log kept on its revision: the tail, without colour codes."""
LOG_WINDOW_BYTES = 16 * MAX_LOG_BYTES
"""Bytes of a pod's log read from its end: room for colour codes around the text that is kept."""
RECORD_BUDGET_BYTES = 900 * 1024
"""The most the stored JSON may take: the API server refuses a ConfigMap whose data passes
1 MiB (1,048,576 bytes), after which the app could never be written again."""

_ESCAPE_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
"""ANSI/VT escape sequences: colours and cursor moves (CSI), window titles (OSC), and the rest."""
_UTF8_CONTINUATION = bytes(range(0x80, 0xC0))
"""The bytes that continue a UTF-8 character: a text cut before one starts after it."""
_CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
"""Control characters other than tab and newline (a carriage return redraws a progress bar)."""


class Outcome(StrEnum):
    RUNNING = "Running"
    COMPLETE = "Complete"
    FAILED = "Failed"
    CANCELLED = "Cancelled"

    @classmethod
    def parse(cls, text: str) -> Outcome:
        """The outcome ``text`` names, as a ReplicaSet's phase annotation holds it (which anyone
        may edit): Running when it names none.

        >>> Outcome.parse("Complete"), Outcome.parse("done?")
        (<Outcome.COMPLETE: 'Complete'>, <Outcome.RUNNING: 'Running'>)
        """
        try:
            return cls(text)
        except ValueError:
            return cls.RUNNING


class Cause(StrEnum):
    """Why a revision was rolled out."""

    CONFIG_CHANGE = "ConfigChange"
    IMAGE_CHANGE = "ImageChange"
    ROLLBACK = "Rollback"
    AUTO_ROLLBACK = "AutoRollback"
    MANUAL = "Manual"

    @classmethod
    def parse(cls, text: str, default: Cause) -> Cause:
        """The cause ``text`` names (from a record or an annotation, which anyone may edit):
        ``default`` when it names none.

        >>> Cause.parse("Rollback", Cause.CONFIG_CHANGE), Cause.parse("", Cause.CONFIG_CHANGE)
        (<Cause.ROLLBACK: 'Rollback'>, <Cause.CONFIG_CHANGE: 'ConfigChange'>)
        """
        try:
            return cls(text)
        except ValueError:
            return default


class FailureReason(StrEnum):
    """Why a revision failed, for machines (its entry's ``reason`` and the Warning event's)."""

    PROGRESS_DEADLINE_EXCEEDED = ConditionReason.PROGRESS_DEADLINE_EXCEEDED.value
    HOOK_FAILED = "HookFailed"
    DEPLOYER_FAILED = "DeployerFailed"
    ROLLOUT_ABORTED = "RolloutAborted"
    """Someone ran ``gitdeploy rollout abort`` during a canary."""


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
    cause: Cause = Cause.CONFIG_CHANGE
    change_cause: str = ""
    images: tuple[tuple[str, str], ...] = ()
    """``(container, image)`` as deployed, digests included when resolved."""
    started_at: float | None = None
    finished_at: float | None = None
    outcome: Outcome = Outcome.RUNNING
    message: str = ""
    reason: str = ""
    """Why it failed, for machines: a :class:`FailureReason` (empty unless it failed)."""
    hooks: tuple[HookResult, ...] = ()
    rolled_back_from: int | None = None
    rolled_back_to: int | None = None
    by: str = ""
    returns_to: int | None = None
    """The earlier revision whose template (and ReplicaSet) this one brought back, e.g. after a revert."""
    canary: str = ""
    """A canary revision's walk: the steps it reached, its pauses, who promoted and who aborted
    (:meth:`~gitdeploy.core.canaryview.CanaryView.summary`); empty for other revisions."""


@dataclass(frozen=True)
class Pin:
    """The app runs ``revision``'s template instead of git's, as long as its manifest is unchanged."""

    revision: int
    template_hash: str
    manifest_digest: str
    """Digest of the app's manifest when the pin was set; another digest means git moved on."""
    reason: str = ""
    cause: Cause = Cause.ROLLBACK
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
    manifest_commit: str = ""
    """The commit that last changed the app's manifest file at ``commit`` (the head may have moved
    past it): written with a new ``manifest_digest``, so ``rollout status --commit`` can tell that
    the loop compared the app against that commit."""
    image_triggers: tuple[str, ...] = ()
    """The ``ns/stream:tag`` keys the app's ImageChange triggers follow (a suspension of its
    triggers is shown only for an app that has some)."""


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
    shard: ShardClaim | None = None
    """With ``run --sharding``: the replica that claimed the app, the shard epoch, and whether it
    released the app (see :mod:`gitdeploy.core.sharding`). Stored only when set."""
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
        return Outcome.parse(annotated_phase)

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

    def to_json(self, budget: int = RECORD_BUDGET_BYTES) -> str:
        """The stored form: canonical JSON of at most ``budget`` bytes when the record allows it
        (see :func:`fit_revisions`; hook logs are always cut to :func:`bound_log`)."""
        text = self._encode(self.revisions)
        if len(text) <= budget:  # ASCII (non-ASCII is escaped): characters are bytes
            return text
        revisions = fit_revisions(self.revisions, budget - (len(text) - _revisions_size(self.revisions)))
        return self._encode(revisions)

    def _encode(self, revisions: tuple[RevisionEntry, ...]) -> str:
        body: dict[str, Any] = dict(self.extra)
        body.update(
            {
                "version": RECORD_VERSION,
                "revisions": [_entry_to_json(e) for e in revisions],
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
        if self.shard is not None:
            body["shard"] = _shard_to_json(self.shard)
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
                "shard",
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
                shard=None if not body.get("shard") else _shard_from_json(body["shard"]),
                extra={k: v for k, v in body.items() if k not in known},
            )
        except (ValueError, TypeError, KeyError, AttributeError) as bad:
            raise DamagedRecordError(f"the app record is damaged ({type(bad).__name__}: {bad})") from bad


def _shard_to_json(claim: ShardClaim) -> dict[str, Any]:
    return {"owner": claim.owner, "epoch": claim.epoch, "released": claim.released}


def _shard_from_json(body: Mapping[str, Any]) -> ShardClaim:
    """The shard claim as stored.

    >>> _shard_from_json({"owner": "a", "epoch": 3, "released": True})
    ShardClaim(owner='a', epoch=3, released=True)
    """
    return ShardClaim(str(body["owner"]), int(body["epoch"]), bool(body.get("released", False)))


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


def plain_log(text: str) -> str:
    """A log as a page shows it: escape sequences (colours, cursor moves) and control characters
    (tab and newline stay; a carriage return goes) removed, as a revision keeps its hooks' logs.

    >>> plain_log("\\x1b[32m\N{CHECK MARK} done\\x1b[0m\\r\\n\\tnext\\n")
    '\N{CHECK MARK} done\\n\\tnext\\n'
    """
    return _CONTROL_CHARACTER.sub("", _ESCAPE_SEQUENCE.sub("", text))


def bound_log(text: str, limit: int = MAX_LOG_BYTES) -> str:
    """The tail of a pod's log that a revision keeps: escape sequences and control characters
    (tab and newline stay) removed, then at most ``limit`` bytes of UTF-8, cut at a character.

    >>> bound_log("\\x1b[1;31mred\\x1b[0m ok\\r\\n")
    'red ok\\n'
    >>> bound_log("ab\N{EURO SIGN}", 3)
    '€'
    >>> bound_log("a\N{EURO SIGN}b", 3)  # the cut falls inside the euro sign: it goes whole
    'b'
    """
    encoded = plain_log(text).encode("utf-8", "replace")
    if len(encoded) <= limit:
        return encoded.decode("utf-8")
    return encoded[len(encoded) - limit :].decode("utf-8", "ignore")


def log_tail(raw: bytes, window: int = LOG_WINDOW_BYTES) -> str:
    """The text of the last ``window`` bytes of a log, as read: when the window is full its first
    line may be cut, so it starts after the first newline (or, in one long line, at a character);
    the text ends with a newline.

    >>> log_tail(b"one\\ntwo")
    'one\\ntwo\\n'
    >>> log_tail(b"\\x1b[31mcut\\nwhole\\n", 14)  # full: the cut line goes, colour code and all
    'whole\\n'
    >>> log_tail("€uro".encode()[1:], 5)  # full, one line: the cut character goes
    'uro\\n'
    """
    if len(raw) >= window:
        newline = raw.find(b"\n")
        cut_line = 0 <= newline < len(raw) - 1
        raw = raw[newline + 1 :] if cut_line else raw.lstrip(_UTF8_CONTINUATION)
    text = raw.decode("utf-8", "replace")
    return text if not text or text.endswith("\n") else text + "\n"


def without_details(entry: RevisionEntry) -> RevisionEntry:
    """``entry`` with what only explains it dropped (hook logs, the message); its revision,
    template, commit, cause, images and outcome stay, so history and rollback still work."""
    hooks = tuple(dataclasses.replace(h, log="") for h in entry.hooks)
    return dataclasses.replace(entry, hooks=hooks, message="")


def fit_revisions(revisions: tuple[RevisionEntry, ...], budget: int) -> tuple[RevisionEntry, ...]:
    """The revision log in at most ``budget`` bytes of JSON: first the oldest revisions' details
    go (:func:`without_details`), oldest first; if that is not enough, the oldest revisions
    themselves (revision numbers only move forward: the newest one always stays).

    >>> old = RevisionEntry(1, "a", "web-a", CommitRef("1" * 40), message="m" * 500)
    >>> new = RevisionEntry(2, "b", "web-b", CommitRef("2" * 40), message="n" * 500)
    >>> [len(e.message) for e in fit_revisions((old, new), _revisions_size((old, new)) - 1)]
    [0, 500]
    >>> [e.revision for e in fit_revisions((old, new), _revisions_size((without_details(new),)))]
    [2]
    """
    entries = sorted(revisions, key=lambda e: e.revision)
    size = _revisions_size(tuple(entries))
    for index, entry in enumerate(entries):
        if size <= budget:
            break
        lean = without_details(entry)
        size -= _entry_size(entry) - _entry_size(lean)
        entries[index] = lean
    while size > budget and len(entries) > 1:
        size -= _entry_size(entries.pop(0)) + 1  # and its comma
    return tuple(entries)


def _entry_size(entry: RevisionEntry) -> int:
    return len(json.dumps(_entry_to_json(entry), sort_keys=True, separators=(",", ":")))


def _revisions_size(revisions: tuple[RevisionEntry, ...]) -> int:
    """Bytes the revisions take in the record's JSON: the list, its commas and brackets."""
    return sum(_entry_size(e) for e in revisions) + max(len(revisions) - 1, 0) + 2


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
                "log": bound_log(h.log),
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
    if e.canary:
        out["canary"] = e.canary
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
        cause=Cause.parse(str(raw.get("cause", "")), Cause.CONFIG_CHANGE),
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
        canary=str(raw.get("canary", "")),
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
        cause=Cause.parse(str(raw.get("cause", "")), Cause.ROLLBACK),
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
        "manifestCommit": status.manifest_commit,
    } | ({"imageTriggers": list(status.image_triggers)} if status.image_triggers else {})


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
        manifest_commit=str(raw.get("manifestCommit", "")),
        image_triggers=tuple(str(t) for t in raw.get("imageTriggers") or ()),
    )
