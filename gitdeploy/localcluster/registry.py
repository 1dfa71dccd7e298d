"""Object semantics of the embedded cluster: the verbs, on top of :mod:`store` and :mod:`simulation`.

This is where Kubernetes' rules live: ``uid``, ``creationTimestamp``, the cluster-wide
``resourceVersion`` and optimistic concurrency (a stale one → 409), ``generation`` bumped on spec
changes only, status and scale subresources, validation (422, in :mod:`validation`), owner
references and garbage collection, and the hooks that run the simulated ReplicaSet controller and
kubelet: each write first fires, in its own transaction, the simulation's timers that are due
(the ReplicaSet controller's look after the previous write among them); reads fire them in one
transaction of their own (:meth:`Registry.materialise`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from gitdeploy.clock import Clock
from gitdeploy.localcluster import garbage, podsecurity, simulation
from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.config import SimulationConfig
from gitdeploy.localcluster.defaults import with_defaults
from gitdeploy.localcluster.patch import PatchError, apply_patch
from gitdeploy.localcluster.resources import (
    CORE_EVENTS,
    NAMESPACES,
    PODS,
    REPLICASETS,
    RESOURCES,
    ResourceType,
)
from gitdeploy.localcluster.selectors import label_selector_from_object, label_selector_to_string
from gitdeploy.localcluster.store import Store, Timer, Txn
from gitdeploy.localcluster.validation import validate, validate_update

__all__ = ["DEFAULT_NAMESPACES", "Admission", "Registry"]

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_PROPAGATION = ("Orphan", "Background", "Foreground")
Admission = Callable[[dict[str, Any], dict[str, Any] | None], None]
"""A check of the request's own (its user's) on the object to store and the one it replaces (None
on a create): raises the API server's refusal."""
_SETTLE_ROUNDS = 64
"""At most this many rounds of timers that fire timers due at once, per transaction."""


class Registry:
    """The verbs of the API on one :class:`Store`, with time from ``clock``."""

    def __init__(self, store: Store, clock: Clock, config: SimulationConfig) -> None:
        self.store = store
        self.clock = clock
        self.config = config
        self.write_synced: Callable[[], None] = lambda: None
        """Called after a write committed that left the ReplicaSet controller something to look
        at (the server wakes its kubelet thread)."""

    # -- bootstrap and time ----------------------------------------------------------------------

    def bootstrap(self) -> None:
        """Create the namespaces every cluster has."""
        now = self.clock.now()
        with self.store.write() as txn:
            for name in DEFAULT_NAMESPACES:
                if not txn.exists(NAMESPACES.key, "", name):
                    self._insert(txn, NAMESPACES, {"metadata": {"name": name}}, now)

    def materialise(self, now: float | None = None) -> int:
        """Apply every simulation transition due by ``now``; returns how many timers fired."""
        at = self.clock.now() if now is None else now
        with self.store.read(snapshot=False) as txn:
            due = txn.next_due()
        if due is None or due > at:
            return 0
        with self.store.write() as txn:
            return self._settle(txn, at)

    def _settle(self, txn: Txn, at: float) -> int:
        """Fire the timers due by ``at`` in ``txn``, and those that firing them adds due by
        then; returns how many fired. Every write does so first,
        so that the ReplicaSet controller's look after one write shares the next write's
        transaction. A ReplicaSet is looked at as of the latest timer that named it (the look
        after a write as of the write), so that pods it makes start when due after it."""
        fired = 0
        for _ in range(_SETTLE_ROUNDS):
            txn.earliest_timer = None
            timers = txn.pop_due(at)
            fired += len(timers)
            # each ReplicaSet whose pods moved is looked at once, after all of them (pods started
            # together become ready together: one status write, not one per pod)
            replicasets: dict[str, float] = {}
            for timer in timers:
                for uid in self._fire(txn, timer, at):
                    replicasets[uid] = max(replicasets.get(uid, timer.due), timer.due)
            for uid, when in replicasets.items():
                found = txn.get_by_uid(uid)
                if found is not None and found[0] == REPLICASETS.key:
                    self._reconcile_replicaset(txn, found[1], when)
            if txn.earliest_timer is None or txn.earliest_timer > at:
                break
        return fired

    def next_transition_in(self) -> float | None:
        """Seconds until the next simulation transition is due by the clock (the looks after
        writes aside); None when none is pending."""
        with self.store.read(snapshot=False) as txn:
            due = txn.next_due(besides=simulation.RS_WRITTEN)
        return None if due is None else due - self.clock.now()

    def _fire(self, txn: Txn, timer: Timer, now: float) -> list[str]:
        """Apply one transition; returns the uids of the ReplicaSets to look at for it."""
        if timer.action in (simulation.RS_SYNC, simulation.RS_WRITTEN):
            return [timer.uid]
        if timer.action == garbage.COLLECT:
            self._collect(txn, timer, now)
            return []
        pod = txn.get(timer.resource, timer.namespace, timer.name)
        if pod is None or pod["metadata"]["uid"] != timer.uid:
            return []
        if timer.action == simulation.GONE:
            txn.delete(PODS.key, pod)
            self._collect_dependents(txn, pod["metadata"]["uid"], "Background", now)
            return self._controllers_of(pod)
        if simulation.is_terminating(pod):
            return []  # its containers are being stopped: no start, no completion
        pod["status"] = simulation.pod_transition(pod, timer.action, timer.due, self.config)
        txn.put(PODS.key, pod, "MODIFIED", owners_changed=False)
        if timer.action == simulation.STOP and pod["status"].get("phase") == "Succeeded":
            self._act_as_custom_deployer(txn, pod, now)
        return self._controllers_of(pod)

    @staticmethod
    def _controllers_of(pod: dict[str, Any]) -> list[str]:
        """The uids of the ReplicaSets that control ``pod`` (one at most)."""
        return [
            str(ref.get("uid"))
            for ref in pod["metadata"].get("ownerReferences") or []
            if ref.get("controller") and ref.get("kind") == "ReplicaSet"
        ]

    def _act_as_custom_deployer(self, txn: Txn, pod: dict[str, Any], now: float) -> None:
        """A stand-in for a Custom strategy's deployer image, which cannot run here.

        A finished pod that names a deployment in ``GITDEPLOY_DEPLOYMENT_NAME`` (a gitdeploy
        deployer pod) did what a simple deployer does: scaled that ReplicaSet to the app's replicas
        (its ``gitdeploy.io/desired-replicas`` annotation) and the app's other ReplicaSets to 0.
        """
        target = simulation.custom_deployment_target(pod)
        if target is None:
            return
        namespace, name = target
        replicaset = txn.get(REPLICASETS.key, namespace, name)
        if replicaset is None:
            return
        app = (replicaset["metadata"].get("labels") or {}).get(simulation.APP_LABEL)
        annotations = replicaset["metadata"].get("annotations") or {}
        desired = str(annotations.get(simulation.DESIRED_REPLICAS_ANNOTATION, ""))
        wanted_size = int(desired) if desired.isdigit() else 1
        for _ns, other_name, _labels, body in txn.list_raw(REPLICASETS.key, namespace):
            other = json.loads(body)
            if (other["metadata"].get("labels") or {}).get(simulation.APP_LABEL) != app:
                continue
            wanted = wanted_size if other_name == name else 0
            if (other.get("spec") or {}).get("replicas") != wanted:
                self._apply_scale(txn, other, {"spec": {"replicas": wanted}}, now)

    # -- reads -----------------------------------------------------------------------------------

    def get(self, resource: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        with self.store.read(snapshot=False) as txn:
            obj = txn.get(resource.key, namespace, name)
        if obj is None:
            raise ApiError.not_found(resource.qualified, name)
        return obj

    def get_scale(self, namespace: str, name: str) -> dict[str, Any]:
        return self._scale_of(self.get(REPLICASETS, namespace, name))

    def pod_log(self, namespace: str, name: str) -> str:
        return simulation.pod_log(self.get(PODS, namespace, name), self.config)

    @staticmethod
    def _scale_of(replicaset: dict[str, Any]) -> dict[str, Any]:
        meta = replicaset["metadata"]
        spec = replicaset.get("spec") or {}
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                "name": meta["name"],
                "namespace": meta.get("namespace", ""),
                "uid": meta["uid"],
                "resourceVersion": meta["resourceVersion"],
                "creationTimestamp": meta.get("creationTimestamp"),
            },
            "spec": {"replicas": spec.get("replicas", 1)},
            "status": {
                "replicas": (replicaset.get("status") or {}).get("replicas", 0),
                "selector": label_selector_to_string(label_selector_from_object(spec.get("selector"))),
            },
        }

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
            self._settle(txn, now)
            if resource is PODS:
                podsecurity.admit_pod(txn.get(NAMESPACES.key, "", namespace), obj)
            if admit is not None:
                admit(obj, None)
            return self._insert(txn, resource, obj, now)

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
            self._settle(txn, now)
            current = self._current(txn, resource, namespace, name)
            if subresource == "scale":
                return self._apply_scale(txn, current, self._plain(body), now)
            body = self._body_object(resource, body)
            return self._update(txn, resource, current, body, subresource, now, admit)

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
            self._settle(txn, now)
            current = self._current(txn, resource, namespace, name)
            # the patch functions never change their input: the stored object is the base as it is
            base = self._scale_of(current) if subresource == "scale" else current
            try:
                patched = apply_patch(content_type, base, body)
            except PatchError as problem:
                raise ApiError(422, "Invalid", f"the patch cannot be applied: {problem}") from problem
            if not isinstance(patched, dict):
                raise ApiError(422, "Invalid", "the patch does not produce an object")
            if subresource == "scale":
                return self._apply_scale(txn, current, patched, now)
            return self._update(txn, resource, current, patched, subresource, now, admit)

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
            self._settle(txn, now)
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
                return self._terminate(txn, current, grace, now, reconcile=True)
            return self._remove(txn, resource, current, policy, now, reconcile=True)

    def delete_collection(
        self, resource: ResourceType, namespace: str | None, selected: Callable[[dict[str, Any]], bool]
    ) -> list[dict[str, Any]]:
        """Delete every object of ``resource`` (in ``namespace``, if given) for which ``selected`` is true."""
        now = self.clock.now()
        deleted = []
        with self.store.write() as txn:
            self._settle(txn, now)
            for _ns, _name, _labels, body in txn.list_raw(resource.key, namespace):
                obj = json.loads(body)
                if selected(obj):
                    current = txn.get(resource.key, _ns, _name)
                    if current is None:
                        continue
                    grace = simulation.grace_period_seconds(current, {}) if resource is PODS else 0
                    if grace:
                        deleted.append(self._terminate(txn, current, grace, now, reconcile=True))
                    else:
                        deleted.append(
                            self._remove(txn, resource, current, "Background", now, reconcile=True)
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

    def _insert(
        self,
        txn: Txn,
        resource: ResourceType,
        obj: dict[str, Any],
        now: float,
        *,
        by_controller: bool = False,
    ) -> dict[str, Any]:
        """Create ``obj``. ``by_controller``: the ReplicaSet controller made it (a pod from a
        stored template, an event) under a name it chose free, in the namespace of an object it
        read: it has the defaults, is valid and needs no reconciliation after it."""
        if not by_controller:
            obj = self._admitted(txn, resource, obj)
        obj["kind"] = resource.kind
        obj["apiVersion"] = resource.api_version
        meta = obj["metadata"]
        name = meta["name"]
        namespace = str(meta.get("namespace") or "")
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = simulation.format_time(now)
        for transient in ("deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            meta.pop(transient, None)
        if resource is REPLICASETS:
            meta["generation"] = 1
            obj["status"] = {"replicas": 0}
        elif resource is NAMESPACES:
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj["status"] = {"phase": "Active"}
        elif resource is PODS:
            obj.setdefault("spec", {}).setdefault("restartPolicy", "Always")
            obj["spec"].setdefault("nodeName", simulation.NODE_NAME)
            obj["status"] = simulation.initial_pod_status(obj, now)
            for due, action in simulation.pod_timers(obj, self.config, now):
                txn.add_timer(Timer(due, PODS.key, namespace, name, meta["uid"], action))
        txn.put(resource.key, obj, "ADDED")
        self._collect_later_if_dangling(txn, resource, obj, now)
        if not by_controller:
            # the answer is the object as created; reconciliation writes its own versions
            self._after_write(txn, resource, {**obj, "metadata": dict(meta)}, now)
        return obj

    @staticmethod
    def _admitted(txn: Txn, resource: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` with its defaults, as a create may store it: else 422, 400, 404 or 409."""
        obj = with_defaults(resource, obj)
        meta = obj["metadata"]
        name = str(meta.get("name") or "")
        if not name:
            raise ApiError.invalid(
                resource.kind,
                resource.group,
                "",
                [("metadata.name", "Required value: name or generateName is required")],
            )
        if meta.get("resourceVersion"):
            raise ApiError.bad_request("resourceVersion should not be set on objects to be created")
        validate(resource, obj)
        namespace = str(meta.get("namespace") or "")
        if resource.namespaced and not txn.exists(NAMESPACES.key, "", namespace):
            raise ApiError.not_found("namespaces", namespace)
        if txn.exists(resource.key, namespace, name):
            raise ApiError.already_exists(resource.qualified, name)
        return obj

    def _update(
        self,
        txn: Txn,
        resource: ResourceType,
        current: dict[str, Any],
        new: dict[str, Any],
        subresource: str,
        now: float,
        admit: Admission | None = None,
    ) -> dict[str, Any]:
        old_meta = current["metadata"]
        name = old_meta["name"]
        new_meta = new.setdefault("metadata", {})
        if not isinstance(new_meta, dict):
            raise ApiError.bad_request("metadata must be an object")
        # changed below: never the stored object's own (a patch shares what it leaves as it was)
        new["metadata"] = new_meta = dict(new_meta)
        if new_meta.get("name") not in (None, name):
            raise ApiError.bad_request(
                f"the name of the object ({new_meta.get('name')}) does not match the name on the URL ({name})"
            )
        wanted_rv = new_meta.get("resourceVersion")
        if wanted_rv and str(wanted_rv) != old_meta["resourceVersion"]:
            raise ApiError.conflict(resource.qualified, name)
        if subresource == "status":
            new = {**current, "metadata": dict(old_meta), "status": new.get("status")}
        else:
            new = _replacement(resource, current, new)
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if admit is not None:
            admit(new, current)
        refs = new["metadata"].get("ownerReferences")
        if new == current:
            return current
        owners_changed = refs != old_meta.get("ownerReferences")
        txn.put(resource.key, new, "MODIFIED", owners_changed=owners_changed)
        if owners_changed:
            self._collect_later_if_dangling(txn, resource, new, now)
        # reconciliation may change it again (status): the answer is the object as stored last
        self._after_write(txn, resource, new, now)
        return new

    def _apply_scale(
        self, txn: Txn, current: dict[str, Any], scale: dict[str, Any], now: float
    ) -> dict[str, Any]:
        meta = scale.get("metadata") or {}
        if (
            meta.get("resourceVersion")
            and str(meta["resourceVersion"]) != current["metadata"]["resourceVersion"]
        ):
            raise ApiError.conflict(REPLICASETS.qualified, current["metadata"]["name"])
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise ApiError.invalid(
                "Scale",
                "autoscaling",
                current["metadata"]["name"],
                [("spec.replicas", "must be greater than or equal to 0")],
            )
        new = {
            **current,
            "metadata": {k: v for k, v in current["metadata"].items() if k != "resourceVersion"},
            "spec": {**(current.get("spec") or {}), "replicas": replicas},
        }
        updated = self._update(txn, REPLICASETS, current, new, "", now)
        return self._scale_of(updated)

    def _remove(
        self,
        txn: Txn,
        resource: ResourceType,
        obj: dict[str, Any],
        policy: str,
        now: float,
        *,
        reconcile: bool,
    ) -> dict[str, Any]:
        meta = obj["metadata"]
        if resource is NAMESPACES:
            for other in RESOURCES:
                if other.namespaced:
                    for _ns, name, _labels, _body in txn.list_raw(other.key, meta["name"]):
                        inner = txn.get(other.key, meta["name"], name)
                        if inner is not None:
                            self._remove(txn, other, inner, "Background", now, reconcile=False)
        removed = txn.delete(resource.key, obj)
        self._collect_dependents(txn, meta["uid"], policy, now)
        if reconcile and resource is PODS:
            self._after_write(txn, resource, obj, now)
        return removed

    def _terminate(
        self, txn: Txn, pod: dict[str, Any], grace: int, now: float, *, reconcile: bool
    ) -> dict[str, Any]:
        """Graceful deletion: the pod gets its ``deletionTimestamp`` and is removed ``grace``
        seconds later (a second delete of a terminating pod changes nothing)."""
        meta = pod["metadata"]
        if simulation.is_terminating(pod):
            return pod
        meta["deletionTimestamp"] = simulation.format_time(now + grace)
        meta["deletionGracePeriodSeconds"] = grace
        txn.put(PODS.key, pod, "MODIFIED", owners_changed=False)
        txn.add_timer(
            Timer(
                now + grace, PODS.key, meta.get("namespace", ""), meta["name"], meta["uid"], simulation.GONE
            )
        )
        if reconcile:
            self._after_write(txn, PODS, pod, now)
        return pod

    def _collect_dependents(self, txn: Txn, owner_uid: str, policy: str, now: float) -> None:
        """Garbage collection of an owner's dependents: orphaned at once (``Orphan``), else looked
        at by the collector at its next tick (see garbage.py)."""
        for key, dependent in txn.dependents(owner_uid):
            if policy != "Orphan":
                garbage.schedule_collection(txn, key, dependent, now)
                continue
            refs = dependent["metadata"].get("ownerReferences") or []
            remaining = [r for r in refs if r.get("uid") != owner_uid]
            dependent["metadata"]["ownerReferences"] = remaining
            if not remaining:
                dependent["metadata"].pop("ownerReferences")
            txn.put(key, dependent, "MODIFIED")

    def _collect_later_if_dangling(
        self, txn: Txn, resource: ResourceType, obj: dict[str, Any], now: float
    ) -> None:
        """An object written with an owner reference that dangles is the collector's, a moment later."""
        if obj["metadata"].get("ownerReferences") and garbage.split_references(txn, obj)[1]:
            garbage.schedule_collection(txn, resource.key, obj, now)

    def _collect(self, txn: Txn, timer: Timer, now: float) -> None:
        """The collector's look at one object: deleted when all its owners are gone (its own
        dependents follow at the next tick), else rid of the references that dangle."""
        obj = txn.get(timer.resource, timer.namespace, timer.name)
        if obj is None or obj["metadata"]["uid"] != timer.uid:
            return
        solid, dangling = garbage.split_references(txn, obj)
        if not dangling:
            return
        if solid:
            obj["metadata"]["ownerReferences"] = solid
            txn.put(timer.resource, obj, "MODIFIED")
            return
        resource = next(r for r in RESOURCES if r.key == timer.resource)
        self._remove(txn, resource, obj, "Background", now, reconcile=False)

    def _after_write(self, txn: Txn, resource: ResourceType, obj: dict[str, Any], now: float) -> None:
        """Have the ReplicaSet controller look at the ReplicaSet this write concerns a moment
        after it, as the real one does: a timer due now, which the next write fires in its own
        transaction first, or the next read, or the server's kubelet thread a moment later when
        no write came (see kubelet.py); the write's answer has the old status."""
        if resource is REPLICASETS:
            # a write that left the spec as its controller last saw it (annotations) changes no status
            if (obj.get("status") or {}).get("observedGeneration") != obj["metadata"].get("generation"):
                self._sync_later(txn, obj, now)
        elif resource is PODS:
            for ref in obj["metadata"].get("ownerReferences") or []:
                if ref.get("controller") and ref.get("kind") == "ReplicaSet":
                    found = txn.get_by_uid(str(ref.get("uid")))
                    if found is not None and found[0] == REPLICASETS.key:
                        self._sync_later(txn, found[1], now)

    def _sync_later(self, txn: Txn, replicaset: dict[str, Any], now: float) -> None:
        meta = replicaset["metadata"]
        namespace = meta.get("namespace", "")
        txn.add_timer(
            Timer(now, REPLICASETS.key, namespace, meta["name"], meta["uid"], simulation.RS_WRITTEN)
        )
        if self.write_synced not in txn.after_commit:
            txn.after_commit.append(self.write_synced)

    def _reconcile_replicaset(self, txn: Txn, replicaset: dict[str, Any], now: float) -> None:
        meta = replicaset["metadata"]
        namespace = meta.get("namespace", "")
        pods = txn.controlled(meta["uid"], PODS.key)
        plan = simulation.plan_replicaset(replicaset, pods, now)
        for _ in range(plan.create):
            pod = simulation.new_pod_for(replicaset, f"{meta['name']}-{simulation.random_suffix()}")
            while txn.exists(PODS.key, namespace, pod["metadata"]["name"]):
                pod["metadata"]["name"] = f"{meta['name']}-{simulation.random_suffix()}"
            self._insert(txn, PODS, pod, now, by_controller=True)
            self._record_event(
                txn, replicaset, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}", now
            )
        for pod in plan.delete:
            grace = simulation.grace_period_seconds(pod, {})
            if grace:
                self._terminate(txn, pod, grace, now, reconcile=False)
            else:
                self._remove(txn, PODS, pod, "Background", now, reconcile=False)
            self._record_event(
                txn, replicaset, "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}", now
            )
        if plan.status != replicaset.get("status"):
            replicaset["status"] = plan.status
            txn.put(REPLICASETS.key, replicaset, "MODIFIED", owners_changed=False)
        if plan.recheck_at is not None:
            txn.add_timer(
                Timer(
                    plan.recheck_at, REPLICASETS.key, namespace, meta["name"], meta["uid"], simulation.RS_SYNC
                )
            )

    def _record_event(self, txn: Txn, about: dict[str, Any], reason: str, message: str, now: float) -> None:
        meta = about["metadata"]
        namespace = meta.get("namespace", "") or "default"
        event = {
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "involvedObject": {
                "kind": about.get("kind", ""),
                "namespace": namespace,
                "name": meta["name"],
                "uid": meta["uid"],
                "apiVersion": about.get("apiVersion", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": reason,
            "message": message,
            "source": {"component": "replicaset-controller"},
            "firstTimestamp": simulation.format_time(now),
            "lastTimestamp": simulation.format_time(now),
            "count": 1,
            "type": "Normal",
            "reportingComponent": "replicaset-controller",
            "reportingInstance": "",
        }
        self._insert(txn, CORE_EVENTS, event, now, by_controller=True)


def _replacement(resource: ResourceType, current: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` (its metadata a copy) as an update of ``current`` stores it: kind and apiVersion of
    the resource, the current status, the metadata the server owns kept, defaults applied, the
    generation bumped when the spec changed; refused if it changes what may not change."""
    old_meta, new_meta = current["metadata"], new["metadata"]
    new["kind"] = resource.kind
    new["apiVersion"] = resource.api_version
    if resource.has_status:
        if "status" in current:
            new["status"] = current["status"]
        else:
            new.pop("status", None)
    for immutable in ("uid", "creationTimestamp", "namespace", "name", "generation", "deletionTimestamp"):
        if immutable in old_meta:
            new_meta[immutable] = old_meta[immutable]
        else:
            new_meta.pop(immutable, None)
    new_meta.pop("managedFields", None)
    new = with_defaults(resource, new, current)
    if "generation" in old_meta and new.get("spec") != current.get("spec"):
        new["metadata"]["generation"] = int(old_meta["generation"]) + 1
    validate_update(resource, current, new)
    return new
