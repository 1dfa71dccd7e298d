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
from gitdeploy.errors import GitdeployError

log = logging.getLogger("gitdeploy.watch")


def watch_records(controller: Controller, stop: threading.Event, on_notice: Callable[[], None]) -> None:
    """Follow app record changes until ``stop``; ``on_notice`` when an app became due."""
    per_namespace(controller, stop, "watch-records", lambda ns: _follow(controller, ns, stop, on_notice))


def watch_rollouts(controller: Controller, stop: threading.Event, on_notice: Callable[[], None]) -> None:
    """Follow ReplicaSet status until ``stop``; ``on_notice`` when a rollout became due."""
    per_namespace(
        controller,
        stop,
        "watch-replicasets",
        lambda ns: _follow_replica_sets(controller, ns, stop, on_notice),
    )


def per_namespace(
    controller: Controller,
    stop: threading.Event,
    name: str,
    follow: Callable[[str], None],
    namespaces: Callable[[], set[str]] | None = None,
) -> None:
    """Run ``follow(namespace)`` on a thread per namespace, until ``stop``: each namespace of
    ``namespaces()`` (default: the ones gitdeploy deploys to), as it appears."""

    def deployed_to() -> set[str]:
        return set(controller.namespaces) or {key.namespace for key in list(controller.apps)}

    wanted_now = namespaces or deployed_to

    def supervise() -> None:
        watched: set[str] = set()
        while not stop.is_set():
            for namespace in sorted(wanted_now() - watched):
                threading.Thread(
                    target=follow, args=(namespace,), name=f"{name}-{namespace}", daemon=True
                ).start()
                watched.add(namespace)
            stop.wait(2.0)

    threading.Thread(target=supervise, name=name, daemon=True).start()


def _follow(
    controller: Controller, namespace: str, stop: threading.Event, on_notice: Callable[[], None]
) -> None:
    cache = controller.watch_cache

    def seen(stored: StoredRecord) -> None:
        cache.record_changed("MODIFIED", stored)
        if not stop.is_set() and controller.notice(
            AppKey(stored.namespace, stored.app), stored.resource_version
        ):
            on_notice()

    def gone(stored: StoredRecord) -> None:  # news too: the next pass rebuilds it from the ReplicaSets
        cache.record_changed(DELETED, stored)
        if not stop.is_set() and controller.notice(AppKey(stored.namespace, stored.app), ""):
            on_notice()

    keep_following(
        stop,
        f"record watch of {namespace}",
        lambda version, reached: follow_records_once(
            controller.cluster,
            namespace,
            version,
            seen,
            timeout_seconds=60,
            deleted=gone,
            reached=reached,
            listed=lambda items: cache.replace_records(namespace, items),
        ),
    )
    cache.forget(namespace, Kind.RECORDS)


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
) -> str:
    """One watch of the app records in ``namespace`` from ``version`` until the server ends it,
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
        lambda: cluster.list_app_records_at(namespace),
        lambda since: cluster.watch_app_records(namespace, since, timeout_seconds=timeout_seconds),
        version,
        seen,
        deleted=deleted,
        reached=reached,
        listed=listed,
    )


NO_REQUEST = ("", "")


def _follow_replica_sets(
    controller: Controller, namespace: str, stop: threading.Event, on_notice: Callable[[], None]
) -> None:
    """List the namespace's ReplicaSets, then follow their changes from the list's version (a
    watch that breaks off resumes from where it was; a 410 lists again): each one goes into the
    watch cache, and may make its app due (a hand change, or a rollout's progress)."""
    cache, cluster = controller.watch_cache, controller.cluster
    before: dict[str, ReplicaSetState] = {}
    """The last status seen of each ReplicaSet (listed or watched): a change of it that unblocks
    a rollout makes the app due at once."""
    asked: dict[str, tuple[str, str]] = {}
    """The canary requests (``rollout promote``/``abort``) seen on each ReplicaSet that has one: a
    new one makes the app due at once."""

    def listed(items: list[ObservedReplicaSet]) -> None:
        cache.replace_replica_sets(namespace, items)
        asked.clear()
        asked.update((rs.name, request) for rs in items if any(request := canary_request(rs)))

    def new_request(rs: ObservedReplicaSet) -> bool:
        request, last = canary_request(rs), asked.pop(rs.name, NO_REQUEST)
        if any(request):
            asked[rs.name] = request
        if request != last and any(request):
            log.info("[%s/%s] a canary request on %s; passing over the app now", namespace, rs.app, rs.name)
            return True
        return False

    def changed(kind: str, rs: ObservedReplicaSet) -> None:
        cache.replica_set_changed(kind, rs)
        if stop.is_set():
            return
        if controller.notice_drift(kind, rs):  # a hand change: the pass undoes it
            on_notice()
        last = before.pop(rs.name, None)
        if kind == DELETED:
            asked.pop(rs.name, None)
            return
        before[rs.name] = rs.state
        progressed = new_request(rs) or (last is not None and unblocks_rollout(last, rs.state))
        if progressed and controller.notice_progress(AppKey(rs.namespace, rs.app)):
            on_notice()

    def once(version: str, reached: Callable[[str], None]) -> str:
        controller.watched.add(namespace)
        try:
            return follow_once(
                f"ReplicaSet watch of {namespace}",
                lambda: cluster.list_replica_sets_at(namespace),
                lambda since: cluster.watch_replica_sets(namespace, 60, resource_version=since),
                version,
                lambda rs: changed("MODIFIED", rs),
                deleted=lambda rs: changed(DELETED, rs),
                reached=reached,
                listed=listed,
            )
        except GitdeployError:
            controller.watched.discard(namespace)  # steps requeue as if unwatched meanwhile
            raise

    keep_following(stop, f"ReplicaSet watch of {namespace}", once)
    controller.watched.discard(namespace)
    cache.forget(namespace, Kind.REPLICA_SETS)


__all__ = [
    "follow_records_once",
    "per_namespace",
    "watch_records",
    "watch_rollouts",
]
