"""Notice app-record changes made outside the loop (``gitdeploy rollback``, ``gitdeploy deploy``).

A settled app is otherwise re-examined only when its manifest changes or at the periodic resync,
so without this a rollback made from a laptop would wait minutes for ``gitdeploy run``. One watch
per namespace on the record ConfigMaps feeds
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
    """Follow record changes until ``stop``: one watch per namespace gitdeploy deploys to (its RBAC
    is per namespace, so never a cluster-wide watch), started as apps appear in new namespaces."""

    def supervise() -> None:
        watched: set[str] = set()
        while not stop.is_set():
            wanted = set(controller.namespaces) or {key.namespace for key in list(controller.apps)}
            for namespace in sorted(wanted - watched):
                threading.Thread(
                    target=_follow,
                    args=(controller, namespace, stop, on_notice),
                    name=f"watch-records-{namespace}",
                    daemon=True,
                ).start()
                watched.add(namespace)
            stop.wait(2.0)

    threading.Thread(target=supervise, name="watch-records", daemon=True).start()


def _follow(
    controller: Controller, namespace: str, stop: threading.Event, on_notice: Callable[[], None]
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
