"""Notice app-record changes made outside the loop (``gitdeploy rollback``, ``gitdeploy deploy``).

A settled app is otherwise re-examined only when its manifest changes or at the periodic resync,
so without this a rollback made from a laptop would wait minutes for ``gitdeploy run``. One watch
on the record ConfigMaps (per namespace filter, or cluster-wide) feeds
:meth:`Controller.notice`; the loop's own writes are recognised by their resourceVersion and
ignored. The watch costs no request per poll, so a poll with nothing new still makes none.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from gitdeploy.controller.loop import Controller
from gitdeploy.core.models import AppKey
from gitdeploy.errors import GitdeployError

log = logging.getLogger("gitdeploy.watch")


def watch_records(controller: Controller, stop: threading.Event, on_notice: Callable[[], None]) -> None:
    """Follow record changes until ``stop``; restart the watch when the server ends it."""
    namespaces: list[str | None] = [*sorted(controller.namespaces)] or [None]
    threads = [
        threading.Thread(
            target=_follow, args=(controller, ns, stop, on_notice), name=f"watch-records-{ns}", daemon=True
        )
        for ns in namespaces
    ]
    for thread in threads:
        thread.start()


def _follow(
    controller: Controller, namespace: str | None, stop: threading.Event, on_notice: Callable[[], None]
) -> None:
    version = ""
    while not stop.is_set():
        try:
            for kind, stored in controller.cluster.watch_app_records(namespace, version, timeout_seconds=60):
                version = stored.resource_version or version
                if kind == "DELETED" or stop.is_set():
                    continue
                if controller.notice(AppKey(stored.namespace, stored.app), stored.resource_version):
                    on_notice()
        except GitdeployError as problem:
            version = ""  # resourceVersion too old, or the API hiccupped: start from the current state
            log.debug("record watch restarts: %s", problem)
            stop.wait(1.0)


__all__ = ["watch_records"]
