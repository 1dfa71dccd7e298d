"""An embedded cluster holding N apps "already running", deployed by gitdeploy, cached between runs.

The apps of a generated repository (``bench.generate``, same apps and seed) are deployed by
gitdeploy's own reconcile loop (:class:`~gitdeploy.controller.loop.Controller`), twice: every app
at image ``1.1.0``, then one commit moves every app to ``1.2.0``. So the cluster holds what a
gitdeploy that has run for a while holds: two ReplicaSets per app (the old one at 0), running and
ready pods, app records with two revisions and their sync status, events. Both rounds run on a
fake clock shared by the controller and the cluster (pods are ready after
:data:`SIMULATION`'s delay of fake time), so filling costs only the API work: a few minutes
for 10,000 apps.

The state directory is kept under the cache directory, keyed by apps, seed and :data:`FORMAT`,
and reused while its marker file exists. Bump :data:`FORMAT` when what is written changes. A
scenario that uses the cluster moves its own generated repository to :data:`VERSION` with
:meth:`~bench.generate.GeneratedRepo.commit_versions`, so that git and the cluster agree.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubernetes import client

from bench.generate import generate_repo
from gitdeploy.clock import FakeClock, SystemClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.scheduler import Scheduler
from gitdeploy.localcluster import LocalCluster, SimulationConfig
from gitdeploy.source.repo import ConfigRepo

FORMAT = 2
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gitdeploy-bench"
"""Where the filled clusters are kept by default (the benchmarks' ``--cache-dir``)."""

VERSION = 2
"""The image version every app runs in a filled cluster (``1.2.0``)."""
MARKER = "bench-complete.json"
SIMULATION = SimulationConfig(pod_start_seconds=0.5)


def add_cache_dir_option(parser: argparse.ArgumentParser) -> None:
    """A benchmark's ``--cache-dir`` (``args.cache_dir``): where it keeps the filled clusters."""
    parser.add_argument(
        "--cache-dir", type=Path, default=CACHE_DIR, help="where the filled embedded clusters are kept"
    )


def api_client_for(cluster: LocalCluster) -> Any:
    """An official-client ``ApiClient`` for ``cluster`` (typed Any: the client's annotations are partial)."""
    configuration = client.Configuration()
    configuration.host = cluster.url
    configuration.api_key = {"authorization": f"Bearer {cluster.token}"}
    if cluster.ca_path is not None:
        configuration.ssl_ca_cert = str(cluster.ca_path)
    return client.ApiClient(configuration)


def settle(controller: Controller, clock: FakeClock, *, limit: float = 24 * 3600.0) -> int:
    """Poll, then pass after pass until nothing is due, moving the fake clock to the next due
    time (at least 0.1 s, so pods become ready); returns the number of passes."""
    passes = Scheduler(controller).settle(clock.advance, limit=limit, shortest=0.1)
    if passes is None:
        raise RuntimeError(f"the apps did not settle within {limit:.0f} s of fake time")
    return passes


def fill(state: Path, apps: int, seed: int, workers: int = 4) -> dict[str, Any]:
    """Deploy ``apps`` generated apps at 1.1.0, then move them all to 1.2.0, into ``state``."""
    clock = FakeClock()
    with tempfile.TemporaryDirectory(prefix="gitdeploy-fill-") as temporary:
        generated = generate_repo(Path(temporary), apps, seed)
        with (
            LocalCluster(state, clock=clock, config=SIMULATION) as cluster,
            ConfigRepo(generated.url, ref="main", state_dir=Path(temporary) / "state") as repo,
        ):
            api = api_client_for(cluster)
            controller = Controller(repo, Cluster(api), clock, workers=workers)
            first = settle(controller, clock)
            print(f"  … {apps} apps deployed at 1.1.0 ({first} passes)", file=sys.stderr, flush=True)
            generated.commit_versions(VERSION)
            second = settle(controller, clock)
            api.close()
            counts = cluster.counts()
    return {"counts": counts, "passes": [first, second]}


@contextmanager
def running_cluster(
    cache_dir: Path, apps: int, seed: int, *, copy_to: Path | None = None
) -> Iterator[tuple[LocalCluster, dict[str, Any]]]:
    """Yield a started embedded cluster (system clock) holding ``apps`` apps at :data:`VERSION`
    (filled now, or reused from the cache). The second value says whether the state was reused
    and how long filling took. A scenario that changes what runs passes ``copy_to``: it then
    works on a copy, and the cache keeps every app at :data:`VERSION`."""
    state = cache_dir / f"cluster-apps{apps}-seed{seed}-f{FORMAT}"
    facts: dict[str, Any] = {"cluster_state": str(state)}
    if not (state / MARKER).exists():
        shutil.rmtree(state, ignore_errors=True)
        print(f"filling an embedded cluster with {apps} apps (cached in {state})", file=sys.stderr)
        started = time.perf_counter()
        filled = fill(state, apps, seed)
        facts["cluster_fill_s"] = round(time.perf_counter() - started, 1)
        (state / MARKER).write_text(json.dumps({**filled, "fill_s": facts["cluster_fill_s"]}))
        facts["cluster_reused"] = False
    else:
        facts["cluster_reused"] = True
    if copy_to is not None:
        shutil.copytree(state, copy_to)
        state = copy_to
    cluster = LocalCluster(state, clock=SystemClock(), config=SIMULATION)
    cluster.start()
    try:
        yield cluster, facts
    finally:
        cluster.stop()
