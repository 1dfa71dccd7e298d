"""gitdeploy's benchmarks (issue 11): ``python bench/run.py [SCENARIO ...] [--apps N] [--json-only]``.

Runs the named scenarios (default: all) and prints one JSON object per scenario on its own line,
``{"scenario", "apps", <figures...>, "target", "ok"}``, then a table. ``ok`` is null when a
scenario has no target of its own or cannot run yet (``"skipped"`` says why). Not a test: the
figures depend on the machine, and no test asserts on them. Exit status 1 when a target is missed.

A scenario is one function registered with :func:`scenario`; it gets a :class:`Bench` (the app
count, a generated config repository shared by the scenarios of one run, a work and a cache
directory) and returns a :class:`Measured`. Times are wall-clock milliseconds (``*_ms``) or
seconds (``*_s``), medians and 99th percentiles (nearest rank) over ``rounds``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/run.py``: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubernetes import client as kubernetes_client
from rich.console import Console
from rich.table import Table

from bench.clusterstate import api_client_for, running_cluster
from bench.generate import GeneratedRepo, generate_repo
from gitdeploy.clock import SystemClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.desired import DesiredStateReader
from gitdeploy.core.blobcache import BlobCache
from gitdeploy.core.hashing import canonical_template, template_hash
from gitdeploy.localcluster import LocalCluster, SimulationConfig, ensure_running, stop
from gitdeploy.localcluster.daemon import ssl_context
from gitdeploy.localcluster.registry import Registry
from gitdeploy.localcluster.resources import NAMESPACES, REPLICASETS
from gitdeploy.localcluster.store import Store
from gitdeploy.manifests.documents import Document, ManifestFile, parse_documents
from gitdeploy.manifests.loader import FileAnalysis, analyse_file
from gitdeploy.manifests.schemas import iter_violations
from gitdeploy.source.repo import ConfigRepo

client: Any = kubernetes_client
NEEDS_LOOP = "needs the reconcile loop (issue 6)"


# -- measuring -----------------------------------------------------------------------------------


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile: the smallest value with at least ``pct``% of the values at or below it."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


def millis_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


def timed_ms(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return millis_since(started)


def spread(prefix: str, samples_ms: Sequence[float]) -> dict[str, float]:
    """``{prefix_median_ms, prefix_p99_ms, prefix_max_ms}`` of ``samples_ms``, rounded."""
    return {
        f"{prefix}median_ms": round(statistics.median(samples_ms), 2),
        f"{prefix}p99_ms": round(percentile(samples_ms, 99), 2),
        f"{prefix}max_ms": round(max(samples_ms), 2),
    }


@dataclass(frozen=True)
class PeakRss:
    exit_code: int
    peak_rss_mib: float
    seconds: float


def measure_peak_rss(
    command: Sequence[str], *, run_for: float | None = None, env: dict[str, str] | None = None
) -> PeakRss:
    """Run ``command`` and return its peak resident set size (``ru_maxrss`` of that child, via wait4).

    With ``run_for``, a long-running command (``gitdeploy run``) gets SIGTERM after that many
    seconds (SIGKILL 10 s later). The figure covers the child only, not its own children.
    """
    started = time.perf_counter()
    process = subprocess.Popen(list(command), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = None if run_for is None else started + run_for
    signalled_at: float | None = None
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG if deadline is not None else 0)
        if pid == process.pid:
            break
        now = time.perf_counter()
        if deadline is not None and now >= deadline and signalled_at is None:
            os.kill(process.pid, signal.SIGTERM)
            signalled_at = now
        elif signalled_at is not None and now - signalled_at > 10:
            os.kill(process.pid, signal.SIGKILL)
        time.sleep(0.05)
    process.returncode = os.waitstatus_to_exitcode(status)  # already reaped: keep Popen consistent
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    scale = 1 if sys.platform == "darwin" else 1024
    return PeakRss(process.returncode, usage.ru_maxrss * scale / 2**20, time.perf_counter() - started)


# -- the registry ---------------------------------------------------------------------------------


@dataclass
class Bench:
    """What a scenario works with. The generated repository is made once per run and shared."""

    apps: int
    seed: int
    work: Path
    cache_dir: Path
    rounds: int | None = None
    _repo: GeneratedRepo | None = field(default=None, repr=False)

    def repo(self) -> GeneratedRepo:
        if self._repo is None:
            log(f"generating a config repository of {self.apps} apps")
            started = time.perf_counter()
            self._repo = generate_repo(self.work / "remote", self.apps, self.seed)
            log(f"  … done in {time.perf_counter() - started:.1f} s")
        return self._repo

    def rounds_or(self, default: int) -> int:
        return self.rounds if self.rounds is not None else default

    def state_dir(self, name: str) -> Path:
        """A fresh gitdeploy state directory for one scenario."""
        path = self.work / "state" / name
        path.mkdir(parents=True, exist_ok=False)
        return path


@dataclass(frozen=True)
class Measured:
    """What a scenario found: figures for the JSON line, whether the target is met, a table summary."""

    figures: dict[str, Any]
    ok: bool | None
    summary: str


ScenarioFn = Callable[[Bench], Measured]


@dataclass(frozen=True)
class Scenario:
    name: str
    target: str
    run: ScenarioFn | None
    skipped: str | None = None


SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str, *, target: str) -> Callable[[ScenarioFn], ScenarioFn]:
    """Register ``fn`` as scenario ``name``; ``target`` is printed next to its figures."""

    def register(fn: ScenarioFn) -> ScenarioFn:
        SCENARIOS[name] = Scenario(name, target, fn)
        return fn

    return register


def not_yet(name: str, *, target: str, why: str = NEEDS_LOOP) -> None:
    """Register a scenario that cannot run yet: it reports ``"skipped"``, never a figure."""
    SCENARIOS[name] = Scenario(name, target, None, why)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def config_repo(bench: Bench, name: str) -> Iterator[ConfigRepo]:
    with ConfigRepo(bench.repo().url, ref="main", state_dir=bench.state_dir(name)) as repo:
        yield repo


@contextmanager
def empty_cluster(bench: Bench) -> Iterator[LocalCluster]:
    """An embedded cluster in process (plain HTTP) whose ``stats`` count every API request."""
    with LocalCluster(bench.work / "cluster" / str(time.monotonic_ns()), clock=SystemClock()) as cluster:
        yield cluster


# -- scenarios that run today ---------------------------------------------------------------------


@scenario("noop-poll", target="≤ 50 ms, 0 API requests, 0 files parsed")
def noop_poll(bench: Bench) -> Measured:
    """A poll with no new commit: what the loop's poll step does (ConfigRepo.poll; the desired
    state is re-read only when the head moved), on a warm reader, with an embedded cluster whose
    request counter must not move."""
    rounds = bench.rounds_or(200)
    with config_repo(bench, "noop-poll") as repo, empty_cluster(bench) as cluster:
        reader = DesiredStateReader(repo)
        last = repo.poll().head
        reader.load(last)  # the first sync, not measured here (see `cold`)
        api = api_client_for(cluster)
        Cluster(api).list_replica_sets()  # the loop's first snapshot, not measured either
        cluster.stats.reset()
        parsed_before = reader.files_parsed
        git_before = sum(repo.git_command_counts.values())
        samples = []
        for _ in range(rounds):
            started = time.perf_counter()
            head = repo.poll().head
            if head != last:
                reader.load(head)
                last = head
            samples.append(millis_since(started))
        api.close()
        requests = cluster.stats.total()
        parsed = reader.files_parsed - parsed_before
        git_per_poll = (sum(repo.git_command_counts.values()) - git_before) / rounds
    figures = {**spread("", samples), "rounds": rounds, "api_requests": requests, "files_parsed": parsed}
    figures["git_commands_per_poll"] = round(git_per_poll, 2)
    ok = figures["median_ms"] <= 50 and requests == 0 and parsed == 0
    return Measured(
        figures,
        ok,
        f"median {figures['median_ms']} ms, p99 {figures['p99_ms']} ms, {requests} requests, {parsed} parsed",
    )


@scenario("unrelated-commit", target="≤ 200 ms")
def unrelated_commit(bench: Bench) -> Measured:
    """A commit touching no manifest (a README change): poll (ls-remote + fetch) and load the
    desired state at the new head through the warm blob cache (a new ls-tree, no file parsed)."""
    rounds = bench.rounds_or(15)
    with config_repo(bench, "unrelated-commit") as repo:
        reader = DesiredStateReader(repo)
        reader.load(repo.poll().head)
        parsed_before = reader.files_parsed
        polls, loads, totals = [], [], []
        for _ in range(rounds):
            bench.repo().commit_unrelated()
            started = time.perf_counter()
            head = repo.poll().head
            polled = time.perf_counter()
            result = reader.load(head)
            totals.append(millis_since(started))
            polls.append((polled - started) * 1000)
            loads.append(millis_since(polled))
            assert len(result.apps) == bench.apps and result.ok
        parsed = reader.files_parsed - parsed_before
    figures = {
        **spread("", totals),
        "poll_median_ms": round(statistics.median(polls), 2),
        "load_median_ms": round(statistics.median(loads), 2),
        "rounds": rounds,
        "files_parsed": parsed,
    }
    return Measured(
        figures,
        figures["median_ms"] <= 200 and parsed == 0,
        f"median {figures['median_ms']} ms (poll {figures['poll_median_ms']} + load "
        f"{figures['load_median_ms']}), p99 {figures['p99_ms']} ms, {parsed} parsed",
    )


def _split_parse_validate_hash(files: dict[str, bytes]) -> dict[str, float]:
    """The manifests layer's per-file work done step by step, each step timed over all files."""
    started = time.perf_counter()
    documents: list[Document] = []
    for path, data in files.items():
        parsed, problems = parse_documents(ManifestFile(path, data))
        assert not problems, problems
        documents.extend(parsed)
    parse_s = time.perf_counter() - started

    started = time.perf_counter()
    for doc in documents:
        violations = list(iter_violations(doc.data["kind"], doc.data))
        assert not violations, violations
    validate_s = time.perf_counter() - started

    started = time.perf_counter()
    for doc in documents:
        template_hash(canonical_template(doc.data["spec"]["template"]))
    hash_s = time.perf_counter() - started
    return {"parse_s": parse_s, "validate_s": validate_s, "hash_s": hash_s}


@scenario("cold", target="≤ 20 s (parse + validate + hash + list + verdict)")
def cold(bench: Bench) -> Measured:
    """First full load of every app: fetch, desired state (parse, validate, hash, model), and one
    list of every managed ReplicaSet from an embedded cluster holding all apps. Partial: the
    loop's verdict ("in sync") step does not exist yet and is not included.

    ``desired_state_s`` is the real load (DesiredStateReader, fresh cache); parse, validate and
    hash are then timed step by step in a second pass over the same blobs, and
    ``desired_state_other_s`` is the difference (git reads, the App model, the repo-wide pass; near
    zero, even slightly negative from noise, when the three steps account for all of it). The
    cluster runs in this process, so its serving shares the interpreter with the timed list."""
    repo_data = bench.repo()
    with config_repo(bench, "cold") as repo:
        started = time.perf_counter()
        head = repo.poll().head
        fetch_s = time.perf_counter() - started
        reader = DesiredStateReader(repo)
        started = time.perf_counter()
        result = reader.load(head)
        desired_s = time.perf_counter() - started
        assert result.ok and len(result.apps) == bench.apps, result.diagnostics[:3]
        entries = [e for e in repo.list_files(head) if e.path.startswith("apps/")]
        started = time.perf_counter()
        blobs = repo.read_blobs([e.blob_sha for e in entries])
        read_s = time.perf_counter() - started
        split = _split_parse_validate_hash({e.path: blobs[e.blob_sha] for e in entries})
    with running_cluster(bench.cache_dir, repo_data.apps, bench.seed) as (cluster, facts):
        api = api_client_for(cluster)
        adapter = Cluster(api)
        cluster.stats.reset()
        started = time.perf_counter()
        listed = adapter.list_replica_sets()
        list_s = time.perf_counter() - started
        list_requests = cluster.stats.total()
        api.close()
    assert len(listed) == bench.apps, len(listed)
    by_app = {(a.namespace, a.name): a.template_hash for a in result.apps}
    in_sync = sum(1 for rs in listed if by_app.get((rs.namespace, rs.app)) == rs.state.template_hash)
    total_s = fetch_s + desired_s + list_s
    accounted = split["parse_s"] + split["validate_s"] + split["hash_s"]
    figures = {
        "total_s": round(total_s, 2),
        "fetch_s": round(fetch_s, 2),
        "desired_state_s": round(desired_s, 2),
        "parse_s": round(split["parse_s"], 2),
        "validate_s": round(split["validate_s"], 2),
        "hash_s": round(split["hash_s"], 2),
        "desired_state_other_s": round(desired_s - accounted, 2),
        "read_blobs_s": round(read_s, 2),
        "list_s": round(list_s, 2),
        "list_requests": list_requests,
        "replica_sets": len(listed),
        "hash_matches": in_sync,
        "partial": True,
        "not_included": "the loop's verdict step (issue 6)",
        **facts,
    }
    summary = (
        f"total {total_s:.2f} s = fetch {fetch_s:.2f} + desired {desired_s:.2f} (parse "
        f"{split['parse_s']:.2f}, validate {split['validate_s']:.2f}, hash {split['hash_s']:.2f}) "
        f"+ list {list_s:.2f}; partial"
    )
    return Measured(figures, total_s <= 20, summary)


@scenario("source", target="no-change poll ≤ 50 ms, one-file change ≤ 200 ms")
def source(bench: Bench) -> Measured:
    """The config repo source (was bench/source_bench.py): first sync, a no-change poll, and a
    one-file change (poll, fetch, one tree diff, read and parse-validate the one changed blob);
    plus the whole desired-state load after that change, the desired-state part of one-app-commit."""
    rounds = bench.rounds_or(15)
    generated = bench.repo()
    with config_repo(bench, "source") as repo:
        poll_ms = timed_ms(repo.poll)
        head = repo.head or ""
        list_ms = timed_ms(lambda: repo.list_files(head))
        cache: BlobCache[FileAnalysis] = BlobCache()
        parsed: list[str] = []

        def parse(blob_sha: str, data: bytes, path: str) -> FileAnalysis:
            def compute() -> FileAnalysis:
                parsed.append(path)
                analysis = analyse_file(ManifestFile(path, data))
                assert not analysis.diagnostics, analysis.diagnostics
                return analysis

            return cache.get_or_compute(blob_sha, compute, path=path)

        started = time.perf_counter()
        for f in repo.files_at(head):
            if f.path.startswith("apps/"):
                parse(f.blob_sha, f.data, f.path)
        first_parse_ms = millis_since(started)
        no_change = [timed_ms(repo.poll) for _ in range(rounds)]

        one_change: list[float] = []
        for tick in range(1, rounds + 1):
            generated.commit_image_bump((tick * 37) % bench.apps)
            parsed.clear()
            old = repo.head or ""
            started = time.perf_counter()
            new = repo.poll().head
            changes = repo.changed_files(old, new)
            blobs = repo.read_blobs([c.new_blob for c in changes if c.new_blob])
            for change in changes:
                if change.new_blob:
                    parse(change.new_blob, blobs[change.new_blob], change.path)
            one_change.append(millis_since(started))
            assert len(changes) == 1 and len(parsed) == 1, (changes, parsed)

        reader = DesiredStateReader(repo)
        reader.load(repo.head or "")
        loads: list[float] = []
        for tick in range(1, rounds + 1):
            generated.commit_image_bump((tick * 53) % bench.apps)
            loads.append(timed_ms(lambda: reader.load(repo.poll().head)))
    figures = {
        "first_sync_poll_ms": round(poll_ms, 1),
        "first_sync_list_ms": round(list_ms, 1),
        "first_sync_read_parse_validate_ms": round(first_parse_ms, 1),
        "no_change_poll_median_ms": round(statistics.median(no_change), 2),
        "one_file_change_median_ms": round(statistics.median(one_change), 2),
        "one_file_change_max_ms": round(max(one_change), 2),
        "one_app_desired_load_median_ms": round(statistics.median(loads), 2),
        "one_app_desired_load_max_ms": round(max(loads), 2),
        "rounds": rounds,
    }
    ok = figures["no_change_poll_median_ms"] <= 50 and figures["one_file_change_median_ms"] <= 200
    summary = (
        f"no-change poll {figures['no_change_poll_median_ms']} ms; one-file change median "
        f"{figures['one_file_change_median_ms']} / max {figures['one_file_change_max_ms']} ms; "
        f"first sync read+parse {first_parse_ms / 1000:.2f} s"
    )
    return Measured(figures, ok, summary)


# -- the embedded cluster (was bench/localcluster_bench.py) ---------------------------------------

_LC_NAMESPACE = "bench"


def _plain_replicaset(name: str) -> dict[str, Any]:
    labels = {"app": name, "app.kubernetes.io/managed-by": "gitdeploy"}
    return {
        "metadata": {"name": name, "labels": labels, "annotations": {"gitdeploy.io/revision": "1"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "registry.local/app:1"}]},
            },
        },
    }


def _load_directly(state_dir: Path, count: int) -> None:
    store = Store(state_dir / "cluster.db")
    registry = Registry(store, SystemClock(), SimulationConfig())
    registry.create(NAMESPACES, "", {"metadata": {"name": _LC_NAMESPACE}})
    for index in range(count):
        registry.create(REPLICASETS, _LC_NAMESPACE, _plain_replicaset(f"app-{index:05d}"))
    store.close()


def _daemon_client(state_dir: Path, url: str) -> Any:
    configuration = client.Configuration()
    configuration.host = url
    configuration.api_key = {"authorization": "Bearer " + (state_dir / "token").read_text().strip()}
    configuration.ssl_ca_cert = str(state_dir / "tls.crt")
    return client.ApiClient(configuration)


def _scale_writes_per_second(state_dir: Path, url: str, count: int, writes: int, threads: int) -> float:
    per_thread = writes // threads

    def work(offset: int) -> None:
        api = _daemon_client(state_dir, url)
        apps = client.AppsV1Api(api)
        for index in range(per_thread):
            name = f"app-{(offset * 1000 + index // 2) % count:05d}"
            apps.patch_namespaced_replica_set_scale(
                name, _LC_NAMESPACE, {"spec": {"replicas": (index + 1) % 2}}
            )
        api.close()

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return per_thread * threads / (time.perf_counter() - started)


def _raw_list_seconds(state_dir: Path, url: str, rounds: int = 5) -> tuple[float, int]:
    token = (state_dir / "token").read_text().strip()
    timings, items = [], 0
    for _ in range(rounds):
        request = urllib.request.Request(
            f"{url}/apis/apps/v1/namespaces/{_LC_NAMESPACE}/replicasets",
            headers={"Authorization": f"Bearer {token}"},
        )
        started = time.perf_counter()
        with urllib.request.urlopen(request, context=ssl_context(state_dir)) as response:
            body = response.read()
        items = len(json.loads(body)["items"])
        timings.append(time.perf_counter() - started)
    return statistics.median(timings), items


@scenario("localcluster", target="scale writes ≥ 200/s, raw list of N ReplicaSets < 1 s")
def localcluster(bench: Bench) -> Measured:
    """The embedded cluster as users run it (daemon, HTTPS): N ReplicaSets loaded straight into
    its database, then 2,000 scale writes from 1 and from 2 clients, and lists of all N (raw HTTP,
    and the official client building its models)."""
    count, writes = bench.apps, 2_000
    state_dir = bench.work / "localcluster-daemon"
    state_dir.mkdir()
    started = time.perf_counter()
    _load_directly(state_dir, count)
    load_s = time.perf_counter() - started
    info = ensure_running(state_dir)
    try:
        one = _scale_writes_per_second(state_dir, info.url, count, writes, threads=1)
        two = _scale_writes_per_second(state_dir, info.url, count, writes, threads=2)
        raw_s, items = _raw_list_seconds(state_dir, info.url)
        assert items == count, items
        api = _daemon_client(state_dir, info.url)
        started = time.perf_counter()
        listed = client.AppsV1Api(api).list_namespaced_replica_set(_LC_NAMESPACE)
        client_s = time.perf_counter() - started
        api.close()
        assert len(listed.items) == count
    finally:
        stop(state_dir)
    figures = {
        "replica_sets": count,
        "scale_writes_per_second_1_client": round(one),
        "scale_writes_per_second_2_clients": round(two),
        "list_raw_http_s": round(raw_s, 3),
        "list_official_client_models_s": round(client_s, 3),
        "load_directly_s": round(load_s, 1),
    }
    ok = one >= 200 and two >= 200 and raw_s < 1
    summary = f"scale writes {one:.0f} / {two:.0f} per s; list {raw_s:.3f} s raw, {client_s:.2f} s models"
    return Measured(figures, ok, summary)


# -- scenarios that need the reconcile loop (issue 6): replace each line by a @scenario function --

not_yet("one-app-commit", target="commit → first ReplicaSet write: p50 ≤ 100 ms, p99 ≤ 300 ms (webhook)")
not_yet("step-overhead", target="100 apps rolling: controller time per step p50 ≤ 10 ms, p99 ≤ 50 ms")
not_yet("makespan", target="rollout time ÷ (waves × R) ≤ 1.05 (1 app), ≤ 1.10 (1,000 apps)")
not_yet("api-economy", target="writes per rollout ≤ 2 × waves + 2; reads per settled app per pass 0")
not_yet("memory", target="peak RSS of `gitdeploy run`, 10,000 apps, 20,000 ReplicaSets ≤ 300 MiB")


# -- running --------------------------------------------------------------------------------------


def run_scenario(entry: Scenario, bench: Bench) -> dict[str, Any]:
    line: dict[str, Any] = {"scenario": entry.name, "apps": bench.apps}
    if entry.run is None:
        return {**line, "target": entry.target, "ok": None, "skipped": entry.skipped}
    log(f"running {entry.name} ({bench.apps} apps)")
    measured = entry.run(bench)
    figures = measured.figures
    return {**line, **figures, "target": entry.target, "ok": measured.ok, "_summary": measured.summary}


def print_table(lines: Sequence[dict[str, Any]], apps: int) -> None:
    table = Table(title=f"gitdeploy benchmarks, {apps} apps, {os.cpu_count()} CPUs")
    for column in ("scenario", "measured", "target", "ok"):
        table.add_column(column, overflow="fold")
    for line in lines:
        ok = {True: "yes", False: "NO", None: "—"}[line["ok"]]
        measured = line.get("_summary") or f"skipped: {line.get('skipped')}"
        table.add_row(line["scenario"], measured, line["target"], ok)
    Console(width=None if sys.stdout.isatty() else 150).print(table)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help=f"one of {', '.join(SCENARIOS)}")
    parser.add_argument("--apps", type=int, default=10_000, help="apps in the generated repo (10,000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generated repo")
    parser.add_argument("--rounds", type=int, default=None, help="override each scenario's rounds")
    parser.add_argument("--json-only", action="store_true", help="print the JSON lines only, no table")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gitdeploy-bench",
        help="where filled embedded clusters are kept between runs",
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.scenarios if name not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    # The source layer's git must not read this machine's configuration.
    os.environ.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
    lines: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gitdeploy-bench-") as temporary:
        bench = Bench(args.apps, args.seed, Path(temporary), args.cache_dir, args.rounds)
        for name in args.scenarios or list(SCENARIOS):
            line = run_scenario(SCENARIOS[name], bench)
            lines.append(line)
            shown = {k: v for k, v in line.items() if not k.startswith("_")}
            print(json.dumps(shown, ensure_ascii=False), flush=True)
    if not args.json_only:
        print()
        print_table(lines, args.apps)
    return 1 if any(line["ok"] is False for line in lines) else 0


if __name__ == "__main__":
    raise SystemExit(main())
