"""What a pass's read of one namespace holds in memory at its peak, for the apps it is about.

A pass over many due apps of a namespace reads the whole namespace once per kind (ReplicaSets and
app records: :meth:`~gitdeploy.controller.workers.Workers._list_namespace`), and keeps the
objects of its due apps: all of them for a lone replica's first pass or resync, a third for each
of three ``run --sharding`` replicas. This reads one namespace of an embedded cluster of ``--apps`` apps that
gitdeploy deployed (:mod:`bench.clusterstate`: two ReplicaSets and a record of two revisions
per app, 12 namespaces), through the calls a pass makes, for all of its apps and for a third,
and measures with ``tracemalloc`` the peak above what was held before, and what the result
keeps. Prints a JSON line per share, then a table::

    python bench/namespace_read.py [--apps 6000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.clusterstate import add_cache_dir_option, running_cluster
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.cluster.connection import connect

MIB = 2**20
SHARES = {"all": 1, "a third": 3}


def read(adapter: Cluster, namespace: str, names: set[str]) -> tuple[float, float, float]:
    """Peak MiB above the start, MiB kept by the result, and seconds, of one read of
    ``namespace`` for the apps ``names`` (as a pass over them makes it)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    replica_sets = adapter.list_replica_sets(namespace, of_apps=names)
    records = adapter.list_app_records(namespace, of_apps=names)
    seconds = time.perf_counter() - started
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert {rs.app for rs in replica_sets} == names and {r.app for r in records} == names
    return (peak - before) / MIB, (kept - before) / MIB, seconds


def measure(apps: int, rounds: int, cache_dir: Path) -> list[dict[str, Any]]:
    with running_cluster(cache_dir, apps, seed=1) as (cluster, _facts):
        adapter = Cluster(connect(cluster.kubeconfig_path).api)
        everything = adapter.list_app_records()
        namespace = everything[0].namespace
        names = sorted(r.app for r in everything if r.namespace == namespace)
        rows = []
        for label, every in SHARES.items():
            share = set(names[::every])
            runs = [read(adapter, namespace, share) for _ in range(rounds)]
            rows.append(
                {
                    "scenario": "namespace-read",
                    "apps": apps,
                    "namespace_apps": len(names),
                    "share": label,
                    "share_apps": len(share),
                    "peak_mib": round(min(r[0] for r in runs), 1),
                    "kept_mib": round(min(r[1] for r in runs), 1),
                    "seconds": round(min(r[2] for r in runs), 3),
                }
            )
        return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--apps", type=int, default=6_000)
    parser.add_argument("--rounds", type=int, default=3)
    add_cache_dir_option(parser)
    args = parser.parse_args(argv)
    rows = measure(args.apps, args.rounds, args.cache_dir)
    for row in rows:
        print(json.dumps(row))
    print(f"\n{'share of the namespace':<24} {'apps':>6} {'peak MiB':>9} {'kept MiB':>9} {'s':>7}")
    for row in rows:
        figures = f"{row['peak_mib']:>9} {row['kept_mib']:>9} {row['seconds']:>7}"
        print(f"{row['share']:<24} {row['share_apps']:>6} {figures}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
