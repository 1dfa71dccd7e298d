"""gitdeploy's benchmarks (issue 11): ``python bench/run.py [SCENARIO ...] [--apps N] [--json-only]``.

Runs the named scenarios (default: all) and prints one JSON object per scenario on its own line,
``{"scenario", "apps", <figures...>, "target", "ok"}``, then a table. ``ok`` is null when a
scenario has no target of its own. Not a test: the figures depend on the machine, and no test
asserts on them. Exit status 1 when a target is missed. Scenarios that need every app running
use the cluster :mod:`bench.clusterstate` fills once and caches; each scenario's docstring says
whether it runs on the system clock or a fake one.

A scenario is one function registered with :func:`scenario`; it gets a :class:`Bench` (the app
count, a generated config repository shared by the scenarios of one run, a work and a cache
directory) and returns a :class:`Measured`. Times are wall-clock milliseconds (``*_ms``) or
seconds (``*_s``), medians and 99th percentiles (nearest rank) over ``rounds``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/run.py``: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubernetes import client as kubernetes_client
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console
from rich.table import Table

from bench import clusterstate
from bench.clusterstate import SIMULATION, add_cache_dir_option, api_client_for, settle
from bench.generate import GeneratedRepo, generate_repo
from gitdeploy.cli.run_cmd import instrument
from gitdeploy.clock import Clock, FakeClock, SystemClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.cluster.connection import connect
from gitdeploy.controller import watcher
from gitdeploy.controller.desired import DesiredStateReader
from gitdeploy.controller.loop import AppReport, Controller
from gitdeploy.controller.reconcile import Result
from gitdeploy.controller.scheduler import Scheduler
from gitdeploy.controller.workers import PassHooks
from gitdeploy.core.blobcache import BlobCache
from gitdeploy.core.hashing import canonical_template, template_hash
from gitdeploy.core.models import AppKey
from gitdeploy.localcluster import ClusterInfo, LocalCluster, SimulationConfig, ensure_running, stop
from gitdeploy.localcluster.daemon import ssl_context
from gitdeploy.localcluster.registry import Registry
from gitdeploy.localcluster.resources import NAMESPACES, REPLICASETS
from gitdeploy.localcluster.stats import RequestStats
from gitdeploy.localcluster.store import Store
from gitdeploy.manifests.documents import Document, ManifestFile, parse_documents
from gitdeploy.manifests.loader import FileAnalysis, analyse_file
from gitdeploy.manifests.schemas import iter_violations
from gitdeploy.server.metrics import Metrics
from gitdeploy.source.repo import ConfigRepo

client: Any = kubernetes_client
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


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
    """The largest RSS of the command or of any process it waited for (git), from ``wait4``."""
    seconds: float
    own_peak_rss_mib: float | None = None
    """The command's own peak (``VmHWM`` read from /proc while it ran; None where there is none)."""


def _own_peak_mib(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:
        return None
    kib = next((line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")), None)
    return int(kib) / 1024 if kib is not None else None


_LAUNCHER = """\
import os, sys
report = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    os.close(report)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
os.write(report, b"%d\\n" % pid)
_, status, usage = os.wait4(pid, 0)
os.write(report, b"%d %d\\n" % (status, usage.ru_maxrss))
"""
"""Starts a command and reports its pid, then its wait status and ``ru_maxrss``, on a pipe.

On Linux, ``exec`` keeps the high-water mark of the memory image it replaces in the process's
``ru_maxrss``, and a child made by fork or vfork starts in its parent's image: a command this
process started itself would report at least this process's peak. bench/run.py holds several
hundred MiB late in a full run (the 673 and 707 MiB "of gitdeploy run", whose own peak was
249 MiB), so a fresh small interpreter forks the command instead."""


def measure_peak_rss(
    command: Sequence[str],
    *,
    run_for: float | None = None,
    until: Callable[[], bool] | None = None,
    env: dict[str, str] | None = None,
    output: Path | None = None,
) -> PeakRss:
    """Run ``command`` and return its peak resident set size: ``ru_maxrss`` via wait4, which on
    Linux is the largest of the command and of every process it waited for (its git commands),
    not counting this process (see :data:`_LAUNCHER`), and the command's own peak (``VmHWM``,
    read until it exits): when the first is larger, one of its commands was.

    With ``run_for``, a long-running command (``gitdeploy run``) gets SIGTERM after that many
    seconds, or earlier once ``until()`` is true (SIGKILL 10 s later). Its stdout and stderr go to
    ``output`` (else nowhere).
    """
    started = time.perf_counter()
    read_end, write_end = os.pipe()
    with ExitStack() as stack:
        sink = stack.enter_context(output.open("wb")) if output is not None else subprocess.DEVNULL
        launcher = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(write_end), *command],
            env=env,
            stdout=sink,
            stderr=sink,
            pass_fds=(write_end,),
        )
    os.close(write_end)
    deadline = None if run_for is None else started + run_for
    signalled_at: float | None = None
    own: float | None = None
    with os.fdopen(read_end, "rb") as report:
        pid = int(report.readline())
        while launcher.poll() is None:
            now = time.perf_counter()
            stop = deadline is not None and (now >= deadline or (until is not None and until()))
            own = _own_peak_mib(pid) or own
            if stop and signalled_at is None:
                os.kill(pid, signal.SIGTERM)
                signalled_at = now
            elif signalled_at is not None and now - signalled_at > 10:
                os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        status, max_rss = (int(field) for field in report.readline().split())
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    scale = 1 if sys.platform == "darwin" else 1024
    peak = max_rss * scale / 2**20
    return PeakRss(os.waitstatus_to_exitcode(status), peak, time.perf_counter() - started, own)


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

    @contextmanager
    def running_cluster(self, *, scratch: bool = False) -> Iterator[tuple[LocalCluster, dict[str, Any]]]:
        """The cached cluster of every app deployed by gitdeploy (:mod:`bench.clusterstate`), with
        the generated repository moved to the version it runs, and timed request stats. With
        ``scratch`` (a scenario that deploys), a copy of it."""
        self.repo().commit_versions(clusterstate.VERSION)
        copy_to = self.work / "cluster" / f"scratch-{time.monotonic_ns()}" if scratch else None
        with clusterstate.running_cluster(self.cache_dir, self.apps, self.seed, copy_to=copy_to) as (
            cluster,
            facts,
        ):
            cluster.stats = TimedStats()
            yield cluster, facts


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
    run: ScenarioFn


SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str, *, target: str) -> Callable[[ScenarioFn], ScenarioFn]:
    """Register ``fn`` as scenario ``name``; ``target`` is printed next to its figures."""

    def register(fn: ScenarioFn) -> ScenarioFn:
        SCENARIOS[name] = Scenario(name, target, fn)
        return fn

    return register


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class TimedStats(RequestStats):
    """The embedded cluster's request counter, also keeping when each request arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[tuple[float, str, str]] = []

    def record(self, verb: str, resource: str, agent: str = "") -> None:
        super().record(verb, resource, agent)
        self.arrivals.append((time.perf_counter(), verb, resource))

    def reset(self) -> None:
        super().reset()
        self.arrivals = []

    def writes(self) -> int:
        return sum(self.count(verb) for verb in WRITE_VERBS)

    def first(self, verbs: Collection[str], resource: str, after: float) -> float | None:
        """When the first of ``verbs`` on ``resource`` after ``after`` arrived, if one did."""
        arrivals = list(self.arrivals)
        return next((t for t, v, r in arrivals if t > after and v in verbs and r == resource), None)


class StepTimings:
    """The loop's pass hooks (:class:`PassHooks`) timing each app's step (snapshot, plan, writes;
    wall-clock time, its thread's CPU time and the time spent in requests as ``in_requests``
    tells) and each pass (divided by its steps) for step-overhead."""

    def __init__(self) -> None:
        self.step_ms: list[float] = []
        self.step_cpu_ms: list[float] = []
        self.step_in_requests_ms: list[float] = []
        self.pass_ms_per_step: list[float] = []
        self.in_requests: Callable[[], float] = lambda: 0.0
        """Seconds the calling thread has spent in API requests (:meth:`SentRequests.waited`)."""
        self._steps_before = 0

    def clear(self) -> None:
        for timings in (self.step_ms, self.step_cpu_ms, self.step_in_requests_ms, self.pass_ms_per_step):
            timings.clear()
        self._steps_before = 0

    def hooks(self, after_pass: Callable[[], None] | None = None) -> PassHooks:
        def passed(_reports: list[AppReport], seconds: float) -> None:
            steps = len(self.step_ms) - self._steps_before
            if steps:
                self.pass_ms_per_step.append(seconds * 1000 / steps)
            self._steps_before = len(self.step_ms)
            if after_pass is not None:
                after_pass()

        return PassHooks(around_step=self.around_step, after_pass=passed)

    def around_step(self, _key: AppKey, step: Callable[[], Result]) -> Result:
        started, cpu, waited = time.perf_counter(), time.thread_time(), self.in_requests()
        try:
            return step()
        finally:
            self.step_ms.append(millis_since(started))
            self.step_cpu_ms.append((time.thread_time() - cpu) * 1000)
            self.step_in_requests_ms.append((self.in_requests() - waited) * 1000)


class LoopThread:
    """What ``gitdeploy run`` does (the one :class:`Scheduler`), on the system clock, in a thread.
    With ``watch_rollouts``, ReplicaSets are watched as ``gitdeploy run`` does, and a rollout's
    pods becoming ready wake the loop. ``timings``: each step and pass timed."""

    def __init__(
        self,
        controller: Controller,
        interval: float,
        *,
        watch_rollouts: bool = False,
        timings: StepTimings | None = None,
    ) -> None:
        self.controller = controller
        self.interval = interval
        self.watch_rollouts = watch_rollouts
        self.timings = timings
        self.polls: list[float] = []
        self.pushed: deque[str] = deque(maxlen=1)
        """The newest push's head, as ``run``'s webhook leaves it for the loop (:meth:`push`)."""
        self.after_pass: Callable[[], None] | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-loop", daemon=True)

    def __enter__(self) -> LoopThread:
        if self.watch_rollouts:
            watcher.watch_rollouts(self.controller, self._stop, self._wake.set)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join()

    def wake(self) -> None:
        """Cut the loop's wait short (as a watch's notice does)."""
        self._wake.set()

    def push(self, sha: str) -> None:
        """What ``run`` does with a webhook's push: the loop fetches ``sha`` at its next turn."""
        self.pushed.append(sha)
        self._wake.set()

    def _passed(self) -> None:
        if self.after_pass is not None:
            self.after_pass()

    def _run(self) -> None:
        if self.timings is not None:
            hooks = self.timings.hooks(self._passed)
        else:
            hooks = PassHooks(after_pass=lambda _reports, _seconds: self._passed())
        scheduler = Scheduler(self.controller, hooks)
        scheduler.run(self._stop, self._wake, self.interval, pushed=self.pushed, polled=self.polls.append)


def deployment(name: str, replicas: int, version: int) -> str:
    """A Deployment with a 25%/25% rolling update (for the makespan and API scenarios)."""
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: bench}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  strategy: {{type: RollingUpdate, rollingUpdate: {{maxSurge: 25%, maxUnavailable: 25%}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: main, image: "registry.example.com/{name}:1.{version}.0"}}]
"""


def rolling_waves(replicas: int) -> int:
    """The fewest waves a 25%/25% rolling update of ``replicas`` needs: each wave of pods becoming
    ready replaces at most maxSurge + maxUnavailable old pods (surge rounds up, unavailable down)."""
    per_wave = math.ceil(replicas * 0.25) + math.floor(replicas * 0.25)
    return math.ceil(replicas / max(per_wave, 1))


class PlainRepo:
    """A small config repository (one commit per change) for scenarios with hand-made apps."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True)
        self._git("init", "--quiet", "--initial-branch=main")

    def _git(self, *args: str) -> None:
        identity = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com"}
        identity |= {"GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
        subprocess.run(["git", "-C", str(self.root), *args], env={**os.environ, **identity}, check=True)

    def commit(self, files: Mapping[str, str], message: str) -> None:
        for path, text in files.items():
            target = self.root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        self._git("add", "--all")
        self._git("commit", "--quiet", "--message", message)

    def apps_at(self, names: Sequence[str], replicas: int, version: int) -> None:
        self.commit(
            {f"apps/{n}.yaml": deployment(n, replicas, version) for n in names}, f"apps at 1.{version}.0"
        )


@contextmanager
def controller_world(
    bench: Bench, name: str, clock: Clock, pod_start_seconds: float
) -> Iterator[tuple[PlainRepo, Controller, LocalCluster]]:
    """A plain config repo, an embedded cluster in process on ``clock`` with timed stats, and the
    loop's controller reading one from the other."""
    repo = PlainRepo(bench.work / "plain" / name)
    repo.commit({"README.md": "# bench\n"}, "start")
    config = SimulationConfig(pod_start_seconds=pod_start_seconds)
    state = bench.work / "cluster" / name
    with (
        LocalCluster(state, clock=clock, config=config) as cluster,
        ConfigRepo(str(repo.root), ref="main", state_dir=bench.state_dir(name)) as source,
    ):
        cluster.stats = TimedStats()
        api = api_client_for(cluster)
        try:
            yield repo, Controller(source, Cluster(api), clock), cluster
        finally:
            api.close()


@contextmanager
def config_repo(bench: Bench, name: str) -> Iterator[ConfigRepo]:
    with ConfigRepo(bench.repo().url, ref="main", state_dir=bench.state_dir(name)) as repo:
        yield repo


@contextmanager
def empty_cluster(bench: Bench) -> Iterator[LocalCluster]:
    """An embedded cluster in process (plain HTTP) whose ``stats`` count every API request."""
    with LocalCluster(bench.work / "cluster" / str(time.monotonic_ns()), clock=SystemClock()) as cluster:
        yield cluster


# -- the cluster in its own process (step-overhead, makespan) --------------------------------------

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class SentRequests:
    """Notes when the controller sent each request (this process's ``perf_counter``, the method),
    by standing in for the REST client of the official client's ``ApiClient``: every request,
    watches included, goes through its ``request``."""

    def __init__(self, api: Any) -> None:
        self._rest = api.rest_client
        self.sent: list[tuple[float, str]] = []
        self._waited = threading.local()
        api.rest_client = self

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        self.sent.append((started, method))
        try:
            return self._rest.request(method, url, *args, **kwargs)
        finally:
            self._waited.seconds = self.waited() + time.perf_counter() - started

    def waited(self) -> float:
        """Seconds the calling thread spent in requests so far (each until its answer's headers)."""
        seconds: float = getattr(self._waited, "seconds", 0.0)
        return seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rest, name)

    def first_write(self, after: float) -> float:
        return next(t for t, method in list(self.sent) if t > after and method in WRITE_METHODS)


def process_cpu_seconds(pid: int) -> float:
    """CPU time (user + system) used so far by process ``pid``, from ``/proc`` (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class OwnProcessCluster:
    """A running embedded cluster daemon, as ``gitdeploy cluster up`` starts it (its own process,
    HTTPS); its request counts come from ``/gitdeploy/v1/stats``."""

    def __init__(self, info: ClusterInfo) -> None:
        self.info = info

    def _stats(self, method: str, path: str) -> dict[str, Any]:
        token = (self.info.state_dir / "token").read_text().strip()
        request = urllib.request.Request(
            self.info.url + path, method=method, headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, context=ssl_context(self.info.state_dir)) as response:
            body: dict[str, Any] = json.loads(response.read())
        return body

    def reset_stats(self) -> None:
        self._stats("POST", "/gitdeploy/v1/stats/reset")

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time (user + system) used so far by this process (the controller), by the git
        commands it ran (its children that ended) and by the daemon."""
        own, daemon = os.times(), process_cpu_seconds(self.info.pid)
        children = own.children_user + own.children_system
        return {"controller": own.user + own.system, "git": children, "cluster": daemon}

    @contextmanager
    def cpu_used(self) -> Iterator[dict[str, float]]:
        """Fills the dict it yields with the CPU seconds each process used within the block."""
        before, used = self.cpu_seconds(), dict[str, float]()
        yield used
        used.update({side: round(t - before[side], 2) for side, t in self.cpu_seconds().items()})

    def requests(self) -> dict[str, int]:
        """The requests since the last reset, by ``"verb resource"``."""
        counts = self._stats("GET", "/gitdeploy/v1/stats")["requests"]
        return {f"{c['verb']} {c['resource']}": int(c["count"]) for c in counts}


@contextmanager
def daemon_world(
    bench: Bench, name: str, repo_url: str, pod_start_seconds: float
) -> Iterator[tuple[Controller, OwnProcessCluster, SentRequests]]:
    """The embedded cluster daemon of a fresh state dir (pods ready ``pod_start_seconds`` after
    they start, on the system clock), and the loop's controller reading the config repo at
    ``repo_url`` and connected to the
    daemon through its kubeconfig as ``gitdeploy run`` is (the official client, HTTPS). The
    daemon is stopped at the end, also on error."""
    state_dir = bench.work / "cluster" / name
    try:
        info = ensure_running(state_dir, SimulationConfig(pod_start_seconds=pod_start_seconds))
        with ConfigRepo(repo_url, ref="main", state_dir=bench.state_dir(name)) as source:
            connection = connect(info.kubeconfig)
            api: Any = connection.api
            sent = SentRequests(api)
            try:
                cluster = Cluster(api, connection.description)
                yield Controller(source, cluster, SystemClock()), OwnProcessCluster(info), sent
            finally:
                api.close()
    finally:
        stop(state_dir)


def roll_out(loop: LoopThread, keys: Collection[AppKey], what: str, timeout: float) -> None:
    """Wait until the loop saw every app of ``keys`` Complete at a revision above the one it had
    when this was called (none yet: any revision)."""
    controller = loop.controller
    before = {key: report.revision for key, report in list(controller.reports.items())}
    done = threading.Event()

    def check() -> None:
        reports = [controller.reports.get(key) for key in keys]
        if all(
            r is not None and r.settled and r.phase == "Complete" and r.revision > before.get(r.key, 0)
            for r in reports
        ):
            done.set()

    loop.after_pass = check
    if not done.wait(timeout):
        raise RuntimeError(f"{what} did not complete within {timeout:.0f} s")


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


def timed_stats(cluster: LocalCluster) -> TimedStats:
    stats = cluster.stats
    assert isinstance(stats, TimedStats), "the cluster was not opened by this benchmark"
    return stats


def _sync_counts(reports: Sequence[AppReport]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for report in reports:
        verdict = f"{report.sync}/{report.health}"
        counts[verdict] = counts.get(verdict, 0) + 1
    return counts


@scenario("cold", target='≤ 20 s (fetch, parse, validate, hash, list, verdict "in sync")')
def cold(bench: Bench) -> Measured:
    """A gitdeploy with nothing in memory (a fresh mirror and cache) meets a cluster where every
    app already runs: fetch, load the desired state (parse, validate, hash), and one pass of the
    loop over every app (one list per namespace, the verdict) — all must be Synced/Healthy, with
    no write. The cluster serves over HTTP from this process (it shares the interpreter).

    ``parse_s``, ``validate_s`` and ``hash_s`` split the desired-state load: the same blobs are
    parsed, validated and hashed again step by step after the measured run."""
    with bench.running_cluster() as (cluster, facts), config_repo(bench, "cold") as repo:
        stats = timed_stats(cluster)
        api = api_client_for(cluster)
        controller = Controller(repo, Cluster(api), SystemClock())
        scheduler = Scheduler(controller)  # its pass adds two clock reads to the timed one, no request
        stats.reset()
        started = time.perf_counter()
        head = repo.poll().head
        fetched = time.perf_counter()
        controller.poll()
        loaded = time.perf_counter()
        reports = scheduler.pass_once()
        finished = time.perf_counter()
        api.close()
        requests, writes, lists = stats.total(), stats.writes(), stats.count("list")
        entries = [e for e in repo.list_files(head) if e.path.startswith("apps/")]
        blobs = repo.read_blobs([e.blob_sha for e in entries])
        split = _split_parse_validate_hash({e.path: blobs[e.blob_sha] for e in entries})
    verdicts = _sync_counts(reports)
    in_sync = verdicts.get("Synced/Healthy", 0)
    total_s = finished - started
    figures = {
        "total_s": round(total_s, 2),
        "fetch_s": round(fetched - started, 2),
        "desired_state_s": round(loaded - fetched, 2),
        "parse_s": round(split["parse_s"], 2),
        "validate_s": round(split["validate_s"], 2),
        "hash_s": round(split["hash_s"], 2),
        "pass_s": round(finished - loaded, 2),
        "apps_in_sync": in_sync,
        "verdicts": verdicts,
        "api_requests": requests,
        "api_lists": lists,
        "api_writes": writes,
        **facts,
    }
    summary = (
        f"total {total_s:.2f} s = fetch {figures['fetch_s']} + desired {figures['desired_state_s']} (parse "
        f"{split['parse_s']:.2f}, validate {split['validate_s']:.2f}, hash {split['hash_s']:.2f}) + "
        f"pass {figures['pass_s']} ({lists} lists, {writes} writes); {in_sync}/{bench.apps} in sync"
    )
    return Measured(figures, total_s <= 20 and in_sync == bench.apps and writes == 0, summary)


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


def daemon_client(state_dir: Path, url: str) -> Any:
    """An official client of the cluster serving ``state_dir`` at ``url`` (its token; its
    certificate, used for HTTPS only)."""
    configuration = client.Configuration()
    configuration.host = url
    configuration.api_key = {"authorization": "Bearer " + (state_dir / "token").read_text().strip()}
    configuration.ssl_ca_cert = str(state_dir / "tls.crt")
    return client.ApiClient(configuration)


def _scale_writes_per_second(state_dir: Path, url: str, count: int, writes: int, threads: int) -> float:
    per_thread = writes // threads

    def work(offset: int) -> None:
        api = daemon_client(state_dir, url)
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
    daemon = OwnProcessCluster(info)
    try:
        with daemon.cpu_used() as one_cpu:
            one = _scale_writes_per_second(state_dir, info.url, count, writes, threads=1)
        with daemon.cpu_used() as two_cpu:
            two = _scale_writes_per_second(state_dir, info.url, count, writes, threads=2)
        raw_s, items = _raw_list_seconds(state_dir, info.url)
        assert items == count, items
        api = daemon_client(state_dir, info.url)
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
        # the daemon's CPU per write (the rest of a write's time is the client's)
        "daemon_cpu_ms_per_scale_write": [round(1000 * c["cluster"] / writes, 3) for c in (one_cpu, two_cpu)],
        "list_raw_http_s": round(raw_s, 3),
        "list_official_client_models_s": round(client_s, 3),
        "load_directly_s": round(load_s, 1),
    }
    ok = one >= 200 and two >= 200 and raw_s < 1
    summary = f"scale writes {one:.0f} / {two:.0f} per s; list {raw_s:.3f} s raw, {client_s:.2f} s models"
    return Measured(figures, ok, summary)


# -- the reconcile loop ---------------------------------------------------------------------------


@scenario("one-app-commit", target="commit → first ReplicaSet write ≤ interval + 300 ms (polling)")
def one_app_commit(bench: Bench) -> Measured:
    """Polling (``gitdeploy run --interval 1s``; the webhook variant is bench/push_latency.py): a
    loop on the system clock keeps every app of the cached cluster in sync; commits that change
    one app's image land at random moments, and the time from the commit to the API server
    receiving that app's first ReplicaSet write (a new one, or scaling up one it returns to) is
    measured; each rollout settles before the next commit. ``processing`` is the part after the poll
    that saw the commit began (poll, fetch, diff, parse one file, pass, writes)."""
    return _commit_latencies(bench, "one-app-commit", interval=1.0, during_resync=False)


@scenario(
    "commit-during-resync", target="commit → first ReplicaSet write ≤ 1 s (interval, a slice, the pass)"
)
def commit_during_resync(bench: Bench) -> Measured:
    """As ``one-app-commit`` (polling every 0.2 s), but each commit lands while the loop passes over
    every app for its periodic resync (forced 0 to 0.3 s before): the commit waits for a slice of
    the resync (:data:`~gitdeploy.controller.workqueue.PASS_SLICE` apps), not for all of it."""
    return _commit_latencies(bench, "commit-during-resync", interval=0.2, during_resync=True)


@scenario(
    "push-during-resync",
    target="push → first ReplicaSet write ≤ 500 ms (a step under way, the fetch, the pass)",
)
def push_during_resync(bench: Bench) -> Measured:
    """As ``commit-during-resync``, but each commit comes as a webhook's push does (the loop polls
    every 60 s): the push cuts the resync's slice under way short."""
    return _commit_latencies(bench, "push-during-resync", interval=60.0, during_resync=True, push=True)


def _commit_latencies(
    bench: Bench, name: str, *, interval: float, during_resync: bool, push: bool = False
) -> Measured:
    rounds = bench.rounds_or(20)
    generated = bench.repo()
    rng = random.Random(bench.seed)
    latencies: list[float] = []
    processing: list[float] = []
    with (
        bench.running_cluster(scratch=True) as (cluster, facts),
        config_repo(bench, name) as repo,
    ):
        stats = timed_stats(cluster)
        api = api_client_for(cluster)
        controller = Controller(repo, Cluster(api), SystemClock())
        controller.poll()
        Scheduler(controller).pass_once()  # the first pass over every app, not measured here (see cold)
        with LoopThread(controller, interval) as loop:
            for _ in range(rounds):
                if during_resync:
                    controller.queue.resync_soon(controller.clock.now(), force=True)
                    loop.wake()
                    time.sleep(rng.uniform(0, 0.3))
                else:
                    time.sleep(rng.uniform(0, interval))
                plan = generated.apps[rng.randrange(bench.apps)]
                key = AppKey(plan.namespace, plan.name)
                revision = controller.reports[key].revision
                sha = generated.commit_image_bump(plan.index)
                committed = time.perf_counter()
                if push:
                    loop.push(sha)
                written = None
                while written is None and time.perf_counter() - committed < 60:
                    time.sleep(0.005)
                    # a new ReplicaSet, or a patch scaling up an earlier one the template returns to
                    written = stats.first(("create", "patch"), "replicasets", committed)
                assert written is not None, "no ReplicaSet was written within 60 s of a commit"
                polled = next(t for t in loop.polls if t > committed)
                latencies.append((written - committed) * 1000)
                processing.append((written - polled) * 1000)
                # the next commit lands on a settled cluster, so no other rollout's write is counted
                while not ((report := controller.reports[key]).revision > revision and report.settled):
                    assert time.perf_counter() - committed < 90, f"{key} did not settle within 90 s"
                    time.sleep(0.05)
                while during_resync and controller.next_due_in(apps_only=True) == 0.0:
                    assert time.perf_counter() - committed < 180, "the resync did not end within 180 s"
                    time.sleep(0.05)  # the next round forces a resync of its own
        api.close()
    figures = {
        **spread("", latencies),
        **spread("processing_", processing),
        "interval_s": interval,
        "rounds": rounds,
        "clock": "system",
        **facts,
    }
    ok = figures["p99_ms"] <= (500 if push else 1000 if during_resync else interval * 1000 + 300)
    after_poll = f"median {figures['processing_median_ms']:.0f}, p99 {figures['processing_p99_ms']:.0f} ms"
    summary = (
        f"median {figures['median_ms']:.0f} ms, p99 {figures['p99_ms']:.0f} ms at a {interval:g} s "
        f"interval (after the poll: {after_poll})"
    )
    return Measured(figures, ok, summary)


@scenario("step-overhead", target="100 apps rolling: controller time per step p50 ≤ 10 ms, p99 ≤ 50 ms")
def step_overhead(bench: Bench) -> Measured:
    """100 generated apps (fewer with a smaller --apps) roll to a new image at once. The cluster
    runs as users run it, in its own process over HTTPS (the daemon of ``gitdeploy cluster up``),
    on the system clock: pods are ready 0.5 s after they start. The loop runs as ``gitdeploy
    run`` does (:class:`LoopThread`, ReplicaSets watched, the loop's 4 workers). Each app's step
    is timed in the loop (snapshot from the namespace lists, plan, writes and their HTTPS round
    trips); ``per_step_of_pass`` is the pass time divided by its steps. The requests of the
    rollout are counted by the cluster."""
    apps = min(100, bench.apps)
    generated = generate_repo(bench.work / "step-overhead-repo", apps, bench.seed)
    keys = [AppKey(plan.namespace, plan.name) for plan in generated.apps]
    ready_after = SIMULATION.pod_start_seconds
    timings = StepTimings()
    with daemon_world(bench, "step-overhead", generated.url, ready_after) as world:
        controller, cluster, sent = world
        timings.in_requests = sent.waited
        with LoopThread(controller, 0.2, watch_rollouts=True, timings=timings) as loop:
            roll_out(loop, keys, "step-overhead: the first deploy", 600)
            timings.clear()
            cluster.reset_stats()
            with cluster.cpu_used() as cpu:
                started = time.perf_counter()
                generated.commit_versions(2)
                roll_out(loop, keys, "step-overhead: the rollout", 600)
                rollout_s = time.perf_counter() - started
        requests = cluster.requests()
    samples = timings.step_ms
    writes = sum(n for kind, n in requests.items() if kind.split()[0] in WRITE_VERBS)
    figures: dict[str, Any] = {
        **spread("step_", samples),
        **spread("step_cpu_", timings.step_cpu_ms),
        **spread("step_in_requests_", timings.step_in_requests_ms),
        "steps": len(samples),
        "apps": apps,
        "per_step_of_pass_median_ms": round(statistics.median(timings.pass_ms_per_step), 2),
        "workers": controller.workers,
        "rollout_s": round(rollout_s, 2),
        "rollout_cpu_s": cpu,
        "requests_per_rollout": round(sum(requests.values()) / apps, 2),
        "writes_per_rollout": round(writes / apps, 2),
        "rollout_requests": requests,
        "ready_after_s": ready_after,
        "clock": "system",
        "cluster": "own process, HTTPS",
    }
    ok = figures["step_median_ms"] <= 10 and figures["step_p99_ms"] <= 50
    summary = (
        f"{len(samples)} steps of {apps} apps: median {figures['step_median_ms']} ms, p99 "
        f"{figures['step_p99_ms']} ms (of it in API requests: median "
        f"{figures['step_in_requests_median_ms']} ms; its CPU: median {figures['step_cpu_median_ms']} "
        f"ms; pass time per step {figures['per_step_of_pass_median_ms']} ms)"
    )
    return Measured(figures, ok, summary)


def _rollout_seconds(
    bench: Bench, name: str, apps: int, replicas: int, ready_after: float
) -> tuple[float, dict[str, int], dict[str, float]]:
    """Deploy ``apps`` apps, then roll them all to a new image with the loop on the system clock
    and the cluster in its own process; return the time from the controller sending the first
    write of the rollout until the loop saw every app Complete, the requests of the rollout by
    ``verb resource`` (counted by the cluster) and the CPU seconds each process used for it."""
    names = [f"app{i:04d}" for i in range(apps)]
    keys = [AppKey("bench", n) for n in names]
    repo = PlainRepo(bench.work / "plain" / name)
    repo.commit({"README.md": "# bench\n"}, "start")
    with daemon_world(bench, name, str(repo.root), ready_after) as (controller, cluster, sent):
        repo.apps_at(names, replicas, 1)
        with LoopThread(controller, 0.2, watch_rollouts=True) as loop:
            roll_out(loop, keys, f"{name}: the first deploy", 600)
            cluster.reset_stats()
            with cluster.cpu_used() as cpu:
                marked = time.perf_counter()
                repo.apps_at(names, replicas, 2)
                roll_out(loop, keys, f"{name}: the rollout", 1200)
                done = time.perf_counter()
        requests = cluster.requests()
    return done - sent.first_write(marked), requests, cpu


@scenario("makespan", target="rollout time ÷ (waves × R) ≤ 1.05 (1 app), ≤ 1.10 (1,000 apps)")
def makespan(bench: Bench) -> Measured:
    """System clock: one app of 100 replicas, then 1,000 apps of 4 (fewer with a smaller --apps),
    rolling 25%/25% with pods ready R seconds after they start (the simulated kubelet). The lower
    bound is waves × R, where a wave replaces at most maxSurge + maxUnavailable pods. The cluster
    runs as users run it, in its own process over HTTPS (the daemon of ``gitdeploy cluster up``);
    the rollout time starts when the controller sends its first write. The requests of each
    rollout (per app for the many) are counted by the cluster."""
    many = min(1000, bench.apps)
    one_r, many_r = 2.0, 5.0
    one_s, one_requests, one_cpu = _rollout_seconds(bench, "makespan-one", 1, 100, one_r)
    many_s, many_requests, many_cpu = _rollout_seconds(bench, "makespan-many", many, 4, many_r)
    one_bound, many_bound = rolling_waves(100) * one_r, rolling_waves(4) * many_r
    figures: dict[str, Any] = {
        "one_app_s": round(one_s, 2),
        "one_app_lower_bound_s": one_bound,
        "one_app_ratio": round(one_s / one_bound, 3),
        "many_apps": many,
        "many_apps_s": round(many_s, 2),
        "many_apps_lower_bound_s": many_bound,
        "many_apps_ratio": round(many_s / many_bound, 3),
        "ready_after_s": {"one": one_r, "many": many_r},
        "one_app_requests": one_requests,
        "many_apps_requests_per_app": {kind: round(n / many, 2) for kind, n in many_requests.items()},
        "rollout_cpu_s": {"one": one_cpu, "many": many_cpu},
        "clock": "system",
        "cluster": "own process, HTTPS",
    }
    ok = figures["one_app_ratio"] <= 1.05 and figures["many_apps_ratio"] <= 1.10
    summary = (
        f"1 app × 100: {one_s:.2f} s / {one_bound:.0f} s = {figures['one_app_ratio']}; {many} apps × 4: "
        f"{many_s:.2f} s / {many_bound:.0f} s = {figures['many_apps_ratio']}"
    )
    return Measured(figures, ok, summary)


@scenario("api-economy", target="writes per rollout ≤ 2 × waves + 2; reads per settled app per pass 0")
def api_economy(bench: Bench) -> Measured:
    """Fake clock: 20 apps of 8 replicas roll 25%/25% at once; every request the embedded
    cluster received during the rollouts is counted (events included). Then one pass over the
    20 settled apps: reads must be namespace lists only (no per-app get), and no write."""
    apps, replicas = min(20, bench.apps), 8
    names = [f"app{i:04d}" for i in range(apps)]
    clock = FakeClock()
    with controller_world(bench, "api-economy", clock, 1.0) as (repo, controller, cluster):
        stats = timed_stats(cluster)
        repo.apps_at(names, replicas, 1)
        settle(controller, clock)
        stats.reset()
        repo.apps_at(names, replicas, 2)
        settle(controller, clock)
        rollout = stats.snapshot()
        writes = stats.writes()
        events = stats.count("create", "events")
        controller.mark_due()
        stats.reset()
        Scheduler(controller).pass_once()
        settled = stats.snapshot()
        settled_gets, settled_lists, settled_writes = stats.count("get"), stats.count("list"), stats.writes()
    waves = rolling_waves(replicas)
    per_rollout = writes / apps
    figures = {
        "apps": apps,
        "replicas": replicas,
        "waves": waves,
        "writes_per_rollout": round(per_rollout, 2),
        "writes_per_rollout_without_events": round((writes - events) / apps, 2),
        "writes_per_rollout_by_resource": {
            resource: round(
                sum(n for (v, r), n in rollout.items() if r == resource and v in WRITE_VERBS) / apps, 2
            )
            for resource in sorted({r for v, r in rollout if v in WRITE_VERBS})
        },
        "writes_allowed": 2 * waves + 2,
        "rollout_requests": {f"{v} {r}": n for (v, r), n in sorted(rollout.items())},
        "settled_pass_lists": settled_lists,
        "settled_pass_gets": settled_gets,
        "settled_pass_writes": settled_writes,
        "settled_pass_requests": {f"{v} {r}": n for (v, r), n in sorted(settled.items())},
        "clock": "fake",
    }
    ok = per_rollout <= 2 * waves + 2 and settled_gets == 0 and settled_writes == 0
    summary = (
        f"{per_rollout:.1f} writes per rollout ({figures['writes_per_rollout_without_events']} without "
        f"events; allowed {2 * waves + 2} for {waves} waves); settled pass: {settled_lists} lists, "
        f"{settled_gets} gets, {settled_writes} writes for {apps} apps"
    )
    return Measured(figures, ok, summary)


class Verdicts:
    """The apps whose verdict (``[namespace/app] Sync/Health: ...``) a ``gitdeploy run`` log gave
    so far, read as the log grows."""

    LINE = re.compile(rb"\[([\w.-]+/[\w.-]+)\] \w+/\w+: ")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.apps: set[bytes] = set()
        self._offset = 0
        self._partial = b""

    def count(self) -> int:
        if self.path.exists():
            with self.path.open("rb") as log_file:
                log_file.seek(self._offset)
                chunk = self._partial + log_file.read()
                self._offset = log_file.tell()
            complete, _, self._partial = chunk.rpartition(b"\n")
            self.apps.update(found.group(1) for found in self.LINE.finditer(complete))
        return len(self.apps)


@scenario("memory", target="peak RSS of `gitdeploy run`, 10,000 apps, 20,000 ReplicaSets ≤ 300 MiB")
def memory(bench: Bench) -> Measured:
    """A real ``gitdeploy run`` process (the installed command; ``--no-leader-elect``, so that no
    Lease is left in the cached cluster) against the cached cluster (two ReplicaSets per app),
    until its first pass over every app is done (its log gave every app a verdict), then SIGTERM.
    The target is judged on the peak from wait4, which includes the git commands it ran (in a pod
    they count against its memory limit too); the process's own peak is printed next to it."""
    executable = Path(sys.executable).with_name("gitdeploy")
    with bench.running_cluster() as (cluster, facts):
        stats = timed_stats(cluster)
        stats.reset()
        started = time.perf_counter()
        verdicts = Verdicts(bench.work / "memory-run.log")
        command = [str(executable), "--kubeconfig", str(cluster.kubeconfig_path)]
        command += ["--state-dir", str(bench.state_dir("memory")), "run", "--repo", bench.repo().url]
        command += ["--no-leader-elect"]
        peak = measure_peak_rss(
            command, run_for=600, until=lambda: verdicts.count() >= bench.apps, output=verdicts.path
        )
        replica_sets = cluster.counts().get("replicasets.apps", 0)
        listed = stats.count("list", "replicasets")
    figures = {
        "peak_rss_mib": round(peak.peak_rss_mib, 1),
        "own_peak_rss_mib": round(peak.own_peak_rss_mib, 1) if peak.own_peak_rss_mib else None,
        "replica_sets": replica_sets,
        "apps_with_verdict": verdicts.count(),
        "replica_set_lists": listed,
        "run_s": round(time.perf_counter() - started, 1),
        "exit_code": peak.exit_code,
        **facts,
    }
    ok = peak.peak_rss_mib <= 300 and verdicts.count() >= bench.apps and peak.exit_code == 0
    own = f"{peak.own_peak_rss_mib:.0f} MiB" if peak.own_peak_rss_mib else "unknown"
    summary = (
        f"peak RSS {peak.peak_rss_mib:.0f} MiB with its git commands (the process itself: {own}); "
        f"{bench.apps} apps, {replica_sets} ReplicaSets"
    )
    return Measured(figures, ok, summary)


# -- running --------------------------------------------------------------------------------------


def run_scenario(entry: Scenario, bench: Bench) -> dict[str, Any]:
    line: dict[str, Any] = {"scenario": entry.name, "apps": bench.apps}
    log(f"running {entry.name} ({bench.apps} apps)")
    measured = entry.run(bench)
    figures = measured.figures
    return {**line, **figures, "target": entry.target, "ok": measured.ok, "_summary": measured.summary}


@scenario("metrics-scrape", target="0 API requests per /metrics scrape once the watches run")
def metrics_scrape(bench: Bench) -> Measured:
    """System clock: the cached cluster of every app (spread over 12 namespaces) and ``run``'s
    metrics wiring (:func:`~gitdeploy.cli.run_cmd.instrument`); one scrape renders ``/metrics``,
    counting the apps by state. Measured twice: before the loop's ReplicaSet and record watches
    have listed the namespaces (every scrape lists both kinds in each namespace: what every scrape
    did before the watch cache), then once they run (the counts come from the watch cache)."""
    rounds = bench.rounds_or(20)
    with bench.running_cluster() as (cluster, facts), config_repo(bench, "metrics-scrape") as repo:
        stats = timed_stats(cluster)
        api = api_client_for(cluster)
        controller = Controller(repo, Cluster(api), SystemClock())
        controller.poll()
        metrics = Metrics(process_collectors=False)
        instrument(controller, metrics)
        listing = _scrapes(metrics, stats, rounds)
        stop = threading.Event()
        watcher.watch_records(controller, stop, lambda: None)
        watcher.watch_rollouts(controller, stop, lambda: None)
        namespaces = [ns for ns in controller.managed_namespaces() if ns is not None]
        deadline = time.monotonic() + 120
        while any(controller.watch_cache.contents(ns) is None for ns in namespaces):
            assert time.monotonic() < deadline, "the watches did not list every namespace in 120 s"
            time.sleep(0.05)
        watching = _scrapes(metrics, stats, rounds)
        stop.set()
        api.close()
    figures = {
        **{f"lists_{k}": v for k, v in listing.items()},
        **{f"watches_{k}": v for k, v in watching.items()},
        "namespaces": len(namespaces),
        "rounds": rounds,
        "clock": "system",
        **facts,
    }
    summary = (
        f"before the watches list: {listing['median_ms']:.0f} ms, {listing['requests']:.0f} requests "
        f"per scrape; from the watch cache: {watching['median_ms']:.1f} ms (p99 "
        f"{watching['p99_ms']:.1f}), {watching['requests']:.0f} requests; {watching['apps']} apps counted"
    )
    return Measured(figures, watching["requests"] == 0 and watching["apps"] == bench.apps, summary)


def _scrapes(metrics: Metrics, stats: TimedStats, rounds: int) -> dict[str, Any]:
    """``rounds`` renders of ``/metrics``: their time, the API requests per scrape (a watch that
    the server ended and the loop resumed meanwhile is not the scrape's), the apps counted."""
    stats.reset()
    times = [timed_ms(metrics.render) for _ in range(rounds)]
    samples = text_string_to_metric_families(metrics.render().decode())
    apps = sum(s.value for f in samples if f.name == "gitdeploy_apps_sync_state" for s in f.samples)
    requests = (stats.count() - stats.count("watch")) / (rounds + 1)
    return {**spread("", times), "requests": requests, "apps": int(apps)}


def print_table(lines: Sequence[dict[str, Any]], apps: int) -> None:
    table = Table(title=f"gitdeploy benchmarks, {apps} apps, {os.cpu_count()} CPUs")
    for column in ("scenario", "measured", "target", "ok"):
        table.add_column(column, overflow="fold")
    for line in lines:
        ok = {True: "yes", False: "NO", None: "—"}[line["ok"]]
        measured = line["_summary"]
        table.add_row(line["scenario"], measured, line["target"], ok)
    Console(width=None if sys.stdout.isatty() else 150).print(table)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help=f"one of {', '.join(SCENARIOS)}")
    parser.add_argument("--apps", type=int, default=10_000, help="apps in the generated repo (10,000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generated repo")
    parser.add_argument("--rounds", type=int, default=None, help="override each scenario's rounds")
    parser.add_argument("--json-only", action="store_true", help="print the JSON lines only, no table")
    add_cache_dir_option(parser)
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
