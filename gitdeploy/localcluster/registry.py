"""Object semantics of the embedded cluster: the verbs, on top of :mod:`store` and :mod:`simulation`.

This is where Kubernetes' rules meet: ``uid``, ``creationTimestamp``, the cluster-wide
``resourceVersion`` and optimistic concurrency (a stale one → 409), ``generation`` bumped on spec
changes only, status and scale subresources, validation (422), owner references and garbage
collection, and the hooks that run the simulated ReplicaSet controller and kubelet. The registry
parses each verb's request and holds its transaction; what a write does to an object is
lifecycle.py's (its rules strategy.py's, the scale subresource scale.py's, the collector
garbage.py's), and each write first fires, in its own transaction, the simulation's timers that
are due (timers.py: the ReplicaSet controller's look after the previous write among them); reads
fire them in one transaction of their own (:meth:`Registry.materialise`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gitdeploy.clock import Clock
from gitdeploy.localcluster import podsecurity, simulation
from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.config import SimulationConfig
from gitdeploy.localcluster.lifecycle import Admission, ObjectLifecycle
from gitdeploy.localcluster.patch import PatchError, apply_patch
from gitdeploy.localcluster.resources import NAMESPACES, PODS, REPLICASETS, ResourceType
from gitdeploy.localcluster.scale import scale_of
from gitdeploy.localcluster.store import Store, Txn
from gitdeploy.localcluster.timers import DueTimers

__all__ = ["DEFAULT_NAMESPACES", "Admission", "Registry"]

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_PROPAGATION = ("Orphan", "Background", "Foreground")


class Registry:
    """The verbs of the API on one :class:`Store`, with time from ``clock``."""

    def __init__(self, store: Store, clock: Clock, config: SimulationConfig) -> None:
        self.store = store
        self.clock = clock
        self._objects = ObjectLifecycle(config)
        self._timers = DueTimers(self._objects)

    @property
    def config(self) -> SimulationConfig:
        """The simulation knobs (may be replaced while the cluster runs)."""
        return self._objects.config

    @config.setter
    def config(self, config: SimulationConfig) -> None:
        self._objects.config = config

    @property
    def write_synced(self) -> Callable[[], None]:
        """Called after a write committed that left the ReplicaSet controller something to look
        at (the server wakes its kubelet thread)."""
        return self._objects.write_synced

    @write_synced.setter
    def write_synced(self, wake: Callable[[], None]) -> None:
        self._objects.write_synced = wake

    # -- bootstrap and time ----------------------------------------------------------------------

    def bootstrap(self) -> None:
        """Create the namespaces every cluster has."""
        now = self.clock.now()
        with self.store.write() as txn:
            for name in DEFAULT_NAMESPACES:
                if not txn.exists(NAMESPACES.key, "", name):
                    self._objects.insert(txn, NAMESPACES, {"metadata": {"name": name}}, now)

    def materialise(self, now: float | None = None) -> int:
        """Apply every simulation transition due by ``now``; returns how many timers fired."""
        at = self.clock.now() if now is None else now
        if self._timers.idle:  # no look after a write pending in memory: are timers due?
            with self.store.read(snapshot=False) as txn:
                due = txn.next_due()
            if due is None or due > at:
                return 0
        with self.store.write() as txn:
            return self._timers.settle(txn, at)

    def next_transition_in(self) -> float | None:
        """Seconds until the next simulation transition is due by the clock (the looks after
        writes aside); None when none is pending."""
        with self.store.read(snapshot=False) as txn:
            due = txn.next_due(besides=simulation.RS_WRITTEN)
        return None if due is None else due - self.clock.now()

    # -- reads -----------------------------------------------------------------------------------

    def get(self, resource: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        with self.store.read(snapshot=False) as txn:
            obj = txn.get(resource.key, namespace, name)
        if obj is None:
            raise ApiError.not_found(resource.qualified, name)
        return obj

    def get_scale(self, namespace: str, name: str) -> dict[str, Any]:
        return scale_of(self.get(REPLICASETS, namespace, name))

    def pod_log(self, namespace: str, name: str) -> str:
        return simulation.pod_log(self.get(PODS, namespace, name), self.config)

    # -- writes ----------------------------------------------------------------------------------

    def create(
        self, resource: ResourceType, namespace: str, body: Any, admit: Admission | None = None
    ) -> dict[str, Any]:
        obj = self._body_object(resource, body)
        meta = obj["metadata"]
        if resource.namespaced:
            if meta.get("namespace") not in (None, "", namespace):
                raise ApiError.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{simulation.random_suffix()}"
        now = self.clock.now()
        with self.store.write() as txn:
            self._timers.settle(txn, now)
            if resource is PODS:
                podsecurity.admit_pod(txn.get(NAMESPACES.key, "", namespace), obj)
            if admit is not None:
                admit(obj, None)
            return self._objects.insert(txn, resource, obj, now)

    def replace(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        subresource: str = "",
        admit: Admission | None = None,
    ) -> dict[str, Any]:
        now = self.clock.now()
        with self.store.write() as txn:
            self._timers.settle(txn, now)
            current = self._current(txn, resource, namespace, name)
            if subresource == "scale":
                return self._objects.apply_scale(txn, current, self._plain(body), now)
            body = self._body_object(resource, body)
            return self._objects.update(txn, resource, current, body, subresource, now, admit)

    def patch(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        body: Any,
        subresource: str = "",
        admit: Admission | None = None,
    ) -> dict[str, Any]:
        now = self.clock.now()
        with self.store.write() as txn:
            self._timers.settle(txn, now)
            current = self._current(txn, resource, namespace, name)
            # the patch functions never change their input: the stored object is the base as it is
            base = scale_of(current) if subresource == "scale" else current
            try:
                patched = apply_patch(content_type, base, body)
            except PatchError as problem:
                raise ApiError(422, "Invalid", f"the patch cannot be applied: {problem}") from problem
            if not isinstance(patched, dict):
                raise ApiError(422, "Invalid", "the patch does not produce an object")
            if subresource == "scale":
                return self._objects.apply_scale(txn, current, patched, now)
            return self._objects.update(txn, resource, current, patched, subresource, now, admit)

    def delete(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        options: dict[str, Any] | None = None,
        propagation: str | None = None,
    ) -> dict[str, Any]:
        options = options or {}
        policy = propagation or options.get("propagationPolicy") or "Background"
        if options.get("orphanDependents") is True and not propagation:
            policy = "Orphan"
        if policy not in _PROPAGATION:
            raise ApiError.bad_request(f"unknown propagationPolicy {policy!r}")
        now = self.clock.now()
        with self.store.write() as txn:
            self._timers.settle(txn, now)
            current = self._current(txn, resource, namespace, name)
            preconditions = options.get("preconditions") or {}
            if preconditions.get("uid") and preconditions["uid"] != current["metadata"]["uid"]:
                raise ApiError.conflict(
                    resource.qualified, name, "Precondition failed: UID in precondition does not match"
                )
            wanted_rv = preconditions.get("resourceVersion")
            if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
                raise ApiError.conflict(resource.qualified, name)
            grace = simulation.grace_period_seconds(current, options) if resource is PODS else 0
            if grace:
                return self._objects.terminate(txn, current, grace, now, reconcile=True)
            return self._objects.remove(txn, resource, current, policy, now, reconcile=True)

    def delete_collection(
        self, resource: ResourceType, namespace: str | None, selected: Callable[[dict[str, Any]], bool]
    ) -> list[dict[str, Any]]:
        """Delete every object of ``resource`` (in ``namespace``, if given) for which ``selected`` is true."""
        now = self.clock.now()
        deleted = []
        with self.store.write() as txn:
            self._timers.settle(txn, now)
            for _ns, _name, _labels, body in txn.list_raw(resource.key, namespace):
                obj = json.loads(body)
                if selected(obj):
                    current = txn.get(resource.key, _ns, _name)
                    if current is None:
                        continue
                    grace = simulation.grace_period_seconds(current, {}) if resource is PODS else 0
                    if grace:
                        deleted.append(self._objects.terminate(txn, current, grace, now, reconcile=True))
                    else:
                        deleted.append(
                            self._objects.remove(txn, resource, current, "Background", now, reconcile=True)
                        )
        return deleted

    # -- internals -------------------------------------------------------------------------------

    @staticmethod
    def _plain(body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise ApiError.bad_request("the request body must be a JSON object")
        return body

    def _body_object(self, resource: ResourceType, body: Any) -> dict[str, Any]:
        """The request body as the object to store: it is changed in place (bodies are decoded
        for each request, and callers in process give theirs up)."""
        obj = self._plain(body)
        if obj.get("kind") not in (None, "", resource.kind):
            raise ApiError.bad_request(f"expected kind {resource.kind}, got {obj.get('kind')}")
        obj["kind"] = resource.kind
        obj["apiVersion"] = resource.api_version
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise ApiError.bad_request("metadata must be an object")
        meta.pop("managedFields", None)
        return obj

    @staticmethod
    def _current(txn: Txn, resource: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        current = txn.get(resource.key, namespace, name)
        if current is None:
            raise ApiError.not_found(resource.qualified, name)
        return current
