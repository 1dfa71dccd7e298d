"""Crashes: ``gitdeploy run`` killed (SIGKILL) at every write of a rollout, and at random writes.

For each kind of rollout (Rolling; Recreate with pre, mid and post hooks; Custom) a reference
rollout runs uninterrupted first, and the embedded cluster's write gate (see
:mod:`gitdeploy.localcluster.writegate`) counts its writes: ``W``. Then, for every ``N`` in
``1..W``, the same two commits go to a fresh namespace; ``run`` is started, the gate stops the
cluster at write ``N`` (before it is applied; and once right after write ``W``: see
:func:`kill_points`), ``run`` is killed with SIGKILL, and a new ``run`` is started. Once it
settles, the case must have:

* the same end state: the same ReplicaSets with the same replica counts, revisions and phases,
  and the same pods (by template hash, all ready);
* the same history: ``gitdeploy history -o json``, with commits compared by their place in
  the repo (each case has its own repo, so its own shas) and times left out;
* the rollout bounds held at every change of the pods, the crash included (a pod watch):
  maxSurge/maxUnavailable for Rolling; never pods of two templates at once for Recreate.

More cases (``CRASH_RANDOM_CASES``) take a seeded random kind, write and phase (``CRASH_SEED`` to
replay; the seed is in each test's id). Timing: the embedded cluster's fast simulated pods, as in
the e2e tests.
"""

from __future__ import annotations

import json
import os
import random
import signal
import ssl
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from kubernetes import client

from gitdeploy.cluster.connection import connect
from gitdeploy.core.hashing import TEMPLATE_HASH_LABEL
from gitdeploy.core.observed import POD_ROLE_LABEL
from tests.fixtures.cli import gitdeploy_executable
from tests.fixtures.gitrepo import GitRemote, build_isolated_git_env
from tests.fixtures.waiting import eventually
from tests.realk8s.podwatch import PodState, PodWatch

SEED = int(os.environ.get("CRASH_SEED", "19"))
RANDOM_CASES = int(os.environ.get("CRASH_RANDOM_CASES", "10"))
"""The issue asks for 50; 10 by default keep the test command within its time (set 50 for all)."""
SETTLE_SECONDS = 180.0
"""A bound for a run that hangs, not a speed target: a loaded machine may take a minute or more."""
RUN_FLAGS = ("--interval", "0.3s", "--no-leader-elect", "--log-format", "text")


# -- the three rollouts ------------------------------------------------------------------------------


def rolling(image: str, namespace: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: app, namespace: {namespace}}}
spec:
  replicas: 4
  strategy: {{type: RollingUpdate, rollingUpdate: {{maxSurge: 1, maxUnavailable: 1}}}}
  selector: {{matchLabels: {{app: app}}}}
  template:
    metadata: {{labels: {{app: app}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{{name: app, image: "{image}"}}]
"""


def _deployment_config(image: str, namespace: str, strategy: str) -> str:
    return f"""\
apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata: {{name: app, namespace: {namespace}}}
spec:
  replicas: 2
  selector: {{app: app}}
  template:
    metadata: {{labels: {{app: app}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{{name: app, image: "{image}"}}]
  strategy:
{strategy}
  triggers: [{{type: ConfigChange}}]
"""


def recreate_with_hooks(image: str, namespace: str) -> str:
    return _deployment_config(
        image,
        namespace,
        """\
    type: Recreate
    recreateParams:
      timeoutSeconds: 60
      pre: {failurePolicy: Abort, execNewPod: {containerName: app, command: [/bin/drain]}}
      mid: {failurePolicy: Retry, execNewPod: {containerName: app, command: [/bin/migrate]}}
      post: {failurePolicy: Ignore, execNewPod: {containerName: app, command: [/bin/warm]}}""",
    )


def custom(image: str, namespace: str) -> str:
    return _deployment_config(
        image,
        namespace,
        """\
    type: Custom
    customParams: {image: "example/deployer:1.0", command: [/bin/deploy]}""",
    )


def app_pods(pods: dict[str, PodState]) -> list[PodState]:
    """The app's own pods (not hook or deployer pods); Terminating ones count until gone."""
    return [p for p in pods.values() if POD_ROLE_LABEL not in p.labels and p.labels.get("app") == "app"]


def rolling_bounds(pods: dict[str, PodState]) -> None:
    """4 replicas, maxSurge 1, maxUnavailable 1: at most 5 pods run that are not Terminating (what
    maxSurge counts, as the Deployment controller counts it), at least 3 serve."""
    mine = [p for p in app_pods(pods) if not p.terminating]
    assert len(mine) <= 5, f"{len(mine)} pods run, maxSurge allows 5"
    serving = [p for p in mine if p.ready]
    assert len(serving) >= 3, f"only {len(serving)} ready pods, maxUnavailable allows 3"


def no_overlap(pods: dict[str, PodState]) -> None:
    """Recreate: never a pod of the new template while a pod of the old one exists."""
    hashes = sorted({p.labels.get(TEMPLATE_HASH_LABEL, "") for p in app_pods(pods)})
    assert len(hashes) <= 1, f"pods of two templates exist at once: {hashes}"


@dataclass(frozen=True)
class Kind:
    name: str
    manifest: Callable[[str, str], str]
    bounds: Callable[[dict[str, PodState]], None] | None


KINDS = {
    "rolling": Kind("rolling", rolling, rolling_bounds),
    "recreate-hooks": Kind("recreate-hooks", recreate_with_hooks, no_overlap),
    "custom": Kind("custom", custom, None),
}


# -- the cluster, its write gate, and one case -------------------------------------------------------


@dataclass
class Outcome:
    """What a case ended with, comparable with the reference's."""

    replica_sets: list[tuple[str, int, str, str]]
    pods: dict[str, int]
    history: list[dict[str, Any]]


@dataclass
class Bench:
    """One embedded cluster (``gitdeploy cluster up``) shared by the cases of a module."""

    root: Path
    env: dict[str, str] = field(init=False)
    cases: int = 0

    def __post_init__(self) -> None:
        home = self.root / "home"
        home.mkdir(parents=True, exist_ok=True)
        state = self.root / "state"
        self.env = {**build_isolated_git_env(home), "GITDEPLOY_STATE_DIR": str(state), "NO_COLOR": "1"}
        self.env.pop("KUBECONFIG", None)
        up = self.cli("cluster", "up", "--pod-start-seconds", "0.1", "--job-seconds", "0.2")
        assert up.returncode == 0, up.stderr
        connection = connect(state / "kubeconfig")
        self.apps: Any = client.AppsV1Api(connection.api)
        self.core: Any = client.CoreV1Api(connection.api)
        configuration = connection.api.configuration
        self.kubeconfig = state / "kubeconfig"
        self.http = httpx.Client(
            base_url=f"{configuration.host}/gitdeploy/v1",
            headers={"Authorization": f"Bearer {(state / 'token').read_text().strip()}"},
            verify=ssl.create_default_context(cafile=configuration.ssl_ca_cert),
        )

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [gitdeploy_executable(), *args], env=self.env, capture_output=True, text=True, timeout=120
        )

    def gate(self, method: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self.http.request(method, "/writegate", json=body)
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
        return answer

    def close(self) -> None:
        self.gate("DELETE")
        self.http.close()
        self.cli("cluster", "down")

    def start_run(self, repo: GitRemote, namespace: str, log: Path) -> subprocess.Popen[bytes]:
        with log.open("a") as out:
            return subprocess.Popen(
                [gitdeploy_executable(), "run", "--repo", repo.url, "-n", namespace, *RUN_FLAGS],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    made = Bench(tmp_path_factory.mktemp("crash"))
    try:
        yield made
    finally:
        made.close()


TERMINAL = ("Complete", "Failed", "Cancelled")
PHASE, REVISION = "gitdeploy.io/phase", "gitdeploy.io/revision"


def settled(bench: Bench, namespace: str, commits: list[str]) -> Outcome | None:
    """The case's outcome once revision 2 ended and nothing moves any more; else None."""
    replica_sets = bench.apps.list_namespaced_replica_set(namespace).items
    latest = [rs for rs in replica_sets if (rs.metadata.annotations or {}).get(REVISION) == "2"]
    if not latest or latest[0].metadata.annotations.get(PHASE) not in TERMINAL:
        return None
    if any((rs.status.ready_replicas or 0) != rs.spec.replicas for rs in replica_sets):
        return None
    pods = bench.core.list_namespaced_pod(namespace).items
    if any(p.metadata.deletion_timestamp or p.status.phase in ("Pending",) for p in pods):
        return None
    if any(POD_ROLE_LABEL in (p.metadata.labels or {}) and p.status.phase == "Running" for p in pods):
        return None  # a hook or deployer still runs
    serving = Counter(
        p.metadata.labels.get(TEMPLATE_HASH_LABEL, "")
        for p in pods
        if POD_ROLE_LABEL not in (p.metadata.labels or {}) and p.status.phase == "Running"
    )
    if sum(serving.values()) != sum(rs.spec.replicas for rs in replica_sets):
        return None
    sets = sorted(
        (
            rs.metadata.name,
            rs.spec.replicas,
            rs.metadata.annotations.get(REVISION, ""),
            rs.metadata.annotations.get(PHASE, ""),
        )
        for rs in replica_sets
    )
    return Outcome(sets, dict(serving), history(bench, namespace, commits))


def history(bench: Bench, namespace: str, commits: list[str]) -> list[dict[str, Any]]:
    """``gitdeploy history -o json``, commits as their place in the repo, times left out."""
    shown = bench.cli("history", f"{namespace}/app", "-o", "json")
    assert shown.returncode == 0, shown.stderr
    entries: list[dict[str, Any]] = json.loads(shown.stdout)
    return [normalised(entry, commits) for entry in entries]


def normalised(value: Any, commits: list[str]) -> Any:
    if isinstance(value, dict):
        return {k: normalised(v, commits) for k, v in value.items() if k not in ("startedAt", "finishedAt")}
    if isinstance(value, list):
        return [normalised(v, commits) for v in value]
    if isinstance(value, str) and value in commits:
        return f"commit #{commits.index(value) + 1}"
    return value


@dataclass
class Case:
    """One rollout of ``kind`` in a namespace of its own, ``run`` killed at write ``at`` (0: never)."""

    kind: Kind
    at: int = 0
    phase: str = "before"
    killed_at: str | None = None
    writes: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.kind.name}, kill {self.phase} write {self.at} ({self.killed_at or 'not reached'})"


@dataclass
class Pool:
    """``size`` copies of a kind's app, each in its own namespace, in one repo: commit 1 deploys
    v1 of every copy (synced), commit 2 changes every copy to v2, and each case's ``run -n`` rolls
    out one copy. So every case rolls out the same commits."""

    bench: Bench
    kind: Kind
    size: int
    repo: GitRemote = field(init=False)
    commits: list[str] = field(init=False)
    free: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.bench.cases += 1
        label = f"{self.kind.name}-{self.bench.cases}"
        self.free = [f"{label}-{i}" for i in range(self.size)]
        self.repo = GitRemote(self.bench.root / label)
        self.commits = [self.repo.commit_and_push("v1", self.files("example/app:1"))]
        synced = self.bench.cli("sync", "--repo", self.repo.url, "--wait", "--timeout", "120s")
        assert synced.returncode == 0, synced.stdout + synced.stderr
        self.commits.append(self.repo.commit_and_push("v2", self.files("example/app:2")))

    def files(self, image: str) -> dict[str, str | bytes]:
        apps = {f"apps/{ns}.yaml": self.kind.manifest(image, ns) for ns in self.free}
        return {"gitdeploy.yaml": "paths: [apps]\n", **apps}

    def play(self, case: Case) -> Outcome:
        """Roll out v2 of one copy with ``run``, killing it at the case's write and restarting it."""
        bench, namespace = self.bench, self.free.pop()
        log = bench.root / f"{namespace}.log"
        with PodWatch(namespace, bench.kubeconfig, check=case.kind.bounds, watch_seconds=1) as watched:
            bench.gate("PUT", {"at": case.at, "phase": case.phase, "namespace": namespace})
            run = bench.start_run(self.repo, namespace, log)
            try:
                found = cast(
                    "dict[str, Any] | Outcome",
                    eventually(
                        lambda: self.tripped_or_settled(namespace),
                        f"{case}: the write or the end of the rollout",
                        SETTLE_SECONDS,
                    ),
                )
                case.writes = bench.gate("GET")["writes"]
                if isinstance(found, Outcome):
                    outcome = found
                else:
                    run.send_signal(signal.SIGKILL)
                    run.wait(timeout=30)
                    case.killed_at = found["write"]
                    bench.gate("DELETE")
                    run = bench.start_run(self.repo, namespace, log)
                    outcome = eventually(
                        lambda: self.settled(namespace), f"{case}: settled after the restart", SETTLE_SECONDS
                    )
            finally:
                bench.gate("DELETE")
                run.terminate()
                run.wait(timeout=30)
        case.violations = watched.failures
        assert watched.events > 0, "the pod watch saw nothing"
        return outcome

    def settled(self, namespace: str) -> Outcome | None:
        return settled(self.bench, namespace, self.commits)

    def tripped_or_settled(self, namespace: str) -> dict[str, Any] | Outcome | None:
        """The write gate's state once it tripped, or the outcome of a rollout that never tripped
        it. An outcome counts only if no write came while it was read (a second or more, with
        ``history``): the step that makes a rollout look settled may have writes left (its event)."""
        gate = self.bench.gate("GET")
        if gate["tripped"]:
            return gate
        outcome = self.settled(namespace)
        after = self.bench.gate("GET")
        if after["tripped"]:
            return after
        return outcome if after["seen"] == gate["seen"] else None


@pytest.fixture(scope="module")
def references(bench: Bench) -> dict[str, tuple[Case, Outcome]]:
    """Each kind's rollout, uninterrupted, with its writes counted."""
    found = {}
    for kind in KINDS.values():
        case = Case(kind)
        found[kind.name] = (case, Pool(bench, kind, 1).play(case))
    return found


def check(case: Case, outcome: Outcome, reference: Outcome) -> list[str]:
    """What went wrong in ``case`` (nothing: an empty list)."""
    problems = [f"{case}: bounds broken: {v}" for v in case.violations[:3]]
    if case.killed_at is None and len(case.writes) >= case.at:
        problems.append(f"{case}: the gate never tripped, though the run made {len(case.writes)} writes")
    # A run that settled in fewer writes than the reference (one pass fewer while waiting for a pod,
    # on a loaded machine) had no write N to be killed at; its end state and history still count.
    if outcome.replica_sets != reference.replica_sets or outcome.pods != reference.pods:
        problems.append(
            f"{case}: end state {outcome.replica_sets} {outcome.pods}, "
            f"not {reference.replica_sets} {reference.pods}"
        )
    if outcome.history != reference.history:
        differ = [
            (n, e)
            for n, e in enumerate(outcome.history)
            if n >= len(reference.history) or e != reference.history[n]
        ]
        problems.append(f"{case}: history differs from the reference at {differ[:1]}")
    return problems


def kill_points(writes: int) -> list[tuple[int, str]]:
    """Where the every-write sweep kills ``run``: before each write, and after the last.

    Killed before write ``N`` or right after write ``N-1``, the cluster holds the same writes of
    the rollout, ``1..N-1``, for the next ``run`` to find (the gate holds every later write), so
    sweeping both phases would play each state twice. After the last write is the one state no
    "before" reaches. The random cases still draw both phases.

    >>> kill_points(3)
    [(1, 'before'), (2, 'before'), (3, 'before'), (3, 'after')]
    """
    return [(at, "before") for at in range(1, writes + 1)] + [(writes, "after")]


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_killed_at_every_write_the_rollout_ends_as_if_never_killed(
    kind: str, bench: Bench, references: dict[str, tuple[Case, Outcome]]
) -> None:
    reference_case, reference = references[kind]
    assert not reference_case.violations, reference_case.violations
    points = kill_points(len(reference_case.writes))
    assert len(points) > 1
    pool = Pool(bench, KINDS[kind], len(points))
    problems: list[str] = []
    killed = 0
    for at, phase in points:
        case = Case(KINDS[kind], at, phase)
        problems += check(case, pool.play(case), reference)
        killed += case.killed_at is not None
    ended = len(points) - len(problems)
    print(f"{kind}: killed at {killed} of {len(points)} points; {ended} ended as reference")
    assert not problems, "\n".join(problems)
    assert killed >= 0.8 * len(points), f"only {killed} of {len(points)} runs reached their kill point"


def _random_cases() -> list[tuple[str, float, str]]:
    """(kind, where in the rollout as a share of its writes, phase), from ``SEED``."""
    chooser = random.Random(SEED)
    return [
        (chooser.choice(list(KINDS)), chooser.random(), chooser.choice(["before", "after"]))
        for _ in range(RANDOM_CASES)
    ]


RANDOM = _random_cases()


@pytest.fixture(scope="module")
def random_pools(bench: Bench) -> dict[str, Pool]:
    sizes = Counter(kind for kind, _, _ in RANDOM)
    return {kind: Pool(bench, KINDS[kind], size) for kind, size in sizes.items()}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "share", "phase"), RANDOM, ids=[f"seed{SEED}-{i}-{k}-{p}" for i, (k, _, p) in enumerate(RANDOM)]
)
def test_killed_at_a_random_write_the_rollout_ends_as_if_never_killed(
    kind: str,
    share: float,
    phase: str,
    bench: Bench,
    references: dict[str, tuple[Case, Outcome]],
    random_pools: dict[str, Pool],
) -> None:
    reference_case, reference = references[kind]
    case = Case(KINDS[kind], 1 + int(share * len(reference_case.writes)), phase)
    outcome = random_pools[kind].play(case)
    problems = check(case, outcome, reference)
    assert not problems, f"seed {SEED}: " + "\n".join(problems)
