"""The ReplicaSet controller's look after a write survives a kill of the process that wrote.

The look is kept in the writing process's memory, not as a timer row: the stored ReplicaSet, its
``status.observedGeneration`` behind its ``metadata.generation``, is what marks it. A process killed
(SIGKILL) after a write committed and before the look leaves that mark; the next process to open
the state directory takes the look up (its pods, its status) before anything else.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.localcluster import LocalCluster
from gitdeploy.localcluster.resources import PODS, REPLICASETS
from tests.fixtures.contract import replicaset

NOW = 1_700_000_000.0

# Writes straight on the registry (no server, so no kubelet thread to take the look), then the
# process kills itself: the look after its last write was never taken.
_WRITE_THEN_DIE = """
import json, os, signal, sys
from pathlib import Path
from gitdeploy.clock import FakeClock
from gitdeploy.localcluster.config import SimulationConfig
from gitdeploy.localcluster.registry import Registry
from gitdeploy.localcluster.resources import REPLICASETS
from gitdeploy.localcluster.store import Store

state_dir, body, scale_to, now = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], float(sys.argv[4])
registry = Registry(Store(Path(state_dir) / "cluster.db"), FakeClock(now), SimulationConfig())
registry.bootstrap()
registry.create(REPLICASETS, "default", body)
if scale_to:
    registry.patch(REPLICASETS, "default", "web", "application/merge-patch+json",
                   {"spec": {"replicas": int(scale_to)}}, "scale")
os.kill(os.getpid(), signal.SIGKILL)
"""


def _stored_replicaset(state_dir: Path) -> tuple[dict[str, Any], int]:
    """The ReplicaSet as the killed process left it, and how many timer rows name it."""
    with sqlite3.connect(state_dir / "cluster.db") as db:
        (body,) = db.execute(
            "SELECT body FROM objects WHERE resource = ? AND name = 'web'", (REPLICASETS.key,)
        ).fetchone()
        stored = json.loads(body)
        (timers,) = db.execute(
            "SELECT COUNT(*) FROM timers WHERE uid = ?", (stored["metadata"]["uid"],)
        ).fetchone()
    db.close()
    return stored, int(timers)


@pytest.mark.parametrize(("scale_to", "replicas", "generation"), [("", 2, 1), ("3", 3, 2), ("0", 0, 2)])
def test_a_look_left_by_a_killed_process_is_taken_up_by_the_next(
    tmp_path: Path, scale_to: str, replicas: int, generation: int
) -> None:
    # Given a process that created a ReplicaSet of 2 (and scaled it) and was killed right after
    body = json.dumps(replicaset(replicas=2))
    killed = subprocess.run(
        [sys.executable, "-c", _WRITE_THEN_DIE, str(tmp_path), body, scale_to, str(NOW)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    stored, timers = _stored_replicaset(tmp_path)
    # its last look pending: the status is of the generation before, and no timer row names it
    assert (stored["metadata"]["generation"], timers) == (generation, 0)
    assert stored["status"].get("observedGeneration") != generation
    # When the state directory is opened again and the simulation ticks
    with LocalCluster(tmp_path, clock=FakeClock(NOW + 1)) as cluster:
        cluster.registry.materialise()
        # Then the controller took up the look: the pods of the last spec, a status that observed it
        caught_up = cluster.registry.get(REPLICASETS, "default", "web")
        with cluster.store.read() as txn:
            pods = [json.loads(body) for _ns, _name, _labels, body in txn.list_raw(PODS.key, "default")]
    assert caught_up["status"]["observedGeneration"] == generation
    assert caught_up["status"]["replicas"] == replicas
    active = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    assert len(active) == replicas
