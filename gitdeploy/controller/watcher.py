"""Watches that make the loop look at an app before its next scheduled pass.

* App records (:func:`watch_records`): a settled app is otherwise re-examined only when its
  manifest changes or at the periodic resync, so without this a rollback made from a laptop would
  wait minutes for ``gitdeploy run``. Changes feed :meth:`Controller.notice`; the loop's own
  writes are recognised by their resourceVersion and ignored.
* ReplicaSets (:func:`watch_rollouts`): a rolling update waits for pods to become available (or
  for old pods to go); the step after that is due as soon as a ReplicaSet's status says so
  (:func:`~gitdeploy.core.scaling.progress.unblocks_rollout`), through
  :meth:`Controller.notice_progress`, instead of at the step's requeue time. A ``spec.replicas``
  the loop did not set, or a delete it did not make (``kubectl scale rs``), makes the app due at
  once through :meth:`Controller.notice_drift`: the pass undoes it, as the Deployment controller would.

One watch per namespace and kind (gitdeploy's RBAC is per namespace, so never a cluster-wide
watch), started as apps appear in new namespaces. Each lists its namespace once, then follows it
from the list's resourceVersion (resumed where it broke off; a 410 lists again), and keeps what it
sees in the controller's :class:`~gitdeploy.controller.watchcache.WatchCache`, from which
``/metrics`` counts the apps by state. A watch costs no request per poll, so a poll with nothing
new still makes none.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.listwatch import follow_once, keep_following
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.watchcache import DELETED, Kind
from gitdeploy.core.canarystate import canary_request
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import ObservedReplicaSet, StoredRecord
from gitdeploy.core.scaling.progress import unblocks_rollout
from gitdeploy.core.scaling.replicasets import ReplicaSetState
from gitdeploy.core.sharding import SHARDS
from gitdeploy.errors import GitdeployError

log = logging.getLogger("gitdeploy.watch")


def watch_records(controller: Controller, stop: threading.Event, on_notice: Callable[[], None]) -> None:
    """Follow app record changes until ``stop``; ``on_notice`` when an app became due."""
    per_namespace(
        controller,
        stop,
        "watch-records",
        lambda ns, selection: _follow(controller, ns, selection, on_notice),
        shards=lambda: controller.watched_shards(),
    )


def watch_rollouts(controller: Controller, stop: threading.Event, on_notice: Callable[[], None]) -> None:
    """Follow ReplicaSet status until ``stop``; ``on_notice`` when a rollout became due."""
    per_namespace(
        controller,
        stop,
        "watch-replicasets",
        lambda ns, selection: _follow_replica_sets(controller, ns, selection, on_notice),
        shards=lambda: controller.watched_shards(),
    )


class Superseded(Exception):
    """A watch's :class:`Selection` was superseded: it ends, and changes nothing any more."""


class Selection:
    """What one watch of a namespace follows: the objects of the apps of ``shards`` (None: all;
    a replica of ``run --sharding`` follows its own shards), until the loop stops or the
    replica's shards change. Then a watch of the new shards starts, and this one changes the
    cache no more (:meth:`apply`): it ends at its next event, or when its request ends."""

    def __init__(self, shards: frozenset[str] | None, stop: threading.Event, lock: threading.Lock) -> None:
        self.shards = shards
        self.stop = stop
        """The loop's: set when everything stops (not when the shards change)."""
        self.ended = threading.Event()
        self._lock = lock
        """The namespace's, for all its selections: one applies a change at a time, and none
        after it ended."""

    def apply(self, change: Callable[[], None]) -> None:
        """Make ``change`` (to the cache, to what is due) unless this selection ended (then
        :class:`Superseded` ends its watch)."""
        with self._lock:
            if self.ended.is_set():
                raise Superseded
            change()

    def end(self) -> None:
        with self._lock:
            self.ended.set()


def per_namespace(
    controller: Controller,
    stop: threading.Event,
    name: str,
    follow: Callable[[str, Selection], None],
    namespaces: Callable[[], set[str]] | None = None,
    shards: Callable[[], frozenset[str] | None] = lambda: None,
) -> None:
    """Run ``follow(namespace, selection)`` on a thread per namespace, until ``stop``: each
    namespace of ``namespaces()`` (default: the ones gitdeploy deploys to), as it appears, for the
    objects of ``shards()``; when those change, a new thread follows the new shards and the old
    one's selection ends (``follow`` returns once its ``selection.ended`` is set)."""

    def deployed_to() -> set[str]:
        return set(controller.namespaces) or {key.namespace for key in list(controller.apps)}

    wanted_now = namespaces or deployed_to

    def run(namespace: str, selection: Selection) -> None:
        with contextlib.suppress(Superseded):
            follow(namespace, selection)

    def supervise() -> None:
        watched: dict[str, Selection] = {}
        locks: dict[str, threading.Lock] = {}
        try:
            while not stop.is_set():
                wanted = shards()
                for namespace in sorted(wanted_now()):
                    current = watched.get(namespace)
                    if current is not None and current.shards == wanted:
                        continue
                    if current is not None:
                        current.end()
                        log.info("%s: follows %s in %s now", name, _shards_text(wanted), namespace)
                    selection = Selection(wanted, stop, locks.setdefault(namespace, threading.Lock()))
                    watched[namespace] = selection
                    threading.Thread(
                        target=run, args=(namespace, selection), name=f"{name}-{namespace}", daemon=True
                    ).start()
                stop.wait(2.0)
        finally:
            for selection in watched.values():
                selection.end()

    threading.Thread(target=supervise, name=name, daemon=True).start()


def _shards_text(shards: frozenset[str] | None) -> str:
    """How a log line names what a watch follows.

    >>> _shards_text(None), _shards_text(frozenset({"1", "2"}))
    ('every app', 'the apps of 2 of 1024 shards')
    """
    return "every app" if shards is None else f"the apps of {len(shards)} of {SHARDS} shards"


def _follow(
    controller: Controller, namespace: str, selection: Selection, on_notice: Callable[[], None]
) -> None:
    cache, shards = controller.watch_cache, selection.shards

    def seen(stored: StoredRecord) -> None:
        def change() -> None:
            cache.record_changed("MODIFIED", stored)
            if controller.notice(AppKey(stored.namespace, stored.app), stored.resource_version):
                on_notice()

        selection.apply(change)

    def gone(stored: StoredRecord) -> None:  # news too: the next pass rebuilds it from the ReplicaSets
        def change() -> None:
            cache.record_changed(DELETED, stored)
            if controller.notice(AppKey(stored.namespace, stored.app), ""):
                on_notice()

        selection.apply(change)

    def once(version: str, reached: Callable[[str], None]) -> str:
        if not version and shards is not None:
            _label_shards(controller.cluster.label_record_shards, namespace, "app records")
        return follow_records_once(
            controller.cluster,
            namespace,
            version,
            seen,
            timeout_seconds=60,
            deleted=gone,
            reached=reached,
            listed=lambda items: selection.apply(lambda: cache.replace_records(namespace, items, shards)),
            shards=shards,
        )

    keep_following(selection.ended, f"record watch of {namespace}", once)
    if selection.stop.is_set():
        cache.forget(namespace, Kind.RECORDS)


def _label_shards(label: Callable[[str], int], namespace: str, what: str) -> None:
    """Before a sharded replica's watch lists ``namespace``: give the objects an older gitdeploy
    made there without their app's shard label the label (``label``): the watch selects its
    shards, so it would not see them. A failure is logged, and the watch lists what it can."""
    try:
        labelled = label(namespace)
    except GitdeployError as problem:
        log.warning(
            "could not label the %s in %s with their app's shard (%s); the watch lists without the "
            "older ones until they are labelled: let gitdeploy list and patch them there "
            "(deploy/rbac.yaml does), it tries again at its next list",
            what,
            namespace,
            problem,
        )
        return
    if labelled:
        log.info("labelled %d %s in %s with their app's shard (made without it)", labelled, what, namespace)


def follow_records_once(
    cluster: Cluster,
    namespace: str,
    version: str,
    seen: Callable[[StoredRecord], None],
    *,
    timeout_seconds: int,
    deleted: Callable[[StoredRecord], None] | None = None,
    reached: Callable[[str], None] | None = None,
    listed: Callable[[list[StoredRecord]], None] | None = None,
    shards: frozenset[str] | None = None,
) -> str:
    """One watch of the app records in ``namespace`` (of the apps of ``shards`` only, when given)
    from ``version`` until the server ends it,
    ``seen`` told of each record that was added or changed (and ``deleted`` of each one deleted);
    returns the version to go on from. ``reached`` is told of that version as it moves (after the
    list, after each change), so that a watch that breaks off (a cut connection, an API server
    restart) is resumed from where it was: listing again then would be a relist per cut.

    Without a ``version`` the records are listed first (each one is ``seen``) and the watch starts
    from the *list's* resourceVersion: an item's may be older than the server keeps, and a watch
    from it would end at once in 410 Gone, over and over. A 410 Gone returns ``""``: the next call
    lists again, once, and goes on from that list. ``listed`` is told of each list as a whole.
    """
    return follow_once(
        f"record watch of {namespace}",
        lambda: cluster.list_app_records_at(namespace, shards),
        lambda since: cluster.watch_app_records(namespace, since, timeout_seconds, shards),
        version,
        seen,
        deleted=deleted,
        reached=reached,
        listed=listed,
    )


NO_REQUEST = ("", "")


class _CanaryRequests:
    """The canary requests (``rollout promote``/``abort``) seen on each ReplicaSet of a namespace
    that has one: a new one makes the app due at once."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.asked: dict[str, tuple[str, str]] = {}

    def listed(self, items: list[ObservedReplicaSet]) -> None:
        self.asked = {rs.name: request for rs in items if any(request := canary_request(rs))}

    def gone(self, rs: ObservedReplicaSet) -> None:
        self.asked.pop(rs.name, None)

    def new(self, rs: ObservedReplicaSet) -> bool:
        """Whether ``rs`` as changed carries a request not seen on it before."""
        request, last = canary_request(rs), self.asked.pop(rs.name, NO_REQUEST)
        if any(request):
            self.asked[rs.name] = request
        if request != last and any(request):
            where = f"{self.namespace}/{rs.app}"
            log.info("[%s] a canary request on %s; passing over the app now", where, rs.name)
            return True
        return False


def _follow_replica_sets(
    controller: Controller, namespace: str, selection: Selection, on_notice: Callable[[], None]
) -> None:
    """List the namespace's ReplicaSets (of the apps of the selection's shards), then follow their
    changes from the list's version (a watch that breaks off resumes from where it was; a 410
    lists again): each one goes into the watch cache, and may make its app due (a hand change, or
    a rollout's progress)."""
    cache, cluster, shards = controller.watch_cache, controller.cluster, selection.shards
    before: dict[str, ReplicaSetState] = {}
    """The last status seen of each ReplicaSet (listed or watched): a change of it that unblocks
    a rollout makes the app due at once."""
    asked = _CanaryRequests(namespace)

    def listed(items: list[ObservedReplicaSet]) -> None:
        cache.replace_replica_sets(namespace, items, shards)
        asked.listed(items)

    def changed(kind: str, rs: ObservedReplicaSet) -> None:
        cache.replica_set_changed(kind, rs)
        if controller.notice_drift(kind, rs):  # a hand change: the pass undoes it
            on_notice()
        last = before.pop(rs.name, None)
        if kind == DELETED:
            asked.gone(rs)
            return
        before[rs.name] = rs.state
        progressed = asked.new(rs) or (last is not None and unblocks_rollout(last, rs.state))
        if progressed and controller.notice_progress(AppKey(rs.namespace, rs.app)):
            on_notice()

    def once(version: str, reached: Callable[[str], None]) -> str:
        controller.watched.add(namespace)
        if not version and shards is not None:
            _label_shards(cluster.label_replica_set_shards, namespace, "ReplicaSets")
        try:
            return follow_once(
                f"ReplicaSet watch of {namespace}",
                lambda: cluster.list_replica_sets_at(namespace, shards),
                lambda since: cluster.watch_replica_sets(namespace, 60, since, shards),
                version,
                lambda rs: selection.apply(lambda: changed("MODIFIED", rs)),
                deleted=lambda rs: selection.apply(lambda: changed(DELETED, rs)),
                reached=reached,
                listed=lambda items: selection.apply(lambda: listed(items)),
            )
        except GitdeployError:
            if not selection.ended.is_set():  # steps requeue as if unwatched meanwhile
                controller.watched.discard(namespace)
            raise

    keep_following(selection.ended, f"ReplicaSet watch of {namespace}", once)
    if selection.stop.is_set():
        controller.watched.discard(namespace)
        cache.forget(namespace, Kind.REPLICA_SETS)


__all__ = [
    "Selection",
    "follow_records_once",
    "per_namespace",
    "watch_records",
    "watch_rollouts",
]
