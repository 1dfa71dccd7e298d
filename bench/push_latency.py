"""Push-to-scale latency: from a signed GitHub push delivered to ``gitdeploy run``'s webhook to the
first ReplicaSet write for the app the push changed.

Setup: a generated config repo of N apps (``bench/generate.py``), an embedded cluster in this
process (plain HTTP, real clock, pods ready after 50 ms), and the real ``gitdeploy run`` command in a
subprocess with ``--interval 1h`` (so only the webhook can make it fetch), ``--listen`` and
``--webhook-secret-file``. It first deploys every app; once all are Synced, each round commits an
image bump of one app, opens a watch on that app's ReplicaSets, and POSTs the signed push. The
latency is from just before the POST to the first watch event (the new ReplicaSet created or an
existing one scaled), so it includes the webhook round trip, the fetch, the diff, parsing the
changed manifest, the namespace lists and the step, plus the watch's own delivery (well under a
millisecond in process). ``poll_p50_ms`` is the git part alone (the push's poll as
``gitdeploy_source_poll_duration_seconds`` measured it).

Prints one JSON line, then a human line::

    python bench/push_latency.py [--apps 1000] [--rounds 30]
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.generate import GeneratedRepo, generate_repo
from gitdeploy.clock import SystemClock
from gitdeploy.localcluster import LocalCluster, SimulationConfig
from gitdeploy.server.webhook import github_signature

SCENARIO = "push-to-scale"
TARGET = "p50<=100ms,p99<=300ms"
SECRET = b"bench-webhook-secret"
SIMULATION = SimulationConfig(pod_start_seconds=0.05, job_seconds=0.1)


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _gitdeploy() -> str:
    beside = Path(sys.executable).parent / "gitdeploy"
    return str(beside) if beside.exists() else "gitdeploy"


def _samples(base: str, family_name: str) -> list[Sample]:
    """The samples of one metric family on ``gitdeploy run``'s /metrics."""
    text = httpx.get(f"{base}/metrics", timeout=10).text
    return [
        sample
        for family in text_string_to_metric_families(text)
        if family.name == family_name
        for sample in family.samples
    ]


def _synced_apps(base: str) -> tuple[int, dict[str, float]]:
    """How many apps ``gitdeploy run`` reports Synced, and every sync state's count."""
    states = {s.labels["state"]: s.value for s in _samples(base, "gitdeploy_apps_sync_state")}
    return int(states.get("Synced", 0)), states


def _polls(base: str) -> tuple[float, float]:
    """How many polls of the repo ``gitdeploy run`` made, and the seconds they took in all."""
    found = {s.name: s.value for s in _samples(base, "gitdeploy_source_poll_duration_seconds")}
    return found["gitdeploy_source_poll_duration_seconds_count"], found[
        "gitdeploy_source_poll_duration_seconds_sum"
    ]


@contextmanager
def gitdeploy_run(repo: GeneratedRepo, cluster: LocalCluster, work: Path) -> Iterator[str]:
    """``gitdeploy run`` against ``cluster``; yields its base URL once it answers."""
    with running(repo, cluster, work, "run") as (base, _log):
        yield base


@contextmanager
def running(
    repo: GeneratedRepo, cluster: LocalCluster, work: Path, name: str, *extra: str
) -> Iterator[tuple[str, Path]]:
    """``gitdeploy run [extra]`` named ``name`` (its state and log in ``work``), polling git only
    hourly and taking signed webhooks; yields its base URL and log once /healthz answers."""
    secret = work / "webhook-secret"
    secret.write_bytes(SECRET)
    port = _free_port()
    command = [
        _gitdeploy(),
        "--state-dir",
        str(work / f"state-{name}"),
        "--kubeconfig",
        str(cluster.kubeconfig_path),
        "run",
        *extra,
        "--repo",
        repo.url,
        "--interval",
        "1h",
        "--listen",
        f"127.0.0.1:{port}",
        "--webhook-secret-file",
        str(secret),
    ]
    log_path = work / f"{name}.log"
    log = log_path.open("w")  # shown when it fails
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                if process.poll() is not None:
                    raise SystemExit(f"gitdeploy run {name} exited: see {log_path}") from None
            time.sleep(0.1)
        yield base, log_path
    except BaseException:
        print(log_path.read_text()[-3000:], file=sys.stderr)
        raise
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def wait_until_synced(base: str, apps: int, limit: float) -> float:
    """Seconds until every app is Synced (fails after ``limit``)."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        synced, states = _synced_apps(base)
        if synced >= apps:
            return time.perf_counter() - started
        time.sleep(0.25)
    raise SystemExit(f"not every app Synced after {limit:.0f} s: {states}")


class ReplicaSetWatch:
    """A watch on one app's ReplicaSets from the current resourceVersion, read on a thread;
    ``seen`` is set (and ``at`` stamped) on its first event.

    The embedded cluster answers a watch's headers only with its first event, so the request is
    sent on the thread and given a head start: it replays from the listed resourceVersion, so an
    event is never missed, at worst seen a little late (which only inflates the figure).
    """

    HEAD_START = 0.05

    def __init__(self, cluster: LocalCluster, http: httpx.Client, namespace: str, app: str) -> None:
        path = f"{cluster.url}/apis/apps/v1/namespaces/{namespace}/replicasets"
        selector = {"labelSelector": f"gitdeploy.io/app={app}"}
        version = http.get(path, params=selector).json()["metadata"]["resourceVersion"]
        self.seen = threading.Event()
        self.at = 0.0
        params = {**selector, "watch": "true", "resourceVersion": version, "timeoutSeconds": "30"}
        self._thread = threading.Thread(target=self._read, args=(http, path, params), daemon=True)
        self._thread.start()
        time.sleep(self.HEAD_START)

    def _read(self, http: httpx.Client, path: str, params: dict[str, str]) -> None:
        with http.stream("GET", path, params=params, timeout=httpx.Timeout(40.0)) as response:
            for line in response.iter_lines():
                if line.strip():
                    self.at = time.perf_counter()
                    self.seen.set()
                    return

    def close(self) -> None:
        self._thread.join(40)


def deliver_push(hooks: httpx.Client, base: str, repo_url: str, after: str) -> int:
    """POST a signed GitHub push of ``after``. ``hooks`` is made before the clock starts: building an
    httpx client loads a CA bundle (about 17 ms), which is the sender's cost, not gitdeploy's."""
    payload = {"ref": "refs/heads/main", "after": after, "repository": {"clone_url": repo_url}}
    body = json.dumps(payload).encode()
    headers = {
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": after,
        "X-Hub-Signature-256": github_signature(body, SECRET),
        "Content-Type": "application/json",
    }
    return hooks.post(f"{base}/hooks/git", content=body, headers=headers).status_code


def push_to_first_write_ms(
    cluster: LocalCluster,
    http: httpx.Client,
    hooks: httpx.Client,
    base: str,
    repo: GeneratedRepo,
    index: int,
    wait: float = 30.0,
) -> float:
    """Commit an image bump of app ``index``, POST its push to ``base``, and return the milliseconds
    from the POST to the first write of the app's ReplicaSets; then let the rollout's first steps
    pass. ``http`` reads the cluster, ``hooks`` sends the push (see :func:`deliver_push`); no write
    within ``wait`` seconds ends the benchmark."""
    plan = repo.apps[index]
    after = repo.commit_image_bump(index)
    watch = ReplicaSetWatch(cluster, http, plan.namespace, plan.name)
    try:
        started = time.perf_counter()
        status = deliver_push(hooks, base, repo.url, after)
        if status != 200 or not watch.seen.wait(wait):
            raise SystemExit(f"push {after[:7]} of {plan.name}: {status}, no ReplicaSet write")
        latency = (watch.at - started) * 1000
    finally:
        watch.close()
    time.sleep(0.2)
    return latency


def measure(apps: int, rounds: int, seed: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="gitdeploy-push-") as tmp:
        work = Path(tmp)
        repo = generate_repo(work, apps, seed)
        cluster = LocalCluster(work / "cluster", clock=SystemClock(), config=SIMULATION).start()
        headers = {"Authorization": f"Bearer {cluster.token}"}
        try:
            with httpx.Client(headers=headers) as http:  # the Lease's namespace, as deploy/ makes it
                http.post(f"{cluster.url}/api/v1/namespaces", json={"metadata": {"name": "gitdeploy-system"}})
            with (
                gitdeploy_run(repo, cluster, work) as base,
                httpx.Client(headers=headers) as http,
                httpx.Client(timeout=10) as hooks,
            ):
                print(f"deploying {apps} apps with gitdeploy run ...", file=sys.stderr, flush=True)
                deploy_s = wait_until_synced(base, apps, limit=max(120.0, apps * 0.5))
                print(f"  all Synced after {deploy_s:.1f} s; {rounds} pushes", file=sys.stderr, flush=True)
                latencies, polls = [], []
                chosen = random.Random(seed).sample(range(apps), min(rounds, apps))
                for index in chosen:
                    polled = _polls(base)
                    latencies.append(push_to_first_write_ms(cluster, http, hooks, base, repo, index))
                    count, seconds = _polls(base)
                    if count == polled[0] + 1:  # the push's poll alone (git, not the load)
                        polls.append((seconds - polled[1]) * 1000)
        finally:
            cluster.stop()
    p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
    return {
        "scenario": SCENARIO,
        "apps": apps,
        "rounds": len(latencies),
        "p50_ms": round(p50, 1),
        "p99_ms": round(p99, 1),
        "max_ms": round(max(latencies), 1),
        "poll_p50_ms": round(percentile(polls, 50), 1) if polls else None,
        "initial_deploy_s": round(deploy_s, 1),
        "target": TARGET,
        "ok": p50 <= 100 and p99 <= 300,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    result = measure(args.apps, args.rounds, args.seed)
    print(json.dumps(result), flush=True)
    verdict = "ok" if result["ok"] else "MISSED"
    print(
        f"push-to-scale, {result['apps']} apps, {result['rounds']} pushes: p50 {result['p50_ms']} ms, "
        f"p99 {result['p99_ms']} ms (target {TARGET}: {verdict}); git poll p50 {result['poll_p50_ms']} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
