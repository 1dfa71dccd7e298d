"""The embedded cluster's writes leave no reference cycles.

What a write transaction wrote (the objects, their JSON) is freed when its last reference goes.
Left in a cycle, it waits for Python's cyclic garbage collector instead, which then runs every few
writes and scans it: CPU that every request of the daemon pays.

The writes run in a fresh interpreter: `gc.collect()` counts every thread's garbage, and a pytest
worker may still hold threads of earlier tests (a watch retrying against a server that stopped)
whose failures leave cycles of their own.
"""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from gitdeploy.clock import FakeClock
from gitdeploy.localcluster.config import SimulationConfig
from gitdeploy.localcluster.registry import Registry
from gitdeploy.localcluster.resources import CONFIGMAPS, REPLICASETS
from gitdeploy.localcluster.store import Store
from tests.fixtures.cli import REPO_ROOT
from tests.fixtures.contract import configmap, replicaset

MERGE = "application/merge-patch+json"


def unreachable_after_writes(state_dir: Path) -> int:
    """Objects the cyclic collector finds after a round of writes, with the collector off meanwhile."""
    clock = FakeClock()
    store = Store(state_dir / "cluster.db")
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
        return gc.collect()
    finally:
        gc.enable()
        store.close()


def test_writes_and_their_controller_leave_nothing_for_the_garbage_collector(tmp_path: Path) -> None:
    script = (
        "import sys; from pathlib import Path\n"
        "from tests.integration.localcluster.test_reference_cycles import unreachable_after_writes\n"
        "print(unreachable_after_writes(Path(sys.argv[1])))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) == 0
