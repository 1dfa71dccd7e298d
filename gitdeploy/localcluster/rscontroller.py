"""The simulated ReplicaSet controller: a look at one ReplicaSet, inside a transaction.

It makes its pods from the template or deletes the extra ones (as :func:`simulation.plan_replicaset`
plans it), records an event for each, writes the status, and schedules its next look when pods
become available later (``minReadySeconds``). Its looks are due on timers (see timers.py).
"""

from __future__ import annotations

import os
from typing import Any

from gitdeploy.localcluster import simulation
from gitdeploy.localcluster.lifecycle import ObjectLifecycle
from gitdeploy.localcluster.resources import CORE_EVENTS, PODS, REPLICASETS
from gitdeploy.localcluster.store import Timer, Txn

__all__ = ["ReplicaSetController"]


class ReplicaSetController:
    """Looks at ReplicaSets, making and deleting pods through ``objects``."""

    def __init__(self, objects: ObjectLifecycle) -> None:
        self._objects = objects

    def reconcile(self, txn: Txn, replicaset: dict[str, Any], now: float) -> None:
        """Look at ``replicaset`` at ``now``: create or delete pods toward its replicas, record
        each as an event, write its status, and look again when availability may change."""
        meta = replicaset["metadata"]
        namespace = meta.get("namespace", "")
        pods = txn.controlled(meta["uid"], PODS.key)
        plan = simulation.plan_replicaset(replicaset, pods, now)
        for _ in range(plan.create):
            pod = simulation.new_pod_for(replicaset, f"{meta['name']}-{simulation.random_suffix()}")
            while txn.exists(PODS.key, namespace, pod["metadata"]["name"]):
                pod["metadata"]["name"] = f"{meta['name']}-{simulation.random_suffix()}"
            self._objects.insert(txn, PODS, pod, now, by_controller=True)
            self._record_event(
                txn, replicaset, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}", now
            )
        for pod in plan.delete:
            grace = simulation.grace_period_seconds(pod, {})
            if grace:
                self._objects.terminate(txn, pod, grace, now, reconcile=False)
            else:
                self._objects.remove(txn, PODS, pod, "Background", now, reconcile=False)
            self._record_event(
                txn, replicaset, "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}", now
            )
        if plan.status != replicaset.get("status"):
            replicaset["status"] = plan.status
            txn.put(REPLICASETS.key, replicaset, "MODIFIED", owners_changed=False, labels_changed=False)
        if plan.recheck_at is not None:
            txn.add_timer(
                Timer(
                    plan.recheck_at, REPLICASETS.key, namespace, meta["name"], meta["uid"], simulation.RS_SYNC
                )
            )

    def _record_event(self, txn: Txn, about: dict[str, Any], reason: str, message: str, now: float) -> None:
        meta = about["metadata"]
        namespace = meta.get("namespace", "") or "default"
        stamp = simulation.format_time(now)
        event = {
            "metadata": {"name": f"{meta['name']}.{os.urandom(8).hex()}", "namespace": namespace},
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
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": "Normal",
            "reportingComponent": "replicaset-controller",
            "reportingInstance": "",
        }
        self._objects.insert(txn, CORE_EVENTS, event, now, by_controller=True)
