"""Watch a namespace's pods on the real cluster and keep the figures the rollout bounds are about.

A pod counts from the moment it exists until it is gone: a Terminating pod still runs its
containers for its grace period, so it counts against maxSurge when the app's
``podReplacementPolicy`` is ``TerminationComplete`` and, in Recreate, as an old pod still running.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch


@dataclass
class PodState:
    labels: dict[str, str]
    ready: bool
    terminating: bool


@dataclass
class PodWatch:
    """Every change to the namespace's pods, applied in order; ``check`` runs after each one."""

    namespace: str
    kubeconfig: Path
    check: Callable[[dict[str, Any]], None] | None = None
    pods: dict[str, Any] = field(default_factory=dict)
    """Each pod's :class:`PodState` by name (a :class:`ReplicaSetWatch`: each one's replicas)."""
    failures: list[str] = field(default_factory=list)
    events: int = 0
    watch_seconds: int = 5
    """How long one watch request lasts; leaving the ``with`` block waits for the current one to end."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> PodWatch:
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(self.kubeconfig), client_configuration=configuration)  # type: ignore[no-untyped-call]
        self._api = client.ApiClient(configuration)
        self._relist()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            stream = watch.Watch()  # type: ignore[no-untyped-call]
            try:
                for event in stream.stream(  # type: ignore[no-untyped-call]
                    self._lister(),
                    self.namespace,
                    resource_version=self._version,
                    timeout_seconds=self.watch_seconds,
                    allow_watch_bookmarks=True,
                ):
                    self._apply(event)
                    if self._stop.is_set():
                        break
            except Exception as bad:
                self.failures.append(f"pod watch failed: {bad}")
                return

    def _relist(self) -> None:
        """After a 410 Gone: the current pods, and a watch from the list's resourceVersion."""
        listed: Any = self._lister()(self.namespace)
        with self._lock:
            self.pods = {item.metadata.name: self._state(item) for item in listed.items}
        self._version = listed.metadata.resource_version

    def _apply(self, event: dict[str, Any]) -> None:
        if event["type"] == "ERROR":  # 410 Gone: the object is a Status, not a pod
            self._relist()
            return
        pod = event["object"]
        if isinstance(pod, dict):  # a BOOKMARK: only its resourceVersion is set
            self._version = pod.get("metadata", {}).get("resourceVersion", self._version)
            return
        self._version = pod.metadata.resource_version
        if event["type"] == "BOOKMARK":
            return
        with self._lock:
            if event["type"] == "DELETED":
                self.pods.pop(pod.metadata.name, None)
            else:
                self.pods[pod.metadata.name] = self._state(pod)
            self.events += 1
            if self.check:
                try:
                    self.check(dict(self.pods))
                except AssertionError as broken:
                    self.failures.append(str(broken))

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return dict(self.pods)

    def _lister(self) -> Callable[..., Any]:
        return client.CoreV1Api(self._api).list_namespaced_pod

    def _state(self, pod: Any) -> Any:
        conditions = pod.status.conditions or []
        ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
        return PodState(dict(pod.metadata.labels or {}), ready, pod.metadata.deletion_timestamp is not None)


class ReplicaSetWatch(PodWatch):
    """The same for the namespace's ReplicaSets; each one's state is its ``spec.replicas``."""

    def _lister(self) -> Callable[..., Any]:
        return client.AppsV1Api(self._api).list_namespaced_replica_set

    def _state(self, replica_set: Any) -> Any:
        return int(replica_set.spec.replicas or 0)
