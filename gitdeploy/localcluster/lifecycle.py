"""What a write does to one object inside a transaction: create, update, scale, remove, terminate.

Each write stores the object as the API server does (its strategy in strategy.py), leaves the
garbage collector what it must look at (garbage.py), and leaves the ReplicaSet controller a look
at the ReplicaSet it concerns, a moment after it (see :meth:`ObjectLifecycle._after_write`).

The look after a write of a ReplicaSet is kept in the writing process's memory
(:attr:`ObjectLifecycle.pending_looks`), not as a row of the timers table: the write's stored
ReplicaSet marks it durably already, its ``status.observedGeneration`` being behind its
``metadata.generation`` until the look, so a process that opens the database (after a crash of
the one that wrote, say) looks at every ReplicaSet so marked first (see timers.py). The look also
reads the ReplicaSet as the write stored it, when the stored one is still that version.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from gitdeploy.localcluster import garbage, simulation
from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.config import SimulationConfig
from gitdeploy.localcluster.resources import NAMESPACES, PODS, REPLICASETS, RESOURCES, ResourceType
from gitdeploy.localcluster.scale import scale_of, scaled_replicaset
from gitdeploy.localcluster.store import Look, Timer, Txn
from gitdeploy.localcluster.strategy import prepare_for_create, prepare_for_update

__all__ = ["Admission", "ObjectLifecycle", "new_uid"]

Admission = Callable[[dict[str, Any], dict[str, Any] | None], None]
"""A check of the request's own (its user's) on the object to store and the one it replaces (None
on a create): raises the API server's refusal."""


def new_uid() -> str:
    """A new object's uid: a random (version 4) UUID, as ``str(uuid.uuid4())`` gives, made
    without the ``UUID`` object (which cost more than the rest of storing a small object)."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40  # version 4
    raw[8] = raw[8] & 0x3F | 0x80  # the RFC 4122 variant
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


class ObjectLifecycle:
    """The writes of objects inside a transaction, with the simulation knobs of ``config``."""

    def __init__(self, config: SimulationConfig) -> None:
        self.config = config
        self.write_synced: Callable[[], None] = lambda: None
        """Called after a write committed that left the ReplicaSet controller something to look
        at (the server wakes its kubelet thread)."""
        self.pending_looks: dict[tuple[str, str], Look] = {}
        """The looks after writes of ReplicaSets that this process committed and no transaction
        took yet, by (namespace, name); changed only by a commit, holding the store's write lock."""

    def insert(
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
            obj = prepare_for_create(txn, resource, obj)
        obj["kind"] = resource.kind
        obj["apiVersion"] = resource.api_version
        meta = obj["metadata"]
        name = meta["name"]
        namespace = str(meta.get("namespace") or "")
        meta["uid"] = new_uid()
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
        if not by_controller:  # the controller's pods are owned by the ReplicaSet it just read
            garbage.collect_later_if_dangling(txn, resource, obj, now)
            # the answer is the object as created; reconciliation writes its own versions
            self._after_write(txn, resource, {**obj, "metadata": dict(meta)}, now)
        return obj

    def update(
        self,
        txn: Txn,
        resource: ResourceType,
        current: dict[str, Any],
        new: dict[str, Any],
        subresource: str,
        now: float,
        admit: Admission | None = None,
    ) -> dict[str, Any]:
        """Store ``new`` in place of ``current`` (only its status for the ``status`` subresource):
        400, 409 or 422 if it may not; ``current`` itself when nothing changes."""
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
            new = prepare_for_update(resource, current, new)
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if admit is not None:
            admit(new, current)
        refs = new["metadata"].get("ownerReferences")
        if new == current:
            return current
        owners_changed = refs != old_meta.get("ownerReferences")
        labels_changed = new["metadata"].get("labels") != old_meta.get("labels")
        txn.put(resource.key, new, "MODIFIED", owners_changed=owners_changed, labels_changed=labels_changed)
        if owners_changed:
            garbage.collect_later_if_dangling(txn, resource, new, now)
        # reconciliation may change it again (status): the answer is the object as stored last
        self._after_write(txn, resource, new, now)
        return new

    def apply_scale(
        self, txn: Txn, current: dict[str, Any], scale: dict[str, Any], now: float
    ) -> dict[str, Any]:
        """Write ``scale`` to the scale subresource of the ReplicaSet ``current``; the Scale stored."""
        updated = self.update(txn, REPLICASETS, current, scaled_replicaset(current, scale), "", now)
        return scale_of(updated)

    def remove(
        self,
        txn: Txn,
        resource: ResourceType,
        obj: dict[str, Any],
        policy: str,
        now: float,
        *,
        reconcile: bool,
    ) -> dict[str, Any]:
        """Delete ``obj`` now (a namespace with all it holds), leaving its dependents to ``policy``;
        ``reconcile``: a deleted pod has its ReplicaSet looked at after."""
        meta = obj["metadata"]
        if resource is NAMESPACES:
            for other in RESOURCES:
                if other.namespaced:
                    for _ns, name, _labels, _body in txn.list_raw(other.key, meta["name"]):
                        inner = txn.get(other.key, meta["name"], name)
                        if inner is not None:
                            self.remove(txn, other, inner, "Background", now, reconcile=False)
        removed = txn.delete(resource.key, obj)
        garbage.collect_dependents(txn, meta["uid"], policy, now)
        if reconcile and resource is PODS:
            self._after_write(txn, resource, obj, now)
        return removed

    def terminate(
        self, txn: Txn, pod: dict[str, Any], grace: int, now: float, *, reconcile: bool
    ) -> dict[str, Any]:
        """Graceful deletion: the pod gets its ``deletionTimestamp`` and is removed ``grace``
        seconds later (a second delete of a terminating pod changes nothing)."""
        meta = pod["metadata"]
        if simulation.is_terminating(pod):
            return pod
        meta["deletionTimestamp"] = simulation.format_time(now + grace)
        meta["deletionGracePeriodSeconds"] = grace
        txn.put(PODS.key, pod, "MODIFIED", owners_changed=False, labels_changed=False)
        txn.add_timer(
            Timer(
                now + grace, PODS.key, meta.get("namespace", ""), meta["name"], meta["uid"], simulation.GONE
            )
        )
        # a start, stop or deadline still due would find it terminating and do nothing (see
        # DueTimers._fire): dropped now, they are not read back and skipped later, one by one
        txn.drop_timers(meta["uid"], simulation.POD_TRANSITIONS)
        if reconcile:
            self._after_write(txn, PODS, pod, now)
        return pod

    def _after_write(self, txn: Txn, resource: ResourceType, obj: dict[str, Any], now: float) -> None:
        """Have the ReplicaSet controller look at the ReplicaSet this write concerns a moment
        after it, as the real one does: a timer due now, which the next write fires in its own
        transaction first, or the next read, or the server's kubelet thread a moment later when
        no write came (see kubelet.py); the write's answer has the old status."""
        if resource is REPLICASETS:
            # a write that left the spec as its controller last saw it (annotations) changes no status
            meta = obj["metadata"]
            if (obj.get("status") or {}).get("observedGeneration") != meta.get("generation"):
                # stored behind its generation until the look: durable without a timer row
                namespace = str(meta.get("namespace") or "")
                look = Look(now, namespace, meta["name"], meta["uid"], obj, int(meta["resourceVersion"]))
                self._keep_at_commit(txn)
                txn.looks[(namespace, meta["name"])] = look
                if self.write_synced not in txn.after_commit:
                    txn.after_commit.append(self.write_synced)
        elif resource is PODS:
            namespace = str(obj["metadata"].get("namespace") or "")
            for ref in obj["metadata"].get("ownerReferences") or []:
                if ref.get("controller") and ref.get("kind") == "ReplicaSet":
                    # the ReplicaSet the reference names, if it is still that one (its uid)
                    uid, name = str(ref.get("uid")), str(ref.get("name"))
                    if txn.uid_of(REPLICASETS.key, namespace, name) == uid:
                        self._sync_later(txn, namespace, name, uid, now)

    def _sync_later(self, txn: Txn, namespace: str, name: str, uid: str, now: float) -> None:
        txn.add_timer(Timer(now, REPLICASETS.key, namespace, name, uid, simulation.RS_WRITTEN))
        if self.write_synced not in txn.after_commit:
            txn.after_commit.append(self.write_synced)

    def take_looks(self, txn: Txn, at: float) -> list[Look]:
        """The looks after writes due by ``at`` that no transaction took yet: this process's
        pending ones and those ``txn`` left; taken by ``txn`` (kept pending if it rolls back)."""
        taken = [look for key, look in self.pending_looks.items() if key not in txn.looks_taken]
        taken += txn.looks.values()
        taken = [look for look in taken if look.due <= at]
        if taken:
            self._keep_at_commit(txn)
        for look in taken:
            key = (look.namespace, look.name)
            if txn.looks.get(key) is look:
                del txn.looks[key]
            else:
                txn.looks_taken[key] = look
        return taken

    def _keep_at_commit(self, txn: Txn) -> None:
        """Have ``txn``'s commit update :attr:`pending_looks` (once per transaction)."""
        if not txn.looks and not txn.looks_taken:
            txn.after_commit.append(lambda: self._kept(txn))

    def _kept(self, txn: Txn) -> None:
        for key, look in txn.looks_taken.items():
            if self.pending_looks.get(key) is look:
                del self.pending_looks[key]
        self.pending_looks.update(txn.looks)
