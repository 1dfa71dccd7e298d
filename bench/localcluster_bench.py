"""Benchmark of the embedded cluster: sustained scale writes and list latency with 10,000 ReplicaSets.

Run: ``.venv/bin/python bench/localcluster_bench.py [--replicasets N] [--writes N]``. It starts the
daemon on a temporary state directory (HTTPS, as users run it), loads N ReplicaSets straight into
the database, then measures through the official client and raw HTTP. Prints one JSON line per
figure, then a short table. Not a test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from kubernetes import client as kubernetes_client

from gitdeploy.clock import SystemClock
from gitdeploy.localcluster import SimulationConfig, ensure_running, stop
from gitdeploy.localcluster.daemon import ssl_context
from gitdeploy.localcluster.registry import Registry
from gitdeploy.localcluster.resources import NAMESPACES, REPLICASETS
from gitdeploy.localcluster.store import Store

client: Any = kubernetes_client
NAMESPACE = "bench"


def replicaset(name: str) -> dict[str, Any]:
    labels = {"app": name, "app.kubernetes.io/managed-by": "gitdeploy"}
    return {
        "metadata": {"name": name, "labels": labels, "annotations": {"gitdeploy.io/revision": "1"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "main", "image": "registry.local/app:1", "ports": [{"containerPort": 80}]}
                    ]
                },
            },
        },
    }


def load(state_dir: Path, count: int) -> None:
    store = Store(state_dir / "cluster.db")
    registry = Registry(store, SystemClock(), SimulationConfig())
    registry.create(NAMESPACES, "", {"metadata": {"name": NAMESPACE}})
    for index in range(count):
        registry.create(REPLICASETS, NAMESPACE, replicaset(f"app-{index:05d}"))
    store.close()


def api_client(state_dir: Path, url: str) -> Any:
    configuration = client.Configuration()
    configuration.host = url
    configuration.api_key = {"authorization": "Bearer " + (state_dir / "token").read_text().strip()}
    configuration.ssl_ca_cert = str(state_dir / "tls.crt")
    return client.ApiClient(configuration)


def scale_writes(state_dir: Path, url: str, writes: int, threads: int) -> float:
    per_thread = writes // threads

    def work(offset: int) -> None:
        api = api_client(state_dir, url)
        apps = client.AppsV1Api(api)
        for index in range(per_thread):
            name = f"app-{(offset * 1000 + index // 2) % 10_000:05d}"
            apps.patch_namespaced_replica_set_scale(name, NAMESPACE, {"spec": {"replicas": (index + 1) % 2}})
        api.close()

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return per_thread * threads / (time.perf_counter() - started)


def raw_list_seconds(state_dir: Path, url: str, rounds: int = 5) -> tuple[float, int]:
    token = (state_dir / "token").read_text().strip()
    timings = []
    size = 0
    for _ in range(rounds):
        request = urllib.request.Request(
            f"{url}/apis/apps/v1/namespaces/{NAMESPACE}/replicasets",
            headers={"Authorization": f"Bearer {token}"},
        )
        started = time.perf_counter()
        with urllib.request.urlopen(request, context=ssl_context(state_dir)) as response:
            body = response.read()
        items = len(json.loads(body)["items"])
        timings.append(time.perf_counter() - started)
        size = items
    return statistics.median(timings), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--replicasets", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=2_000)
    args = parser.parse_args()
    figures: list[tuple[str, float, str, bool]] = []
    with tempfile.TemporaryDirectory(prefix="gitdeploy-bench-") as temporary:
        state_dir = Path(temporary)
        started = time.perf_counter()
        load(state_dir, args.replicasets)
        load_seconds = time.perf_counter() - started
        info = ensure_running(state_dir)
        try:
            rate = scale_writes(state_dir, info.url, args.writes, threads=1)
            figures.append(("scale_writes_per_second_1_client", rate, ">= 200", rate >= 200))
            rate = scale_writes(state_dir, info.url, args.writes, threads=2)
            figures.append(("scale_writes_per_second_2_clients", rate, ">= 200", rate >= 200))
            seconds, items = raw_list_seconds(state_dir, info.url)
            assert items == args.replicasets
            figures.append(("list_replicasets_http_seconds", seconds, "< 1", seconds < 1))
            api = api_client(state_dir, info.url)
            started = time.perf_counter()
            listed = client.AppsV1Api(api).list_namespaced_replica_set(NAMESPACE)
            client_seconds = time.perf_counter() - started
            api.close()
            assert len(listed.items) == args.replicasets
            figures.append(("list_replicasets_official_client_seconds", client_seconds, "info", True))
            figures.append(("load_replicasets_direct_seconds", load_seconds, "info", True))
        finally:
            stop(state_dir)
    for name, value, target, ok in figures:
        print(json.dumps({"figure": name, "value": round(value, 4), "target": target, "ok": ok}))
    print()
    print(f"{'figure':44} {'value':>10}  {'target':>8}  ok")
    for name, value, target, ok in figures:
        print(f"{name:44} {value:10.3f}  {target:>8}  {'yes' if ok else 'NO'}")


if __name__ == "__main__":
    main()
