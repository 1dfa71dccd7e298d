"""Image streams and ImageChange triggers: resolve tags, keep their state in the cluster, decide images.

* :meth:`ImageTriggers.refresh` reads each stream's state (a ConfigMap
  ``gitdeploy-imagestream-<name>`` in the stream's namespace: every tag's history of digests), asks
  the registries about the tags that are due (scheduled ones, and those new or changed in git; see
  :mod:`gitdeploy.images.streams`), writes the state back when it changed, and returns the stream
  tags whose image (or failure) changed, so the loop can mark the apps that follow them as due.
  It runs on every new desired state and every ``interval_seconds``.
* Tags moved by ``gitdeploy tag`` (which writes the same ConfigMap) reach the loop at once: ``run``
  watches the stream states (:mod:`gitdeploy.controller.streamwatch`) and hands each change to
  :meth:`ImageTriggers.absorb`. Before a rollout that takes images from followed tags starts,
  :meth:`ImageTriggers.confirm` reads those streams again, so a rollout never starts from a stream
  state older than the one stored (a watch event may still be on its way).
* :meth:`ImageTriggers.decide` applies :func:`gitdeploy.core.imagetriggers.decide_images` to one
  app with the images known now (no I/O), and :meth:`ImageTriggers.note` says what went wrong for
  the tags an app follows.

A registry that fails leaves its tags' state as it was, so the apps that follow them keep the
images they run; only those apps' status mentions it.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from gitdeploy.clock import Clock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.core.history.records import Cause
from gitdeploy.core.imagetriggers import ImageDecision, decide_images, stream_tag_key
from gitdeploy.core.models import App, ImageStream
from gitdeploy.core.observed import StoredRecord
from gitdeploy.core.rollout import AppPhase, Snapshot, Target, starts_rollout
from gitdeploy.errors import GitdeployError
from gitdeploy.images.registry import RegistryClient
from gitdeploy.images.streams import (
    DigestResolver,
    TagHistory,
    histories_from_json,
    histories_to_json,
    resolve_stream_tags,
)

log = logging.getLogger("gitdeploy.images")

DEFAULT_IMAGE_INTERVAL = 120.0
"""Seconds between two checks of the scheduled tags (``--image-interval``)."""


@dataclass(frozen=True)
class ImageSettings:
    """How to reach registries and how often to look at scheduled tags."""

    docker_config: Path | None = None
    """A Docker ``config.json`` with registry credentials; default ``$DOCKER_CONFIG`` or ``~/.docker``."""
    insecure_registries: tuple[str, ...] = ()
    """Registries (``host[:port]``) that may be reached over plain HTTP (loopback always may)."""
    interval_seconds: float = DEFAULT_IMAGE_INTERVAL


class ImageTriggers:
    """The stream tags' current images, refreshed from the cluster and the registries."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Clock,
        settings: ImageSettings | None = None,
        resolver: DigestResolver | None = None,
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.settings = settings or ImageSettings()
        self._resolver = resolver
        self._client: RegistryClient | None = None
        self._lock = threading.Lock()
        self.images: dict[str, str] = {}
        """``ns/stream:tag`` -> the digest-pinned image the tag points at."""
        self.failures: dict[str, str] = {}
        """``ns/stream:tag`` -> why it could not be resolved (or its state read or saved) last time."""
        self.next_check: float | None = None
        """When :meth:`refresh` is due again; ``None`` while git has no image streams."""
        self.leading: Callable[[], bool] = lambda: True
        """``run --sharding``: only the holder of the leader Lease polls image streams."""
        self.streams: dict[tuple[str, str], ImageStream] = {}
        """Git's image streams at the last :meth:`refresh`, by (namespace, name)."""
        self.versions: dict[tuple[str, str], str] = {}
        """The resourceVersion of each stream state ``images`` was taken from, by (namespace, name)."""
        self._news: dict[tuple[str, str], StoredRecord] = {}
        """Stream states a watch saw change (:meth:`notice`), taken in by :meth:`take_news`."""

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def _resolve(self, reference: str) -> str:
        if self._resolver is not None:
            return self._resolver(reference)
        with self._lock:
            if self._client is None:
                self._client = RegistryClient(
                    docker_config=self.settings.docker_config,
                    insecure_hosts=self.settings.insecure_registries,
                )
            client = self._client
        return client.resolve_digest(reference)

    # -- refresh -------------------------------------------------------------------------------------

    def refresh(self, streams: Iterable[ImageStream]) -> set[str]:
        """Read, resolve and save every stream's tags; the ``ns/stream:tag`` keys that changed."""
        if not self.leading():  # another replica polls them; their news comes by the stream watch
            self.next_check = None
            return set()
        streams = tuple(streams)
        now = self.clock.now()
        self.next_check = now + self.settings.interval_seconds if streams else None
        images: dict[str, str] = {}
        failures: dict[str, str] = {}
        versions: dict[tuple[str, str], str] = {}
        stored = self._read_states({s.key.namespace for s in streams}, streams, failures)
        for stream in streams:
            where = (stream.key.namespace, stream.key.name)
            if where not in stored:  # its state could not be read: keep what we knew
                self._keep_previous(stream, images)
                continue
            histories, versions[where] = self._refresh_stream(stream, stored[where], now, failures)
            for history in histories:
                if history.latest is not None:
                    images[f"{stream.key}:{history.tag}"] = history.latest.image
        changed = {
            key
            for key in set(images) | set(self.images) | set(failures) | set(self.failures)
            if images.get(key) != self.images.get(key) or failures.get(key) != self.failures.get(key)
        }
        with self._lock:
            self.images, self.failures, self.versions = images, failures, versions
            self.streams = {(s.key.namespace, s.key.name): s for s in streams}
        return changed

    def absorb(self, state: StoredRecord) -> set[str]:
        """Take a stream state as the cluster holds it now (a watch event, a fresh read) for the
        images of its tags in git; the ``ns/stream:tag`` keys whose image changed. No registry is
        asked: that is :meth:`refresh`'s work."""
        where = (state.namespace, state.app)
        stream = self.streams.get(where)
        if stream is None:
            return set()
        try:
            histories = {h.tag: h for h in histories_from_json(state.payload)}
        except GitdeployError as problem:
            log.warning("[images] %s: %s", stream.key, problem.message)
            return set()
        with self._lock:
            images = dict(self.images)
            for tag in stream.tags:
                history = histories.get(tag.name)
                if history is not None and history.latest is not None:
                    images[f"{stream.key}:{tag.name}"] = history.latest.image
            changed = {key for key, image in images.items() if self.images.get(key) != image}
            self.images = images
            self.versions = {**self.versions, where: state.resource_version}
        return changed

    def notice(self, state: StoredRecord) -> bool:
        """A watch saw a stream state change: keep it for :meth:`take_news` (the loop's thread takes
        it in at its next pass). False for the loop's own writes and streams git does not have."""
        where = (state.namespace, state.app)
        with self._lock:
            if where not in self.streams or self.versions.get(where) == state.resource_version:
                return False
            self._news[where] = state
        return True

    def take_news(self) -> set[str]:
        """:meth:`absorb` the states :meth:`notice` kept; the ``ns/stream:tag`` keys that moved."""
        with self._lock:
            news, self._news = self._news, {}
        changed: set[str] = set()
        for state in news.values():
            changed |= self.absorb(state)
        return changed

    def confirm(self, app: App) -> bool:
        """Read the states of the streams ``app``'s triggers follow again, and :meth:`absorb` those
        that changed since ``images`` was taken from them: True when an image changed."""
        changed = False
        for where in dict.fromkeys((t.stream_namespace, t.stream_name) for t in app.triggers.image_change):
            if where not in self.streams:
                continue
            state = self.cluster.read_stream_state(*where)
            if state is not None and state.resource_version != self.versions.get(where):
                changed = bool(self.absorb(state)) or changed
        return changed

    def _read_states(
        self, namespaces: set[str], streams: tuple[ImageStream, ...], failures: dict[str, str]
    ) -> dict[tuple[str, str], StoredRecord | None]:
        """The stored state of every stream, by (namespace, name): ``None`` for a stream without one.

        A namespace whose list fails has no entry: its streams' tags are marked failing.
        """
        found: dict[tuple[str, str], StoredRecord | None] = {
            (s.key.namespace, s.key.name): None for s in streams
        }
        for namespace in sorted(namespaces):
            try:
                listed = self.cluster.list_stream_states(namespace)
            except GitdeployError as problem:
                log.warning("[images] cannot read the image stream states in %s: %s", namespace, problem)
                for stream in streams:
                    if stream.key.namespace == namespace:
                        found.pop((namespace, stream.key.name), None)
                        for tag in stream.tags:
                            failures[f"{stream.key}:{tag.name}"] = f"cannot read its state: {problem.message}"
                continue
            for state in listed:
                if (namespace, state.app) in found:
                    found[(namespace, state.app)] = state
        return found

    def _keep_previous(self, stream: ImageStream, images: dict[str, str]) -> None:
        for tag in stream.tags:
            key = f"{stream.key}:{tag.name}"
            if key in self.images:
                images[key] = self.images[key]

    def _refresh_stream(
        self, stream: ImageStream, state: StoredRecord | None, now: float, failures: dict[str, str]
    ) -> tuple[tuple[TagHistory, ...], str]:
        """The stream's tag histories now, and the resourceVersion of the state they were saved as."""
        version = state.resource_version if state is not None else ""
        previous: tuple[TagHistory, ...] = ()
        if state is not None:
            try:
                previous = histories_from_json(state.payload)
            except GitdeployError as problem:
                log.warning("[images] %s: %s; resolving its tags again", stream.key, problem.message)
        resolution = resolve_stream_tags(stream, previous, self._resolve, now=now)
        for failure in resolution.failures:
            key = f"{stream.key}:{failure.tag}"
            failures[key] = failure.error.message
            log.warning("[images] %s: cannot resolve: %s", key, failure.error.message)
        for change in resolution.changes:
            log.info("[images] %s:%s now points at %s", stream.key, change.tag, change.current.image)
        if resolution.histories == previous and state is not None:
            return resolution.histories, version
        try:
            written = self.cluster.write_stream_state(
                stream.key.namespace,
                stream.key.name,
                histories_to_json(resolution.histories),
                state.resource_version if state is not None else None,
            )
        except GitdeployError as problem:
            # Someone (``gitdeploy tag``) wrote it meanwhile, or the API failed: keep what is stored.
            log.warning("[images] %s: cannot save the tag state: %s", stream.key, problem.message)
            self.next_check = min(self.next_check or now, now + 5.0)
            return previous, version
        return resolution.histories, written.resource_version

    # -- per app -------------------------------------------------------------------------------------

    def decide(self, app: App, snapshot: Snapshot) -> ImageDecision:
        """``app`` with its triggered containers' images decided (see :mod:`gitdeploy.core.imagetriggers`);
        when they would start a rollout, from the followed streams as stored now (:meth:`confirm`)."""
        if not app.triggers.image_change:
            return ImageDecision(app)
        newest = max(
            (rs for rs in snapshot.replica_sets if rs.template is not None),
            key=lambda rs: rs.state.revision,
            default=None,
        )
        running = newest.template if newest is not None else None
        running_hash = newest.state.template_hash if newest is not None else ""
        suspended = snapshot.record.triggers_suspended

        def decide() -> ImageDecision:
            return decide_images(
                app, self.images, suspended=suspended, running=running, running_hash=running_hash
            )

        decision = decide()
        starts = decision.followed and starts_rollout(decision.app.template_hash, snapshot)
        if starts and self.confirm(app):  # never a rollout from a state older than the stored one
            decision = decide()
        return decision

    def note(self, app: App, decision: ImageDecision) -> str:
        """One clause on the tags ``app`` follows that could not be resolved (empty when none)."""
        problems = [
            f"{key}: {self.failures[key]}"
            for key in dict.fromkeys(stream_tag_key(t) for t in app.triggers.image_change)
            if key in self.failures
        ]
        if not problems:
            return ""
        keeps = "waits for an image" if decision.waiting_for else "keeps its running images"
        return f"{IMAGE_NOTE_PREFIX}{'; '.join(problems)} ({keeps})"


IMAGE_NOTE_PREFIX = "image trigger problem: "
"""How :meth:`ImageTriggers.note` starts, so a stored status message can be checked for a stale note."""


def target_for_images(target: Target, decision: ImageDecision) -> Target:
    """``target`` adjusted for image triggers: an image change starts by itself (even without a
    ConfigChange trigger), and an app waiting for a tag's first image does not start."""
    if decision.waiting_for:
        return dataclasses.replace(target, auto_start=False)
    if target.pin is None and decision.cause is Cause.IMAGE_CHANGE:
        changes = ", ".join(decision.followed)
        return dataclasses.replace(
            target, auto_start=True, change_cause=target.change_cause or f"image change: {changes}"
        )
    return target


def waiting_message(decision: ImageDecision) -> str:
    tags = ", ".join(decision.waiting_for)
    return (
        f"waiting for a first image on image stream tag {tags} (push one, or set it with "
        f"`gitdeploy tag SOURCE {tags}` when gitdeploy cannot reach the registry)"
    )


def image_message(message: str, phase: str, decision: ImageDecision, note: str) -> str:
    """A step's status message with what image triggers add: the tag waited for, the tag problems."""
    if decision.waiting_for and phase == AppPhase.WAITING:
        message = waiting_message(decision)
    return f"{message}; {note}" if note else message
