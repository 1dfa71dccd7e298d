"""Push-to-first-write latency across sharded replicas: a signed GitHub push delivered to ONE of
three ``gitdeploy run --sharding`` replicas, timed to the first ReplicaSet write for an app owned by
ANOTHER replica (which hears of the commit only through the head announcement Lease it watches).

Setup as ``bench/push_latency.py``: a generated config repo of N apps, an embedded cluster in this
process (plain HTTP, real clock, pods ready after 50 ms), and the real ``gitdeploy run`` command,
here three of them with ``--sharding``, each with its own state dir (its own git mirror, as a pod
has), ``--interval 1h`` (so nothing but the webhook and the announcement can make one fetch),
``--listen`` and ``--webhook-secret-file``. Once every app is Synced, each round commits an image
bump of one app that replica ``a`` does not own (its record's shard claim says who does), opens a
watch on that app's ReplicaSets, and POSTs the signed push to ``a``. The latency runs from just
before the POST to the first watch event: it includes the webhook, ``a``'s announcement write, the
owner's watch of the announcement, the owner's own fetch, the diff and the step. Alternate rounds
push an app replica ``a`` owns itself: the same push path without the announcement, under the same
load, for comparison (``receiver_own_app_*``).

Prints one JSON line, then a human line::

    python bench/push_fanout.py [--apps 300] [--rounds 30]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.generate import GeneratedRepo, generate_repo
from bench.push_latency import (
    SIMULATION,
    _synced_apps,
    percentile,
    push_to_first_write_ms,
    running,
)
from gitdeploy.clock import SystemClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.cluster.connection import connect
from gitdeploy.core.history.records import AppRecord
from gitdeploy.localcluster import LocalCluster

SCENARIO = "push-fan-out"
REPLICAS = ("a", "b", "c")


@contextmanager
def replica(
    name: str, repo: GeneratedRepo, cluster: LocalCluster, work: Path, *extra: str
) -> Iterator[tuple[str, str]]:
    """One ``gitdeploy run --sharding [extra]``; yields its base URL and identity once it answers."""
    with running(repo, cluster, work, name, "--sharding", *extra) as (base, log_path):
        for _ in range(600):
            found = re.search(r"sharding: member (\S+) \(lease", log_path.read_text())
            if found:
                yield base, found.group(1)
                return
            time.sleep(0.1)
        raise SystemExit(f"gitdeploy run {name} never said its member identity: see {log_path}")


def wait_until_synced(bases: list[str], apps: int, limit: float) -> float:
    """Seconds until every app is Synced (each replica counts the apps it holds: summed). A replica
    busy with thousands of apps may answer a scrape late: it is asked again."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        try:
            if sum(_synced_apps(base)[0] for base in bases) >= apps:
                return time.perf_counter() - started
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    raise SystemExit(f"not every app Synced after {limit:.0f} s")


def owner(adapter: Cluster, namespace: str, app: str) -> str:
    stored = adapter.read_app_record(namespace, app)
    claim = AppRecord.from_json(stored.payload).shard if stored is not None else None
    return claim.owner if claim is not None else ""


def measure(apps: int, rounds: int, seed: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="gitdeploy-fanout-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        repo = generate_repo(work, apps, seed)
        cluster = LocalCluster(work / "cluster", clock=SystemClock(), config=SIMULATION).start()
        stack.callback(cluster.stop)
        headers = {"Authorization": f"Bearer {cluster.token}"}
        with httpx.Client(headers=headers) as http:  # the Lease's namespace, as deploy/ makes it
            http.post(f"{cluster.url}/api/v1/namespaces", json={"metadata": {"name": "gitdeploy-system"}})
        started = [stack.enter_context(replica(name, repo, cluster, work)) for name in REPLICAS]
        bases = [base for base, _ in started]
        receiver, identities = bases[0], {identity for _, identity in started}
        adapter = Cluster(connect(cluster.kubeconfig_path).api)
        http = stack.enter_context(httpx.Client(headers=headers))
        hooks = stack.enter_context(httpx.Client(timeout=10))
        print(f"deploying {apps} apps with 3 sharded replicas ...", file=sys.stderr, flush=True)
        deploy_s = wait_until_synced(bases, apps, limit=max(180.0, apps * 0.5))
        owned_by = {index: owner(adapter, plan.namespace, plan.name) for index, plan in enumerate(repo.apps)}
        others = [index for index, who in owned_by.items() if who in identities - {started[0][1]}]
        own = [index for index, who in owned_by.items() if who == started[0][1]]
        print(
            f"  all Synced after {deploy_s:.1f} s; {rounds} pushes to replica a", file=sys.stderr, flush=True
        )
        # alternately an app another replica owns (the figure) and one of a's own (the same push
        # path without the announcement, under the same load: the comparison)
        chosen: list[tuple[int, bool]] = []
        for fanned_out, own_app in zip(others[:rounds], own[:rounds], strict=False):
            chosen += [(fanned_out, True), (own_app, False)]
        latencies: list[float] = []
        own_latencies: list[float] = []
        for index, fanned_out in chosen:
            latency = push_to_first_write_ms(cluster, http, hooks, receiver, repo, index)
            (latencies if fanned_out else own_latencies).append(latency)
    p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
    return {
        "scenario": SCENARIO,
        "replicas": len(REPLICAS),
        "apps": apps,
        "rounds": len(latencies),
        "p50_ms": round(p50, 1),
        "p99_ms": round(p99, 1),
        "max_ms": round(max(latencies), 1),
        "receiver_own_app_p50_ms": round(percentile(own_latencies, 50), 1),
        "receiver_own_app_p99_ms": round(percentile(own_latencies, 99), 1),
        "initial_deploy_s": round(deploy_s, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    result = measure(args.apps, args.rounds, args.seed)
    print(json.dumps(result), flush=True)
    print(
        f"push fan-out, 3 replicas, {result['apps']} apps, {result['rounds']} pushes to replica a for "
        f"apps another replica owns: push to first write p50 {result['p50_ms']} ms, "
        f"p99 {result['p99_ms']} ms, max {result['max_ms']} ms (apps of replica a itself: p50 "
        f"{result['receiver_own_app_p50_ms']} ms, p99 {result['receiver_own_app_p99_ms']} ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
