"""The embedded cluster's CPU per request, by request kind: ``python bench/cluster_requests.py``.

Runs the cluster in a process of its own (as the daemon does; plain HTTP unless ``--tls``) with
pods ready 0.2 s after they start on the system clock, keeps two watches open on each of
``--namespaces`` namespaces (its ReplicaSets and ConfigMaps, as ``gitdeploy run`` does), and
replays through the official client what a rollout of ``--apps`` apps (spread over them) sends:
app records created and replaced, ReplicaSets created and merge-patched (replicas and
annotations, which makes the simulated ReplicaSet controller create and delete pods), events
created, reads of a record, lists of a namespace and of one app. Responses are read, so
connections are reused as gitdeploy's are. Each kind runs as its own phase; the cluster
process's CPU time (``/proc``) over the phase, divided by the requests sent, is the figure
printed. ``--profile FILE`` writes a cProfile (CPU time) of the cluster's request threads and
simulated kubelet (``python -m pstats FILE``). Not a test; the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import json
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/cluster_requests.py``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import urllib3
from kubernetes import client

from bench.run import daemon_client, process_cpu_seconds
from gitdeploy.localcluster import LocalCluster, SimulationConfig
from gitdeploy.localcluster import server as localcluster_server
from gitdeploy.localcluster.kubelet import Kubelet

APP_LABEL = "gitdeploy.io/app"


def serve(state_dir: Path, profile: Path | None, tls: bool) -> None:
    """The cluster process: serve until stdin closes, then write the merged profile."""
    profiles: list[cProfile.Profile] = []

    def profiled(run: Callable[[Any], None]) -> Callable[[Any], None]:
        def wrapper(self: Any) -> None:
            profiler = cProfile.Profile(time.thread_time)  # CPU, not waits
            profiler.enable()
            try:
                run(self)
            finally:
                profiler.disable()
                profiles.append(profiler)

        return wrapper

    if profile is not None:  # the request threads and the simulated kubelet's
        handler: Any = localcluster_server._Handler
        handler.handle = profiled(handler.handle)
        kubelet_class: Any = Kubelet
        kubelet_class._run = profiled(kubelet_class._run)
    cluster = LocalCluster(state_dir, config=SimulationConfig(pod_start_seconds=0.2), tls=tls).start()
    print(cluster.url, flush=True)
    sys.stdin.read()
    cluster.stop()
    if profile is not None:
        time.sleep(0.5)  # the request threads end once their connections are closed
        stats = pstats.Stats(profiles[0])
        for other in profiles[1:]:
            stats.add(other)
        stats.dump_stats(profile)


def _template(app: str, image: str) -> dict[str, Any]:
    env = [{"name": f"SETTING_{n}", "value": f"value-{n}-{app}"} for n in range(12)]
    return {
        "metadata": {"labels": {"app": app, APP_LABEL: app}, "annotations": {"team": "payments"}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": image,
                    "env": env,
                    "ports": [{"containerPort": 8080, "name": "http"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}},
                }
            ]
        },
    }


def _replica_set(app: str) -> dict[str, Any]:
    """As gitdeploy creates one: gitdeploy's labels only, no owner (the record owns nothing)."""
    labels = {APP_LABEL: app, "app.kubernetes.io/managed-by": "gitdeploy"}
    return {
        "metadata": {
            "name": f"{app}-5d8f7c9b6",
            "labels": labels,
            "annotations": {"gitdeploy.io/revision": "1", "gitdeploy.io/commit": "0" * 40},
        },
        "spec": {
            "replicas": 1,
            "minReadySeconds": 0,
            "selector": {"matchLabels": {"app": app}},
            "template": _template(app, "registry.local/shop/app:1.0"),
        },
    }


def _record(app: str, revision: int, rv: str | None = None) -> dict[str, Any]:
    log = [
        {"revision": n, "commit": "0" * 40, "cause": "ConfigChange", "author": "a"} for n in range(revision)
    ]
    meta: dict[str, Any] = {
        "name": f"gitdeploy.{app}",
        "labels": {"gitdeploy.io/record": "true", APP_LABEL: app},
    }
    if rv is not None:
        meta["resourceVersion"] = rv
    return {"metadata": meta, "data": {"record": json.dumps({"revisions": log, "pad": "x" * 1500})}}


class Driver:
    """The client side: one official client, the phases, and the watches (each its own client)."""

    def __init__(self, state_dir: Path, url: str, apps: int, namespaces: int, pid: int) -> None:
        self.state_dir, self.url = state_dir, url
        self.api = daemon_client(state_dir, url)
        self.core: Any = client.CoreV1Api(self.api)
        self.apps_api: Any = client.AppsV1Api(self.api)
        self.names = [f"app-{n:04d}" for n in range(apps)]
        self.ns = {name: f"bench-{n % namespaces}" for n, name in enumerate(self.names)}
        self.namespaces = sorted(set(self.ns.values()))
        self.pid = pid
        self.record_rvs: dict[str, str] = {}
        self.watched = 0
        self.results: list[dict[str, Any]] = []

    def watch(self, call: Callable[..., Any], namespace: str) -> None:
        api = daemon_client(self.state_dir, self.url)
        response = call(api)(namespace, watch=True, _preload_content=False, timeout_seconds=3600)
        with contextlib.suppress(urllib3.exceptions.HTTPError):  # the cluster stops at the end
            for _line in response:
                self.watched += 1

    def phase(self, kind: str, requests: list[Callable[[], Any]]) -> None:
        """Send ``requests`` (each returns an unread response, or None when it read its own)."""
        cpu, wall = process_cpu_seconds(self.pid), time.perf_counter()
        for request in requests:
            response = request()
            if response is not None:
                response.data  # noqa: B018  read, so that the connection is reused (as gitdeploy does)
        cpu, wall = process_cpu_seconds(self.pid) - cpu, time.perf_counter() - wall
        self.results.append(
            {
                "kind": kind,
                "requests": len(requests),
                "server_cpu_ms_per_request": round(1000 * cpu / len(requests), 3),
                "wall_ms_per_request": round(1000 * wall / len(requests), 3),
            }
        )

    def run(self) -> None:
        self.open_watches()
        self.write_phases()
        self.read_phases()
        self.idle_phase()

    def open_watches(self) -> None:
        """Each namespace, with a watch of its ReplicaSets and one of its ConfigMaps."""
        for namespace in self.namespaces:
            self.core.create_namespace({"metadata": {"name": namespace}})
            for call in (
                lambda api: client.AppsV1Api(api).list_namespaced_replica_set,
                lambda api: client.CoreV1Api(api).list_namespaced_config_map,
            ):
                threading.Thread(target=self.watch, args=(call, namespace), daemon=True).start()
        time.sleep(0.5)

    def each(self, request: Callable[[str], Any]) -> list[Callable[[], Any]]:
        return [functools.partial(request, app) for app in self.names]

    def create_record(self, app: str) -> Any:
        created = self.core.create_namespaced_config_map(
            self.ns[app], _record(app, 1), _preload_content=False
        )
        self.record_rvs[app] = json.loads(created.data)["metadata"]["resourceVersion"]
        return None

    def replace_record(self, app: str, revision: int) -> Any:
        body = _record(app, revision, self.record_rvs[app])
        response = self.core.replace_namespaced_config_map(
            f"gitdeploy.{app}", self.ns[app], body, _preload_content=False
        )
        self.record_rvs[app] = json.loads(response.data)["metadata"]["resourceVersion"]
        return None

    def patch_rs(self, app: str, replicas: int, revision: int) -> Any:
        patch = {
            "spec": {"replicas": replicas},
            "metadata": {"annotations": {"gitdeploy.io/phase": f"Running{revision}"}},
        }
        return self.apps_api.patch_namespaced_replica_set(
            f"{app}-5d8f7c9b6",
            self.ns[app],
            patch,
            _preload_content=False,
            _content_type="application/merge-patch+json",
        )

    def event(self, app: str) -> Any:
        body = {
            "metadata": {"generateName": f"gitdeploy.{app}.", "namespace": self.ns[app]},
            "involvedObject": {
                "kind": "ConfigMap",
                "name": f"gitdeploy.{app}",
                "namespace": self.ns[app],
            },
            "reason": "RolloutStep",
            "message": f"scaled {app}-5d8f7c9b6 to 2",
            "type": "Normal",
            "source": {"component": "gitdeploy"},
            "count": 1,
        }
        return self.core.create_namespaced_event(self.ns[app], body, _preload_content=False)

    def write_phases(self) -> None:
        """What a rollout writes: records, ReplicaSets (and so pods), events."""
        apps, each = self.apps_api, self.each
        self.phase("create configmap (app record)", each(self.create_record))
        self.phase(
            "create replicaset (1 pod)",
            each(
                lambda a: apps.create_namespaced_replica_set(
                    self.ns[a], _replica_set(a), _preload_content=False
                )
            ),
        )
        time.sleep(0.5)
        self.phase("patch replicaset 1→2 (+1 pod)", each(lambda a: self.patch_rs(a, 2, 2)))
        time.sleep(0.5)
        self.phase("patch replicaset 2→1 (−1 pod)", each(lambda a: self.patch_rs(a, 1, 3)))
        self.phase("patch replicaset annotations only", each(lambda a: self.patch_rs(a, 1, 4)))
        self.phase("replace configmap (app record)", each(lambda a: self.replace_record(a, 3)))
        self.phase("create event", each(self.event))

    def read_phases(self) -> None:
        """What a pass reads: a record, one app's ReplicaSets, a namespace's."""
        core, apps, each = self.core, self.apps_api, self.each
        self.phase(
            "get configmap",
            each(
                lambda a: core.read_namespaced_config_map(
                    f"gitdeploy.{a}", self.ns[a], _preload_content=False
                )
            ),
        )
        self.phase(
            "list replicasets of one app",
            each(
                lambda a: apps.list_namespaced_replica_set(
                    self.ns[a], label_selector=f"{APP_LABEL}={a}", _preload_content=False
                )
            ),
        )
        first = self.namespaces[0]
        self.phase(
            f"list replicasets of a namespace ({sum(ns == first for ns in self.ns.values())})",
            [lambda: apps.list_namespaced_replica_set(first, _preload_content=False)] * 20,
        )

    def idle_phase(self) -> None:
        """The cluster's CPU over 2 s with nothing sent but the watches open."""
        cpu = process_cpu_seconds(self.pid)
        time.sleep(2.0)
        self.results.append(
            {
                "kind": f"idle, {2 * len(self.namespaces)} watches open (CPU ms per s)",
                "requests": 0,
                "server_cpu_ms_per_request": round(1000 * (process_cpu_seconds(self.pid) - cpu) / 2.0, 3),
                "wall_ms_per_request": 0,
            }
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--namespaces", type=int, default=1, help="apps spread over N, 2 watches each")
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve, args.profile, args.tls)
        return
    with tempfile.TemporaryDirectory(prefix="cluster-requests-") as work:
        command = [sys.executable, __file__, "--serve", work] + (["--tls"] if args.tls else [])
        if args.profile is not None:
            command += ["--profile", str(args.profile.resolve())]
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert process.stdin is not None and process.stdout is not None
        url = process.stdout.readline().strip()
        driver = Driver(Path(work), url, args.apps, args.namespaces, process.pid)
        try:
            driver.run()
        finally:
            process.stdin.close()
            process.wait(timeout=60)
    total = sum(r["requests"] for r in driver.results)
    print(
        json.dumps(
            {"apps": args.apps, "requests": total, "watch_events": driver.watched, "kinds": driver.results}
        )
    )
    width = max(len(r["kind"]) for r in driver.results)
    print(f"{'request kind':{width}}  {'n':>5}  server CPU ms/req  wall ms/req")
    for r in driver.results:
        cpu, wall = r["server_cpu_ms_per_request"], r["wall_ms_per_request"]
        print(f"{r['kind']:{width}}  {r['requests']:>5}  {cpu:>17.3f}  {wall:>11.3f}")


if __name__ == "__main__":
    main()
