"""Image stream tag bookkeeping: which digest each tag points at, and which tags moved.

Pure apart from the injected ``resolve`` callable (in production ``RegistryClient.resolve_digest``,
in tests a dict lookup); time is an argument. It lives in ``images`` rather than ``core`` because it
parses image references with :mod:`gitdeploy.images.reference`, and ``core`` imports no other layer.

Rules (OpenShift's image import, simplified):

* Only tags with ``from_kind == "DockerImage"`` are resolved; others (``ImageStreamTag`` aliases)
  keep their history and are listed in ``skipped``.
* A tag is resolved when it is ``scheduled``, when it has no history yet, when its ``from_name``
  changed since the last resolution, or when ``resolve_all`` is set (a manual import).
* A tag moved by hand (``gitdeploy tag``, :meth:`TagHistory.move_by_hand`) is not resolved again
  until git changes its ``from_name``: the hand-set digest stays, scheduled or not. A hand-moved
  tag that was never resolved adopts git's ``from_name`` as its source at the next resolution.
* A ``from_name`` pinned to a digest (``repo@sha256:...``) needs no resolver call.
* A newly seen digest is put first in the history, an older entry with the same digest is dropped
  (so the history lists distinct digests, newest first), and the history is cut to ``limit``.
  Seeing the current digest again changes nothing (its ``observed_at`` keeps the first sighting).
* A failure to resolve one tag (any ``GitdeployError``) is reported in ``failures`` and leaves that
  tag's history as it was; the other tags are still resolved.
* The result holds a history for exactly the stream's tags: histories of removed tags are dropped.

Worked example: history of ``latest`` is ``[B@t1, A@t0]``; the registry now says ``A`` at ``t2``
-> history ``[A@t2, B@t1]`` and ``latest`` is in ``changes`` (previous ``B``, current ``A``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gitdeploy.core.models import ImageStream, ImageStreamTag
from gitdeploy.errors import GitdeployError, PermanentError
from gitdeploy.images.reference import format_pinned_reference, parse_image_reference

DEFAULT_HISTORY_LIMIT = 10
"""Entries kept per tag: enough to roll back a few image moves, small enough for an annotation."""

DOCKER_IMAGE = "DockerImage"

DigestResolver = Callable[[str], str]
"""Maps an image reference (``registry/repo:tag``) to the digest its tag points at now."""


@dataclass(frozen=True)
class TagEvent:
    """One digest a tag pointed at, first observed at ``observed_at`` (seconds since the epoch)."""

    digest: str
    image: str
    """The digest-pinned reference, ``registry/repository@sha256:...``: what gets deployed."""
    observed_at: float


@dataclass(frozen=True)
class TagHistory:
    """What one stream tag pointed at over time, newest first, at most ``limit`` entries."""

    tag: str
    source: str = ""
    """The ``from_name`` the newest entry was resolved from; a change forces a new resolution."""
    events: tuple[TagEvent, ...] = ()
    manual: bool = False
    """The newest entry was set by hand (``gitdeploy tag``) rather than resolved from ``source``."""

    @property
    def latest(self) -> TagEvent | None:
        """The digest the tag points at now, if it was ever resolved."""
        return self.events[0] if self.events else None

    def record_event(self, event: TagEvent, source: str, limit: int = DEFAULT_HISTORY_LIMIT) -> TagHistory:
        """This history with ``event`` as its newest entry (unchanged if it already is the newest)."""
        if limit < 1:
            raise ValueError("a tag history keeps at least one entry")
        if self.latest is not None and (self.latest.digest, self.latest.image) == (event.digest, event.image):
            return TagHistory(self.tag, source, self.events[:limit])
        older = tuple(e for e in self.events if e.digest != event.digest)
        return TagHistory(self.tag, source, ((event, *older))[:limit])

    def move_by_hand(self, event: TagEvent, limit: int = DEFAULT_HISTORY_LIMIT) -> TagHistory:
        """This history with ``event`` newest, set by hand: it holds until git's ``from`` changes."""
        moved = self.record_event(event, self.source, limit)
        return TagHistory(moved.tag, moved.source, moved.events, manual=True)


@dataclass(frozen=True)
class TagChange:
    """A tag whose newest digest differs from before; ``previous`` is ``None`` on its first resolution."""

    tag: str
    previous: TagEvent | None
    current: TagEvent


@dataclass(frozen=True)
class TagFailure:
    """A tag that could not be resolved this time; its history was left as it was."""

    tag: str
    error: GitdeployError


@dataclass(frozen=True)
class StreamResolution:
    """The outcome of :func:`resolve_stream_tags` for one stream."""

    histories: tuple[TagHistory, ...]
    """One per stream tag, in the stream's tag order."""
    changes: tuple[TagChange, ...] = ()
    failures: tuple[TagFailure, ...] = ()
    skipped: tuple[str, ...] = ()
    """Tags not resolved this time: not ``DockerImage``, or unscheduled and already resolved."""

    def history(self, tag: str) -> TagHistory | None:
        """The history of ``tag``, if the stream has that tag."""
        return next((h for h in self.histories if h.tag == tag), None)

    @property
    def changed_tags(self) -> tuple[str, ...]:
        """Names of the tags that moved, in stream order."""
        return tuple(c.tag for c in self.changes)


def select_tags_to_resolve(
    tags: Iterable[ImageStreamTag], histories: Mapping[str, TagHistory], *, resolve_all: bool = False
) -> tuple[ImageStreamTag, ...]:
    """The ``DockerImage`` tags due for resolution (see the module rules)."""
    due: list[ImageStreamTag] = []
    for tag in tags:
        if tag.from_kind != DOCKER_IMAGE:
            continue
        history = histories.get(tag.name)
        never_resolved = history is None or history.latest is None
        source_changed = history is not None and history.source != tag.from_name
        held = history is not None and history.manual and (not history.source or not source_changed)
        if held and not never_resolved:
            continue  # moved by hand: holds until git's from changes (an empty source adopts git's)
        if resolve_all or tag.scheduled or never_resolved or source_changed:
            due.append(tag)
    return tuple(due)


def resolve_stream_tags(
    stream: ImageStream,
    histories: Iterable[TagHistory],
    resolve: DigestResolver,
    *,
    now: float,
    limit: int = DEFAULT_HISTORY_LIMIT,
    resolve_all: bool = False,
) -> StreamResolution:
    """Resolve the stream's due ``DockerImage`` tags with ``resolve`` and update their histories.

    ``histories`` are the previous results (any order; histories of tags no longer in the stream
    are dropped). ``now`` is stamped on new events. Only ``GitdeployError`` from ``resolve`` is
    caught; anything else is a bug and propagates.
    """
    previous = {h.tag: h for h in histories}
    due = {t.name for t in select_tags_to_resolve(stream.tags, previous, resolve_all=resolve_all)}
    updated: list[TagHistory] = []
    changes: list[TagChange] = []
    failures: list[TagFailure] = []
    skipped: list[str] = []
    for tag in stream.tags:
        history = previous.get(tag.name, TagHistory(tag.name))
        if tag.name not in due:
            if history.manual and not history.source:
                history = TagHistory(history.tag, tag.from_name, history.events, manual=True)
            skipped.append(tag.name)
            updated.append(history)
            continue
        try:
            event = _resolve_tag_event(tag, resolve, now)
        except GitdeployError as exc:
            failures.append(TagFailure(tag.name, exc))
            updated.append(history)
            continue
        before = history.latest
        history = history.record_event(event, tag.from_name, limit)
        updated.append(history)
        if before is None or before.digest != event.digest or before.image != event.image:
            changes.append(TagChange(tag.name, before, event))
    return StreamResolution(tuple(updated), tuple(changes), tuple(failures), tuple(skipped))


def _resolve_tag_event(tag: ImageStreamTag, resolve: DigestResolver, now: float) -> TagEvent:
    reference = parse_image_reference(tag.from_name)
    digest = reference.digest if reference.digest is not None else resolve(str(reference))
    return TagEvent(digest=digest, image=format_pinned_reference(reference, digest), observed_at=now)


STATE_VERSION = 1
"""Version of the stored tag-history JSON (:func:`histories_to_json`)."""


def histories_to_json(histories: Iterable[TagHistory]) -> str:
    """The tag histories of one stream as versioned JSON, as kept in the cluster.

    ``{"version": 1, "tags": [{"tag", "source", "manual", "events": [{"digest", "image",
    "observedAt"}]}]}``, newest event first.
    """
    body = {
        "version": STATE_VERSION,
        "tags": [
            {
                "tag": h.tag,
                "source": h.source,
                "manual": h.manual,
                "events": [
                    {"digest": e.digest, "image": e.image, "observedAt": e.observed_at} for e in h.events
                ],
            }
            for h in histories
        ],
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def histories_from_json(text: str) -> tuple[TagHistory, ...]:
    """Read :func:`histories_to_json`'s output; a damaged or newer payload is a ``PermanentError``."""
    try:
        body = json.loads(text)
        if not isinstance(body, dict) or int(body.get("version", 0)) > STATE_VERSION:
            raise ValueError("not a tag-history document of a known version")
        return tuple(
            TagHistory(
                tag=str(raw["tag"]),
                source=str(raw.get("source", "")),
                events=tuple(
                    TagEvent(str(e["digest"]), str(e["image"]), float(e["observedAt"]))
                    for e in raw.get("events") or []
                ),
                manual=bool(raw.get("manual", False)),
            )
            for raw in body.get("tags") or []
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PermanentError(
            f"the stored image stream state is not readable ({exc})",
            hint="delete its ConfigMap (gitdeploy-imagestream-<name>); the next pass resolves the tags again",
        ) from None
