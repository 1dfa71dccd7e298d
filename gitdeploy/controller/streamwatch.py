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

import threading
from collections.abc import Callable

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.listwatch import follow_once, keep_following
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.watcher import Selection, per_namespace
from gitdeploy.core.observed import StoredRecord


def watch_streams(controller: Controller, stop: threading.Event, on_notice: Callable[[], None]) -> None:
    """Follow the image stream states of git's streams until ``stop``; ``on_notice`` on news."""

    def seen(state: StoredRecord) -> None:
        if not stop.is_set() and controller.notice_stream(state):
            on_notice()

    def follow(namespace: str, selection: Selection) -> None:
        keep_following(
            selection.ended,
            f"image stream watch of {namespace}",
            lambda version, reached: follow_streams_once(
                controller.cluster, namespace, version, seen, timeout_seconds=60, reached=reached
            ),
        )

    per_namespace(
        controller,
        stop,
        "watch-streams",
        follow,
        namespaces=lambda: {ns for ns, _ in list(controller.images.streams)},
    )


def follow_streams_once(
    cluster: Cluster,
    namespace: str,
    version: str,
    seen: Callable[[StoredRecord], None],
    *,
    timeout_seconds: int,
    reached: Callable[[str], None] | None = None,
) -> str:
    """One watch of the stream states in ``namespace`` (:func:`~gitdeploy.controller.watcher.follow_once`):
    listed first without a ``version`` (a tag moved before the watch began is news too); a deleted
    state is not news (the next refresh writes it again)."""
    return follow_once(
        f"image stream watch of {namespace}",
        lambda: cluster.list_stream_states_at(namespace),
        lambda since: cluster.watch_stream_states(namespace, since, timeout_seconds=timeout_seconds),
        version,
        seen,
        reached=reached,
    )


__all__ = ["follow_streams_once", "watch_streams"]
