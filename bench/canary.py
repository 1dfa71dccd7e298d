"""Canary benchmarks (issue 23): ``python bench/canary.py [writes] [overhead] [--apps N] [--trace]``.

* ``writes`` — fake clock, the embedded cluster in process: ``--apps`` apps (20) of 8 replicas
  roll to a new image at once, first as Deployments (RollingUpdate 25%/25%), then as Rollouts
  whose canary walks ``setWeight`` 25, 50, 75 within the same bounds (maxSurge 25%,
  maxUnavailable 25%). Every request the cluster received during each rollout is counted (events
  included): writes per rollout by resource, and writes per ReplicaSet scale (a rolling-update
  wave or a canary step moves the pods by scaling ReplicaSets, so this is the cost of a step of
  the same size). ``--trace`` prints the write sequence of one app of each kind.
* ``overhead`` — system clock, the cluster in its own process over HTTPS (as
  ``bench/run.py step-overhead``): 100 apps (``--apps`` caps it) of 4 replicas roll at once, as
  Deployments, then as Rollouts walking ``setWeight`` 25, ``pause`` 1 s, 50, ``pause`` 1 s, 75;
  each app's step is timed in the loop (snapshot, plan, writes and their round trips).

Prints one JSON object per scenario, then a summary line each. Not a test: the figures depend on
the machine (and on what else runs on it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/canary.py``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.clusterstate import settle
from bench.run import (
    WRITE_VERBS,
    Bench,
    LoopThread,
    PlainRepo,
    StepTimings,
    controller_world,
    daemon_world,
    deployment,
    roll_out,
    spread,
    timed_stats,
)
from gitdeploy.clock import FakeClock
from gitdeploy.core.models import AppKey

Manifest = Callable[[str, int, int], str]
CANARY_STEPS = "[{setWeight: 25}, {setWeight: 50}, {setWeight: 75}]"
PAUSED_STEPS = (
    "[{setWeight: 25}, {pause: {duration: 1}}, {setWeight: 50}, {pause: {duration: 1}}, {setWeight: 75}]"
)


def rollout(steps: str) -> Manifest:
    """A Rollout of ``steps`` with the bounds of :func:`bench.run.deployment`'s rolling update."""

    def manifest(name: str, replicas: int, version: int) -> str:
        return f"""\
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {{name: {name}, namespace: bench}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  strategy: {{canary: {{maxSurge: 25%, maxUnavailable: 25%, steps: {steps}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: main, image: "registry.example.com/{name}:1.{version}.0"}}]
"""

    return manifest


def commit_all(repo: PlainRepo, make: Manifest, names: Sequence[str], replicas: int, version: int) -> None:
    repo.commit({f"apps/{n}.yaml": make(n, replicas, version) for n in names}, f"apps at 1.{version}.0")


def _writes_of(
    bench: Bench, kind: str, make: Manifest, apps: int, replicas: int, trace: bool
) -> dict[str, Any]:
    names = [f"app{i:04d}" for i in range(apps)]
    clock = FakeClock()
    with controller_world(bench, f"writes-{kind}", clock, 1.0) as (repo, controller, cluster):
        stats = timed_stats(cluster)
        commit_all(repo, make, names, replicas, 1)
        settle(controller, clock)
        stats.reset()
        commit_all(repo, make, names, replicas, 2)
        passes = settle(controller, clock)
        rollout_counts = stats.snapshot()
        sequence = [(verb, resource) for _, verb, resource in stats.arrivals if verb in WRITE_VERBS]
    writes = {f"{v} {r}": n for (v, r), n in sorted(rollout_counts.items()) if v in WRITE_VERBS}
    total = sum(writes.values())
    scales = writes.get("patch replicasets", 0)
    events = writes.get("create events", 0)
    figures: dict[str, Any] = {
        "kind": kind,
        "writes_per_rollout": round(total / apps, 2),
        "writes_per_rollout_without_events": round((total - events) / apps, 2),
        "replicaset_scales_per_rollout": round(scales / apps, 2),
        "writes_per_replicaset_scale": round(total / max(scales, 1), 2),
        "writes_per_replicaset_scale_without_events": round((total - events) / max(scales, 1), 2),
        "writes_per_rollout_by_kind": {k: round(n / apps, 2) for k, n in writes.items()},
        "passes": passes,
    }
    if trace and apps == 1:
        figures["write_sequence"] = [f"{v} {r}" for v, r in sequence]
    return figures


def writes(bench: Bench, apps: int, trace: bool) -> dict[str, Any]:
    replicas = 8
    count = 1 if trace else apps
    rolling = _writes_of(bench, "rolling", deployment, count, replicas, trace)
    canary = _writes_of(bench, "canary", rollout(CANARY_STEPS), count, replicas, trace)
    return {
        "scenario": "canary-writes",
        "apps": count,
        "replicas": replicas,
        "rolling": rolling,
        "canary": canary,
        "clock": "fake",
        "ok": canary["writes_per_replicaset_scale"] <= rolling["writes_per_replicaset_scale"],
    }


def _overhead_of(bench: Bench, kind: str, make: Manifest, apps: int) -> dict[str, Any]:
    names = [f"app{i:04d}" for i in range(apps)]
    keys = [AppKey("bench", n) for n in names]
    repo = PlainRepo(bench.work / "plain" / f"overhead-{kind}")
    repo.commit({"README.md": "# bench\n"}, "start")
    timings = StepTimings()
    with daemon_world(bench, f"overhead-{kind}", str(repo.root), 0.5) as (controller, cluster, sent):
        timings.in_requests = sent.waited
        commit_all(repo, make, names, 4, 1)
        with LoopThread(controller, 0.2, watch_rollouts=True, timings=timings) as loop:
            roll_out(loop, keys, f"{kind}: the first deploy", 600)
            timings.clear()
            cluster.reset_stats()
            started = time.perf_counter()
            commit_all(repo, make, names, 4, 2)
            roll_out(loop, keys, f"{kind}: the rollout", 1200)
            rollout_s = time.perf_counter() - started
        requests = cluster.requests()
    write_count = sum(n for k, n in requests.items() if k.split()[0] in WRITE_VERBS)
    return {
        "kind": kind,
        **spread("step_", timings.step_ms),
        **spread("step_cpu_", timings.step_cpu_ms),
        **spread("step_in_requests_", timings.step_in_requests_ms),
        "steps": len(timings.step_ms),
        "per_step_of_pass_median_ms": round(statistics.median(timings.pass_ms_per_step), 2),
        "rollout_s": round(rollout_s, 2),
        "requests_per_rollout": round(sum(requests.values()) / apps, 2),
        "writes_per_rollout": round(write_count / apps, 2),
    }


def overhead(bench: Bench, apps: int) -> dict[str, Any]:
    count = min(100, apps)
    rolling = _overhead_of(bench, "rolling", deployment, count)
    canary = _overhead_of(bench, "canary", rollout(PAUSED_STEPS), count)
    return {
        "scenario": "canary-step-overhead",
        "apps": count,
        "replicas": 4,
        "rolling": rolling,
        "canary": canary,
        "clock": "system",
        "cluster": "own process, HTTPS",
    }


def summary(line: dict[str, Any]) -> str:
    rolling, canary = line["rolling"], line["canary"]
    if line["scenario"] == "canary-writes":
        bare = "writes_per_replicaset_scale_without_events"
        return (
            f"{line['apps']} apps × {line['replicas']}: writes per ReplicaSet scale: rolling "
            f"{rolling['writes_per_replicaset_scale']} ({rolling[bare]} "
            f"without events), canary {canary['writes_per_replicaset_scale']} "
            f"({canary[bare]}); per rollout: rolling "
            f"{rolling['writes_per_rollout']} in {rolling['replicaset_scales_per_rollout']} scales, canary "
            f"{canary['writes_per_rollout']} in {canary['replicaset_scales_per_rollout']} scales"
        )
    return (
        f"{line['apps']} apps × 4: step median/p99: rolling "
        f"{rolling['step_median_ms']}/{rolling['step_p99_ms']} ms "
        f"({rolling['steps']} steps), canary {canary['step_median_ms']}/{canary['step_p99_ms']} ms "
        f"({canary['steps']} steps); pass time per step: rolling {rolling['per_step_of_pass_median_ms']} ms, "
        f"canary {canary['per_step_of_pass_median_ms']} ms"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("scenarios", nargs="*", choices=["writes", "overhead"], default=[])
    parser.add_argument("--apps", type=int, default=None, help="apps (writes: 20, overhead: 100)")
    parser.add_argument("--trace", action="store_true", help="writes: the write sequence of one app")
    args = parser.parse_args(argv)
    os.environ.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
    lines = []
    with tempfile.TemporaryDirectory(prefix="gitdeploy-bench-canary-") as temporary:
        bench = Bench(args.apps or 100, 1, Path(temporary), Path(temporary) / "cache")
        for name in args.scenarios or ["writes", "overhead"]:
            if name == "writes":
                line = writes(bench, args.apps or 20, args.trace)
            else:
                line = overhead(bench, args.apps or 100)
            lines.append(line)
            print(json.dumps(line, ensure_ascii=False), flush=True)
    print()
    for line in lines:
        print(f"{line['scenario']}: {summary(line)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
