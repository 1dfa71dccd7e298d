"""The embedded cluster's cost per ReplicaSet scale write: ``python bench/scalecost.py MODE``.

A state directory holds ``--replicasets`` ReplicaSets (1,000; loaded straight into the store),
then ``--writes`` scale writes go to them in turn, 1 then 0 for each (the simulated ReplicaSet
controller creates a pod, then deletes it again: graceful termination, its timers). Modes:

* ``registry``: the writes straight on the registry in this process (no HTTP); the process's CPU
  time over the writes and a final ``materialise``, per write.
* ``pages``: the same writes with checkpoints off, so every page a commit writes stays in the
  WAL: WAL pages per write, split by the table or index each page belongs to (``dbstat``), and
  the SQL statements run per write, by statement.
* ``daemon``: the cluster daemon (``ensure_running``: its own process, HTTPS) and one official
  client sending the writes; the daemon's CPU time (``/proc``) from the first write until nothing
  changes any more (the pods started and terminated), per write, and the object changes per write.

``--tree DIR`` measures the gitdeploy of another checkout (run with that checkout's Python, e.g.
``cd ../base && .venv/bin/python ../rowid/bench/scalecost.py registry --tree .``), so that trees
can be compared with the same method, alternating runs on a busy machine. ``--runs N`` repeats the
measurement (each in a new state directory) and prints the fastest and the median. Not a test;
the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import json
import os
import re
import sqlite3
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

NAMESPACE = "bench"  # bench.run's _LC_NAMESPACE, where _load_directly puts the ReplicaSets
_WAL_HEADER = 32
_FRAME_HEADER = 24


def _modules(tree: Path) -> dict[str, Any]:
    """The modules measured: those of ``tree``'s gitdeploy and bench."""
    sys.path.insert(0, str(tree.resolve()))
    names = ["bench.run", "gitdeploy.clock", "gitdeploy.localcluster", "gitdeploy.localcluster.config"]
    names += [
        "gitdeploy.localcluster.registry",
        "gitdeploy.localcluster.resources",
        "gitdeploy.localcluster.store",
    ]
    return {name.rsplit(".", 1)[-1]: importlib.import_module(name) for name in names}


def _user_system_seconds(pid: int) -> tuple[float, float]:
    """A process's CPU time in user space and in the kernel (for a TLS server, mostly sockets)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _name(index: int, count: int) -> str:
    return f"app-{(index // 2) % count:05d}"


def _scale_all(registry: Any, replicasets: Any, count: int, writes: int) -> None:
    for index in range(writes):
        body = {"spec": {"replicas": (index + 1) % 2}}
        registry.patch(
            replicasets, NAMESPACE, _name(index, count), "application/merge-patch+json", body, "scale"
        )


@contextmanager
def _loaded(m: dict[str, Any], count: int) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="scalecost-") as work:
        state_dir = Path(work)
        m["run"]._load_directly(state_dir, count)
        yield state_dir


def _registry_run(m: dict[str, Any], count: int, writes: int) -> dict[str, float]:
    with _loaded(m, count) as state_dir:
        store = m["store"].Store(state_dir / "cluster.db")
        registry = m["registry"].Registry(store, m["clock"].SystemClock(), m["config"].SimulationConfig())
        try:
            started = time.process_time()
            _scale_all(registry, m["resources"].REPLICASETS, count, writes)
            registry.materialise()
            cpu = time.process_time() - started
        finally:
            store.close()
    return {"cpu_ms_per_write": round(1000 * cpu / writes, 3)}


def _owners_of_pages(db: Path) -> dict[int, str]:
    with sqlite3.connect(db) as conn:
        return {int(page): str(name) for name, page in conn.execute("SELECT name, pageno FROM dbstat")}


def _wal_pages(wal: Path, page_size: int) -> list[int]:
    data = wal.read_bytes()[_WAL_HEADER:]
    step = _FRAME_HEADER + page_size
    return [struct.unpack(">I", data[at : at + 4])[0] for at in range(0, len(data), step)]


def _pages_run(m: dict[str, Any], count: int, writes: int) -> dict[str, Any]:
    store_module = m["store"]
    # no checkpoint (neither SQLite's automatic one, see traced, nor the checkpoint thread of
    # the trees that have it): the WAL keeps every page that every commit wrote
    if hasattr(store_module, "_CHECKPOINT_EVERY_COMMITS"):
        store_module._CHECKPOINT_EVERY_COMMITS = 10**9
    statements: collections.Counter[str] = collections.Counter()
    opened: Callable[[Any], sqlite3.Connection] = store_module.Store._open

    def traced(self: Any) -> sqlite3.Connection:
        conn = opened(self)
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.set_trace_callback(lambda sql: statements.update([re.sub(r"'[^']*'|\b\d+(\.\d+)?\b", "?", sql)]))
        return conn

    store_module.Store._open = traced
    with _loaded(m, count) as state_dir:
        db = state_dir / "cluster.db"
        store = store_module.Store(db)
        registry = m["registry"].Registry(store, m["clock"].SystemClock(), m["config"].SimulationConfig())
        try:
            with store._connection() as conn:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
            statements.clear()
            _scale_all(registry, m["resources"].REPLICASETS, count, writes)
            counted = dict(statements)
            frames = _wal_pages(Path(f"{db}-wal"), page_size)
            owners = _owners_of_pages(db)
        finally:
            store.close()
    by_owner = collections.Counter(owners.get(page, "(free or new)") for page in frames)
    return {
        "wal_pages_per_write": round(len(frames) / writes, 2),
        "wal_pages_per_write_by_btree": {k: round(v / writes, 2) for k, v in by_owner.most_common()},
        "sql_statements_per_write": round(sum(counted.values()) / writes, 2),
        "sql_by_statement": {
            k[:120]: round(v / writes, 2) for k, v in sorted(counted.items(), key=lambda kv: -kv[1])
        },
    }


def _daemon_run(m: dict[str, Any], count: int, writes: int) -> dict[str, float]:
    from kubernetes import client

    localcluster = m["localcluster"]
    with _loaded(m, count) as state_dir:
        info = localcluster.ensure_running(state_dir)
        api = (getattr(m["run"], "daemon_client", None) or m["run"]._daemon_client)(state_dir, info.url)
        apps: Any = client.AppsV1Api(api)

        def version() -> int:
            found = apps.list_namespaced_replica_set(NAMESPACE, limit=1)
            return int(found.metadata.resource_version)

        try:
            time.sleep(2)  # the daemon's start is over
            (user, system), first = _user_system_seconds(info.pid), version()
            for index in range(writes):
                apps.patch_namespaced_replica_set_scale(
                    _name(index, count), NAMESPACE, {"spec": {"replicas": (index + 1) % 2}}
                )
            last = version()
            while True:  # the pods start and terminate after the writes: until nothing changes
                time.sleep(5)
                now = version()
                if now == last:
                    break
                last = now
            user_now, system_now = _user_system_seconds(info.pid)
            user, system = user_now - user, system_now - system
        finally:
            api.close()
            localcluster.stop(state_dir)
    return {
        "cpu_ms_per_write": round(1000 * (user + system) / writes, 3),
        "user_ms_per_write": round(1000 * user / writes, 3),
        "system_ms_per_write": round(1000 * system / writes, 3),
        "changes_per_write": round((last - first) / writes, 2),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("mode", choices=["registry", "pages", "daemon"])
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--replicasets", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=None, help="1,500 on the registry, 1,000 else")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args(argv)
    writes = args.writes or (1500 if args.mode == "registry" else 1000)
    modules = _modules(args.tree)
    measure = {"registry": _registry_run, "pages": _pages_run, "daemon": _daemon_run}[args.mode]
    runs = [measure(modules, args.replicasets, writes) for _ in range(args.runs)]
    result: dict[str, Any] = {"mode": args.mode, "tree": str(args.tree), "writes": writes, "runs": runs}
    if "cpu_ms_per_write" in runs[0]:
        cpu = [run["cpu_ms_per_write"] for run in runs]
        result["cpu_ms_per_write_fastest"] = min(cpu)
        result["cpu_ms_per_write_median"] = round(statistics.median(cpu), 3)
    print(json.dumps(result, indent=1 if args.mode == "pages" else None))


if __name__ == "__main__":
    main()
