"""The simulation's timers, fired when due: pod transitions (the simulated kubelet), the
ReplicaSet controller's looks, the garbage collector's, and what a finished deployer pod did.

Every write fires the timers due first, in its own transaction, so that the ReplicaSet
controller's look after one write shares the next write's transaction; reads fire them in one
transaction of their own (see registry.py), and the kubelet thread between requests (kubelet.py).
"""

from __future__ import annotations

import json
from typing import Any

from gitdeploy.localcluster import garbage, simulation
from gitdeploy.localcluster.lifecycle import ObjectLifecycle
from gitdeploy.localcluster.resources import PODS, REPLICASETS
from gitdeploy.localcluster.rscontroller import ReplicaSetController
from gitdeploy.localcluster.store import Look, Timer, Txn

__all__ = ["DueTimers"]

_Named = tuple[str, str, str]
"""A ReplicaSet to look at: its uid, namespace and name."""

_SETTLE_ROUNDS = 64
"""At most this many rounds of timers that fire timers due at once, per transaction."""


class DueTimers:
    """Fires the timers due in a transaction, writing through ``objects``."""

    def __init__(self, objects: ObjectLifecycle) -> None:
        self._objects = objects
        self._replicasets = ReplicaSetController(objects)
        self._recovered = False  # the looks left pending by a process that ended were taken up

    def settle(self, txn: Txn, at: float) -> int:
        """Fire the timers due by ``at`` in ``txn``, and those that firing them adds due by
        then; returns how many fired. Every write does so first,
        so that the ReplicaSet controller's look after one write shares the next write's
        transaction. A ReplicaSet is looked at as of the latest timer that named it (the look
        after a write as of the write), so that pods it makes start when due after it."""
        if not self._recovered:
            self._recover(txn, at)
        fired = 0
        for _ in range(_SETTLE_ROUNDS):
            txn.earliest_timer = None
            timers = txn.pop_due(at)
            looks = self._objects.take_looks(txn, at)
            fired += len(timers) + len(looks)
            # each ReplicaSet whose pods moved is looked at once, after all of them (pods started
            # together become ready together: one status write, not one per pod)
            replicasets: dict[_Named, float] = {}
            stored: dict[_Named, Look] = {}
            for look in looks:
                named = (look.uid, look.namespace, look.name)
                replicasets[named] = max(replicasets.get(named, look.due), look.due)
                stored[named] = look
            for timer in timers:
                for named in self._fire(txn, timer, at):
                    replicasets[named] = max(replicasets.get(named, timer.due), timer.due)
            for named, when in replicasets.items():
                replicaset = self._replicaset(txn, named, stored.get(named))
                if replicaset is not None:
                    self._replicasets.reconcile(txn, replicaset, when)
            if txn.earliest_timer is not None and txn.earliest_timer <= at:
                continue
            if not any(look.due <= at for look in txn.looks.values()):  # a look firing left none
                break
        return fired

    @property
    def idle(self) -> bool:
        """No look after a write is pending in this process (none left to recover either)."""
        return self._recovered and not self._objects.pending_looks

    def _recover(self, txn: Txn, at: float) -> None:
        """Take up the looks after writes that a process left pending when it ended (a crash):
        each ReplicaSet stored behind its generation (see lifecycle.py), looked at now."""
        for namespace, name, uid in txn.behind(REPLICASETS.key):
            self._objects.pending_looks.setdefault((namespace, name), Look(at, namespace, name, uid, None, 0))
        self._recovered = True

    @staticmethod
    def _replicaset(txn: Txn, named: _Named, look: Look | None) -> dict[str, Any] | None:
        """The ReplicaSet to look at, as stored: the one a look after a write kept, if it is
        still the stored version (a copy: the look changes its status and version)."""
        uid, namespace, name = named
        kept = None if look is None else look.obj
        if look is not None and kept is not None and txn.rv_of(REPLICASETS.key, namespace, name) == look.rv:
            return {**kept, "metadata": dict(kept["metadata"])}
        # by its key, not its uid: the primary key finds it without the uid index
        replicaset = txn.get(REPLICASETS.key, namespace, name)
        if replicaset is None or replicaset["metadata"]["uid"] != uid:
            return None
        return replicaset

    def _fire(self, txn: Txn, timer: Timer, now: float) -> list[_Named]:
        """Apply one transition; returns the ReplicaSets to look at for it."""
        if timer.action in (simulation.RS_SYNC, simulation.RS_WRITTEN):
            return [(timer.uid, timer.namespace, timer.name)]
        if timer.action == garbage.COLLECT:
            collected = garbage.collectable(txn, timer)
            if collected is not None:
                resource, obj = collected
                self._objects.remove(txn, resource, obj, "Background", now, reconcile=False)
            return []
        pod = txn.get(timer.resource, timer.namespace, timer.name)
        if pod is None or pod["metadata"]["uid"] != timer.uid:
            return []
        if timer.action == simulation.GONE:
            txn.delete(PODS.key, pod)
            garbage.collect_dependents(txn, pod["metadata"]["uid"], "Background", now)
            return self._controllers_of(pod)
        if simulation.is_terminating(pod):
            return []  # its containers are being stopped: no start, no completion
        pod["status"] = simulation.pod_transition(pod, timer.action, timer.due, self._objects.config)
        txn.put(PODS.key, pod, "MODIFIED", owners_changed=False, labels_changed=False)
        if timer.action == simulation.STOP and pod["status"].get("phase") == "Succeeded":
            self._act_as_custom_deployer(txn, pod, now)
        return self._controllers_of(pod)

    @staticmethod
    def _controllers_of(pod: dict[str, Any]) -> list[_Named]:
        """The ReplicaSets that control ``pod`` (one at most)."""
        namespace = str(pod["metadata"].get("namespace") or "")
        return [
            (str(ref.get("uid")), namespace, str(ref.get("name")))
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
                self._objects.apply_scale(txn, other, {"spec": {"replicas": wanted}}, now)
