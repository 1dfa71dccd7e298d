"""The embedded cluster's writes leave no reference cycles.

What a write transaction wrote (the objects, their JSON) is freed when its last reference goes.
Left in a cycle, it waits for Python's cyclic garbage collector instead, which then runs every few
writes and scans it: CPU that every request of the daemon pays.
"""

from __future__ import annotations

import gc
from pathlib import Path

from gitdeploy.clock import FakeClock
from gitdeploy.localcluster.config import SimulationConfig
from gitdeploy.localcluster.registry import Registry
from gitdeploy.localcluster.resources import CONFIGMAPS, REPLICASETS
from gitdeploy.localcluster.store import Store
from tests.fixtures.contract import configmap, replicaset

MERGE = "application/merge-patch+json"


def test_writes_and_their_controller_leave_nothing_for_the_garbage_collector(tmp_path: Path) -> None:
    clock = FakeClock()
    store = Store(tmp_path / "cluster.db")
    registry = Registry(store, clock, SimulationConfig())
    registry.bootstrap()
    registry.create(REPLICASETS, "default", replicaset(replicas=1))
    registry.materialise()
    gc.collect()
    gc.disable()
    try:
        for replicas in (3, 1, 0):  # pods made, then terminated gracefully
            registry.patch(REPLICASETS, "default", "web", MERGE, {"spec": {"replicas": replicas}}, "scale")
        registry.create(CONFIGMAPS, "default", configmap())
        registry.patch(CONFIGMAPS, "default", "cfg", MERGE, {"data": {"key": "other"}})
        registry.delete(CONFIGMAPS, "default", "cfg")
        clock.advance(60)  # the pods started, then their grace period ran out
        registry.materialise()
        unreachable = gc.collect()
    finally:
        gc.enable()
        store.close()
    assert unreachable == 0
