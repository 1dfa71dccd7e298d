"""A state directory made before the objects table became a rowid table opens with today's code:
migrated once, in one transaction, with every object, its resourceVersion, the watch history and
the pending timers kept, and the daemon's log says so. A process killed at any step of the
migration, or one whose migration fails (the disk full), leaves the old table as it was, and the
next open migrates it.

The older state directory is a real one, made by main at 4db9140 (:mod:`tests.fixtures.olderstate`).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes import watch as kubernetes_watch

from gitdeploy.clock import FakeClock
from gitdeploy.localcluster import LocalCluster, stop
from tests.fixtures.cluster import api_client_for
from tests.fixtures.olderstate import NAMESPACE, older_state_dir

watch: Any = kubernetes_watch  # the generated client is used untyped (its annotations are partial)
TABLES = ("objects", "changes", "meta", "timers", "owners")
MIGRATED = "to a rowid table"


def contents(state_dir: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the store's tables, in a fixed order."""
    with sqlite3.connect(state_dir / "cluster.db") as db:
        found = {table: sorted(db.execute(f"SELECT * FROM {table}").fetchall()) for table in TABLES}
    db.close()
    return found


def objects_table(state_dir: Path) -> str:
    with sqlite3.connect(state_dir / "cluster.db") as db:
        tables = dict(db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()
    assert "objects_without_rowid" not in tables
    return str(tables["objects"])


@pytest.fixture
def older(tmp_path: Path) -> Path:
    state_dir = older_state_dir(tmp_path / "state")
    assert "WITHOUT ROWID" in objects_table(state_dir)
    return state_dir


def test_an_older_state_dir_is_migrated_keeping_everything(
    older: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = contents(older)
    clock = FakeClock(1_700_000_030.0)  # after the dump was made, before its timers are due
    with LocalCluster(older, clock=clock) as cluster:
        assert f"moved its {len(before['objects'])} objects {MIGRATED}" in capsys.readouterr().err
        assert "WITHOUT ROWID" not in objects_table(older)
        assert contents(older) == before
        api = api_client_for(cluster)
        core: Any = client.CoreV1Api(api)
        apps: Any = client.AppsV1Api(api)
        pods = core.list_namespaced_pod(NAMESPACE)
        assert pods.metadata.resource_version == str(dict(before["meta"])["rv"])
        stored = {row[2]: str(row[4]) for row in before["objects"] if row[0] == "/pods"}
        assert {pod.metadata.name: pod.metadata.resource_version for pod in pods.items} == stored
        # the watch history: from the first version, the configmaps' changes come again
        events = watch.Watch().stream(
            core.list_namespaced_config_map, NAMESPACE, resource_version="1", timeout_seconds=1
        )
        seen = [(event["type"], event["object"].metadata.name) for event in events]
        assert seen[-2:] == [("MODIFIED", "gitdeploy.api"), ("DELETED", "gitdeploy.worker")]
        # the timers: web's terminating pods go when their grace period is over
        terminating = [pod.metadata.name for pod in pods.items if pod.metadata.deletion_timestamp]
        assert len(terminating) == 2
        clock.advance(30.0)
        cluster.registry.materialise()
        left = {pod.metadata.name for pod in core.list_namespaced_pod(NAMESPACE).items}
        assert not left & set(terminating)
        # and writes go on from the kept version
        scaled = apps.patch_namespaced_replica_set_scale("api", NAMESPACE, {"spec": {"replicas": 1}})
        assert int(scaled.metadata.resource_version) > int(pods.metadata.resource_version)
        api.close()
    with LocalCluster(older, clock=clock):
        assert MIGRATED not in capsys.readouterr().err  # once only


def test_the_daemon_log_says_it_migrated(older: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "GITDEPLOY_STATE_DIR")}
    try:
        up = subprocess.run(
            [sys.executable, "-m", "gitdeploy", "--state-dir", str(older), "cluster", "up"],
            capture_output=True, text=True, env=env, timeout=60, check=False,
        )  # fmt: skip
        assert up.returncode == 0, up.stderr
    finally:
        stop(older)
    log = (older / "cluster.log").read_text(encoding="utf-8")
    assert f"cluster.db: moved its 24 objects {MIGRATED}" in log
    assert "WITHOUT ROWID" not in objects_table(older)


# A process opening the store, whose SQLite connections run ``action`` just before the first
# statement that starts with ``prefix``: a SIGKILL, or a database that is full from then on.
_OPEN_WITH_A_FAULT = """
import os, signal, sqlite3, sys
from pathlib import Path
from gitdeploy.localcluster.store import Store

state_dir, prefix, action = sys.argv[1:]
connect = sqlite3.connect

def faulty(*args, **kwargs):
    conn = connect(*args, **kwargs)
    def trace(statement):
        if statement.lstrip().startswith(prefix):
            if action == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            pages = connect(args[0]).execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {pages}")
    conn.set_trace_callback(trace)
    return conn

sqlite3.connect = faulty
Store(Path(state_dir) / "cluster.db").close()
"""

STEPS = [
    "ALTER TABLE objects RENAME",
    "CREATE TABLE objects(",
    "INSERT INTO objects(",
    "DROP TABLE objects_without_rowid",
    "CREATE UNIQUE INDEX IF NOT EXISTS objects_key",
    "CREATE INDEX IF NOT EXISTS objects_app",
    "PRAGMA table_info(changes)",
    "COMMIT",
]


def open_with_a_fault(state_dir: Path, prefix: str, action: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _OPEN_WITH_A_FAULT, str(state_dir), prefix, action],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("step", STEPS)
def test_killed_midway_the_old_table_stays_and_the_next_open_migrates(
    older: Path, step: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = contents(older)
    killed = open_with_a_fault(older, step, "kill")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert "WITHOUT ROWID" in objects_table(older)
    assert contents(older) == before
    with LocalCluster(older, clock=FakeClock(1_700_000_030.0)):
        assert MIGRATED in capsys.readouterr().err
    assert "WITHOUT ROWID" not in objects_table(older)
    assert contents(older) == before


def test_a_failed_migration_leaves_the_old_table(older: Path) -> None:
    before = contents(older)
    failed = open_with_a_fault(older, "INSERT INTO objects(", "fill the disk")
    assert failed.returncode == 1
    assert "database or disk is full" in failed.stderr
    assert "WITHOUT ROWID" in objects_table(older)
    assert contents(older) == before
    with LocalCluster(older, clock=FakeClock(1_700_000_030.0)) as cluster, cluster.store.read() as txn:
        assert txn.current_rv() == dict(before["meta"])["rv"]
    assert contents(older) == before
