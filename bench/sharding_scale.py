"""A fleet of N apps on 1, 2 and 3 ``gitdeploy run --sharding`` replicas: cold reconcile, memory per
replica, push-to-first-write latency, and the failover after a replica is killed (issue 25).

For each replica count, a fresh embedded cluster (in this process, plain HTTP, real clock, pods
ready after 50 ms) and the same generated config repo; the replicas are the real ``gitdeploy run
--sharding`` command, each with its own state dir, ``--interval 1h`` and a webhook (set up as
``bench/push_fanout.py``). Measured, per replica count:

* ``cold_reconcile_s``: from the replicas' start until every app is Synced (the replicas' gauges, summed);
* ``peak_rss_mib``: each replica's peak resident memory (``VmHWM``) once the fleet is Synced, and
  ``peak_rss_at_end_mib`` once the pushes (and the failover) are done: each push is a new commit
  every replica loads (the killed replica left out);
* push latency: ``--rounds`` signed pushes to replica ``a``, each an image bump of an app another
  replica owns (with one replica, its own), timed to the first ReplicaSet write. The replicas
  resync every ``--resync-interval`` (``run``'s default, 300 s): a short one makes every push meet
  a resync under way, a pass over all of a replica's apps;
* ``failover_s`` (2 and 3 replicas): replica ``a`` is killed with SIGKILL after the pushes, and the
  figure runs until the survivors own every app (``gitdeploy_shard_apps_owned`` summed, the
  survivors scraped side by side: apps adopted ahead of their passes count, as the survivors act
  on them), beside the Lease duration
  that bounds how soon they may take over (target: ≤ lease duration + 5 s), and
  ``failover_scrapes_began_s``: when the scrapes that said so began (a survivor busy with the
  thousands of apps it just adopted answers a scrape seconds late; they owned every app between
  the two figures);
  ``claims_written_s`` runs on until every app's record names a survivor (the claims the
  handovers write after the apps are due; the bench lists the records every second). The time
  of the kill is printed as the replicas' logs print times (with ``--keep``, to read them by).

Prints a JSON line per replica count, then a table::

    python bench/sharding_scale.py [--apps 30000] [--replicas 1 2 3] [--rounds 10]
        [--resync-interval 300s] [--keep DIR]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import signal
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.generate import GeneratedRepo, generate_repo
from bench.push_fanout import owner, replica, wait_until_synced
from bench.push_latency import SIMULATION, _samples, percentile, push_to_first_write_ms
from gitdeploy.clock import SystemClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.cluster.connection import connect
from gitdeploy.core.history.records import AppRecord
from gitdeploy.localcluster import LocalCluster

NAMES = ("a", "b", "c", "d")
LEASE_DURATION_S = 15.0
"""``gitdeploy run``'s default ``--lease-duration``, which the replicas here keep."""


def pid_of(identity: str) -> int:
    """The process id in a replica's identity (``<host>_<boot id>.<pid>_<random>``)."""
    found = re.search(r"\.(\d+)_[^_.]+$", identity)
    if found is None:
        raise SystemExit(f"no pid in identity {identity!r}")
    return int(found.group(1))


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmHWM for pid {pid}")


def owned(base: str) -> int:
    """The apps the replica at ``base`` owns; 0 while its /metrics does not answer (a replica busy
    claiming thousands of apps may answer a scrape late)."""
    try:
        return int(sum(sample.value for sample in _samples(base, "gitdeploy_shard_apps_owned")))
    except httpx.TransportError:
        return 0


def push_latencies(
    repo: GeneratedRepo, cluster: LocalCluster, receiver: tuple[str, str], identities: set[str], rounds: int
) -> list[float]:
    """Milliseconds from each push to ``receiver`` to the first ReplicaSet write of the app bumped:
    apps another replica owns (all of them the receiver's own when it is alone)."""
    base, own_identity = receiver
    adapter = Cluster(connect(cluster.kubeconfig_path).api)
    others = identities - {own_identity} or {own_identity}
    chosen: list[int] = []
    for index, plan in enumerate(repo.apps):
        if len(chosen) == rounds:
            break
        if owner(adapter, plan.namespace, plan.name) in others:
            chosen.append(index)
    headers = {"Authorization": f"Bearer {cluster.token}"}
    with httpx.Client(headers=headers) as http, httpx.Client(timeout=10) as hooks:
        return [push_to_first_write_ms(cluster, http, hooks, base, repo, index, wait=60) for index in chosen]


def failover_seconds(
    started: list[tuple[str, str]], repo: GeneratedRepo, adapter: Cluster, limit: float
) -> tuple[float, float, float]:
    """Kill the first replica with SIGKILL; seconds until the others own every app (they act on
    each: adopted apps count), when the scrapes that said so began (a survivor busy with the apps
    it just adopted answers a scrape seconds late: the truth lies between the two), and until
    every app's record names a live replica (the claims written)."""
    survivors = [base for base, _ in started[1:]]
    live = {identity for _, identity in started[1:]}
    os.kill(pid_of(started[0][1]), signal.SIGKILL)
    killed = time.perf_counter()
    stamp = datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]  # as the replicas' logs, to read them by
    print(f"  killed replica {started[0][1]} at {stamp}", file=sys.stderr, flush=True)
    owning = None
    began = 0.0
    with ThreadPoolExecutor(max_workers=len(survivors)) as scrapes:  # side by side, not one after another
        while time.perf_counter() - killed < limit:
            if owning is None:
                began = time.perf_counter() - killed
                if sum(scrapes.map(owned, survivors)) >= len(repo.apps):
                    owning = time.perf_counter() - killed
            if owning is not None and claims_written(adapter, repo, live):
                return owning, began, time.perf_counter() - killed
            time.sleep(0.25 if owning is None else 1.0)
    raise SystemExit(f"the survivors did not own and claim every app {limit:.0f} s after the kill")


def claims_written(adapter: Cluster, repo: GeneratedRepo, live: set[str]) -> bool:
    """Whether every app's record names one of the ``live`` replicas as its owner."""
    for namespace in sorted({plan.namespace for plan in repo.apps}):
        for stored in adapter.list_app_records(namespace):
            claim = AppRecord.from_json(stored.payload).shard
            if claim is None or claim.owner not in live or claim.released:
                return False
    return True


def measure(repo: GeneratedRepo, work: Path, replicas: int, rounds: int, resync: str) -> dict[str, object]:
    apps = len(repo.apps)
    with ExitStack() as stack:
        cluster = LocalCluster(work / "cluster", clock=SystemClock(), config=SIMULATION).start()
        stack.callback(cluster.stop)
        headers = {"Authorization": f"Bearer {cluster.token}"}
        with httpx.Client(headers=headers) as http:  # the Leases' namespace, as deploy/ makes it
            http.post(f"{cluster.url}/api/v1/namespaces", json={"metadata": {"name": "gitdeploy-system"}})
        began = time.perf_counter()
        started = [
            stack.enter_context(replica(name, repo, cluster, work, "--resync-interval", resync))
            for name in NAMES[:replicas]
        ]
        bases = [base for base, _ in started]
        print(f"{replicas} replica(s): deploying {apps} apps ...", file=sys.stderr, flush=True)
        wait_until_synced(bases, apps, limit=max(600.0, apps * 0.5))
        cold = time.perf_counter() - began
        rss = [round(peak_rss_mib(pid_of(identity)), 1) for _, identity in started]
        print(f"  Synced after {cold:.1f} s; peak RSS {rss} MiB", file=sys.stderr, flush=True)
        latencies = push_latencies(repo, cluster, started[0], {i for _, i in started}, rounds)
        result: dict[str, object] = {
            "scenario": "sharding-scale",
            "replicas": replicas,
            "apps": apps,
            "cold_reconcile_s": round(cold, 1),
            "peak_rss_mib": rss,
            "resync_interval": resync,
            "push_rounds": len(latencies),
            "push_p50_ms": round(percentile(latencies, 50), 1),
            "push_max_ms": round(max(latencies), 1),
            "push_ms": sorted(round(ms, 1) for ms in latencies),
        }
        print(f"  push p50 {result['push_p50_ms']} ms", file=sys.stderr, flush=True)
        if replicas > 1:
            adapter = Cluster(connect(cluster.kubeconfig_path).api)
            owning, asked, claimed = failover_seconds(started, repo, adapter, limit=600.0)
            result["failover_s"], result["claims_written_s"] = round(owning, 1), round(claimed, 1)
            result["failover_scrapes_began_s"] = round(asked, 1)
            result["lease_duration_s"] = LEASE_DURATION_S
            print(
                f"  failover {owning:.1f} s (the scrapes that said so began at {asked:.1f} s), "
                f"claims written {claimed:.1f} s",
                file=sys.stderr,
                flush=True,
            )
        result["peak_rss_at_end_mib"] = [
            round(peak_rss_mib(pid_of(identity)), 1) for _, identity in started[1 if replicas > 1 else 0 :]
        ]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=30_000)
    parser.add_argument(
        "--replicas", type=int, nargs="+", default=[1, 2, 3], choices=range(1, len(NAMES) + 1)
    )
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--resync-interval", default="300s", help="the replicas' (default: run's, 300s)")
    parser.add_argument(
        "--keep", type=Path, metavar="DIR", help="work in DIR and keep it (the replicas' logs and states)"
    )
    args = parser.parse_args(argv)
    results = []
    with ExitStack() as stack:
        if args.keep is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="gitdeploy-sharding-scale-"))
        else:
            args.keep.mkdir(parents=True)
            tmp = str(args.keep)
        print(f"generating a config repo of {args.apps} apps ...", file=sys.stderr, flush=True)
        repo = generate_repo(Path(tmp), args.apps, args.seed)
        for count in args.replicas:
            work = Path(tmp) / f"replicas-{count}"
            work.mkdir()
            results.append(measure(repo, work, count, args.rounds, args.resync_interval))
            print(json.dumps(results[-1]), flush=True)
    columns = ("replicas", "cold s", "peak RSS MiB (each)", "push p50/max ms", "failover s", "claims s")
    print("   ".join(columns))
    for r in results:
        cells = (
            r["replicas"],
            r["cold_reconcile_s"],
            r["peak_rss_mib"],
            f"{r['push_p50_ms']}/{r['push_max_ms']}",
            r.get("failover_s", "-"),
            r.get("claims_written_s", "-"),
        )
        print("   ".join(f"{cell!s:>{len(name)}}" for cell, name in zip(cells, columns, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
