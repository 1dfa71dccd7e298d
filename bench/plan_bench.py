"""Benchmark of ``gitdeploy plan`` on a config repo of 10,000 apps where one app changed (issue 8).

Run: ``.venv/bin/python bench/plan_bench.py [--apps N] [--rounds R]``

It generates the repo with :mod:`bench.generate` (not timed), then per round commits one image bump
and measures:

* ``plan``: :meth:`gitdeploy.controller.planreader.PlanReader.plan` of the previous head against the
  new one, with a fresh blob cache (as a CLI run has) and the mirror already fetched; target
  ≤ 500 ms ("well under a second");
* ``cli warm``: the installed ``gitdeploy plan -o json`` as a subprocess, state dir already holding
  the mirror (a CI runner with a cached state dir): interpreter start, imports, two polls, the plan;
* ``cli cold``: the same with an empty state dir (the first fetch of every object included), once.

It prints one JSON object per figure, then a table. Not a test: no test asserts on these times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.generate import GeneratedRepo, generate_repo
from gitdeploy.controller.planreader import PlanReader
from gitdeploy.core.planning.changes import ChangeKind
from gitdeploy.source.repo import ConfigRepo

TARGET_MS = 500.0


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 1)


def _gitdeploy() -> str:
    beside = Path(sys.executable).parent / "gitdeploy"
    return str(beside) if beside.exists() else "gitdeploy"


def _set_base(repo: GeneratedRepo, sha: str) -> None:
    subprocess.run(["git", "update-ref", "refs/heads/base", sha], cwd=repo.path, check=True)


def _run_cli(repo: GeneratedRepo, state: Path) -> tuple[float, dict[str, object]]:
    env = {**os.environ, "GITDEPLOY_STATE_DIR": str(state), "NO_COLOR": "1"}
    started = time.perf_counter()
    done = subprocess.run(
        [_gitdeploy(), "plan", "--repo", repo.url, "--base", "base", "--head", "main", "-o", "json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    took = _ms(started)
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return took, report


def measure(apps: int, rounds: int) -> list[dict[str, object]]:
    figures: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="gitdeploy-plan-bench-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        repo = generate_repo(root, apps=apps)
        figures.append({"figure": f"generate repo ({apps} apps)", "ms": _ms(started), "target_ms": None})

        _set_base(repo, repo.head)
        repo.commit_image_bump(7)
        cold_ms, report = _run_cli(repo, root / "cold-state")
        assert report["summary"]["rollout"] == 1, report  # type: ignore[index]
        figures.append(
            {"figure": "cli cold (empty state dir, first fetch)", "ms": cold_ms, "target_ms": None}
        )

        in_process: list[float] = []
        cli_warm: list[float] = []
        parsed: list[int] = []
        with ConfigRepo(repo.url, ref="main", state_dir=root / "state") as source:
            source.poll()
            for i in range(rounds):
                base = repo.head
                head = repo.commit_image_bump((i * 997 + 11) % apps)
                source.poll()
                reader = PlanReader(source)
                started = time.perf_counter()
                plan = reader.plan(base, head, label="base")
                in_process.append(_ms(started))
                parsed.append(reader.files_parsed)
                assert [a.kind for a in plan.apps] == [ChangeKind.ROLLOUT], plan.apps
                _set_base(repo, base)
                took, _ = _run_cli(repo, root / "state")
                cli_warm.append(took)
        figures.append(
            {
                "figure": "plan, one app changed (median)",
                "ms": statistics.median(in_process),
                "target_ms": TARGET_MS,
                "files_parsed": max(parsed),
            }
        )
        figures.append({"figure": "plan (max)", "ms": max(in_process), "target_ms": None})
        figures.append(
            {
                "figure": "cli warm: gitdeploy plan (median)",
                "ms": statistics.median(cli_warm),
                "target_ms": None,
            }
        )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--apps", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    os.environ.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
    figures = measure(args.apps, args.rounds)
    ok = True
    for figure in figures:
        target = figure["target_ms"]
        passed = None if target is None else float(figure["ms"]) <= float(target)  # type: ignore[arg-type]
        ok = ok and passed is not False
        print(json.dumps({"bench": "plan", "apps": args.apps, **figure, "ok": passed}))
    print()
    width = max(len(str(f["figure"])) for f in figures)
    for f in figures:
        target = f"≤ {f['target_ms']:g}" if f["target_ms"] is not None else ""
        print(f"{f['figure']:<{width}}  {f['ms']:>9} ms  {target:>8}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
