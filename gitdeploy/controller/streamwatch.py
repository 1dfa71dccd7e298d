"""The watch that brings image stream tag moves to the loop at once.

``gitdeploy tag`` writes a stream's state (the ConfigMap ``gitdeploy-imagestream-<stream>``); the
loop otherwise reads those states only when git changes and every ``--image-interval``. Each
change seen here goes to :meth:`Controller.notice_stream`, and the next pass (woken at once) takes
it in and passes over the apps that follow a tag that moved. The loop's own writes carry the
resourceVersion it knows and wake nothing.

One watch per namespace that holds one of git's image streams (gitdeploy's RBAC is per namespace,
so never a cluster-wide watch), started as streams appear in new namespaces. A watch is only a
shortcut: a rollout never starts from a stream state older than the stored one, because the loop
reads the followed streams again before it starts one (:meth:`ImageTriggers.confirm`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.core.observed import StoredRecord
from gitdeploy.errors import ExpiredError, GitdeployError

log = logging.getLogger("gitdeploy.watch")

SUPERVISE_SECONDS = 2.0
"""How often the namespaces of git's streams are looked at for one not watched yet."""


def watch_streams(controller: Controller, stop: threading.Event, on_notice: Callable[[], None]) -> None:
    """Follow the image stream states of git's streams until ``stop``; ``on_notice`` on news."""

    def seen(state: StoredRecord) -> None:
        if not stop.is_set() and controller.notice_stream(state):
            on_notice()

    def follow(namespace: str) -> None:
        version = ""
        while not stop.is_set():
            try:
                version = follow_streams_once(
                    controller.cluster, namespace, version, seen, timeout_seconds=60
                )
            except GitdeployError as problem:  # the API hiccupped: watch again from where it was
                log.debug("image stream watch of %s restarts: %s", namespace, problem)
                stop.wait(1.0)

    def supervise() -> None:
        watched: set[str] = set()
        while not stop.is_set():
            for namespace in sorted({ns for ns, _ in list(controller.images.streams)} - watched):
                threading.Thread(
                    target=follow, args=(namespace,), name=f"watch-streams-{namespace}", daemon=True
                ).start()
                watched.add(namespace)
            stop.wait(SUPERVISE_SECONDS)

    threading.Thread(target=supervise, name="watch-streams", daemon=True).start()


def follow_streams_once(
    cluster: Cluster,
    namespace: str,
    version: str,
    seen: Callable[[StoredRecord], None],
    *,
    timeout_seconds: int,
) -> str:
    """One watch of the stream states in ``namespace`` from ``version`` until the server ends it,
    ``seen`` told of each state added or changed; returns the version to go on from.

    Without a ``version`` the states are listed first (each one is ``seen``: a tag moved before
    the watch began is news too) and the watch starts from the list's resourceVersion. A 410 Gone
    returns ``""``: the next call lists again.
    """
    if not version:
        states, version = cluster.list_stream_states_at(namespace)
        for state in states:
            seen(state)
    try:
        for kind, state in cluster.watch_stream_states(namespace, version, timeout_seconds=timeout_seconds):
            version = state.resource_version or version
            if kind != "DELETED":  # a deleted state is written again by the next refresh
                seen(state)
    except ExpiredError as gone:
        log.info("image stream watch of %s: %s; listing again", namespace, gone)
        return ""
    return version


__all__ = ["follow_streams_once", "watch_streams"]
