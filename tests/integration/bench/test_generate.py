"""The benchmark generator writes valid, realistic config repos; bench/run.py prints its JSON lines.

Nothing here looks at a timing: benchmarks print figures, tests check shapes and counts only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bench.generate import MAX_BYTES, MIN_BYTES, GeneratedRepo, generate_repo
from bench.run import measure_peak_rss
from tests.fixtures.cli import REPO_ROOT, RunCli

pytestmark = pytest.mark.usefixtures("isolated_git_config")


def _git(repo: GeneratedRepo, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo.path, capture_output=True, text=True, check=True
    ).stdout.strip()


def _changed_paths(repo: GeneratedRepo) -> list[str]:
    return _git(repo, "diff", "--name-only", f"{repo.heads[-2]}", repo.head).splitlines()


def test_a_generated_repo_validates_with_the_real_cli(run_cli: RunCli, tmp_path: Path) -> None:
    repo = generate_repo(tmp_path, apps=20, seed=7)

    result = run_cli("validate", "--repo", repo.url, "-o", "json")

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["errors"] == []
    assert len(report["apps"]) == 20
    assert {a["kind"] for a in report["apps"]} == {"Deployment", "DeploymentConfig"}
    assert len({a["namespace"] for a in report["apps"]}) >= 5
    assert {a["strategy"] for a in report["apps"]} >= {"Recreate"}


def test_manifests_are_2_to_3_kib_in_several_directories(tmp_path: Path) -> None:
    repo = generate_repo(tmp_path, apps=20, seed=7)

    listing = [line.split() for line in _git(repo, "ls-tree", "-r", "-l", repo.head).splitlines()]
    sizes = {fields[4]: int(fields[3]) for fields in listing if fields[4].startswith("apps/")}

    assert len(sizes) == 20
    assert all(MIN_BYTES <= size <= MAX_BYTES for size in sizes.values()), sizes
    directories = Counter(path.rsplit("/", 1)[0] for path in sizes)
    assert len(directories) >= 8


def test_generation_is_deterministic_and_commits_touch_what_they_say(tmp_path: Path) -> None:
    first = generate_repo(tmp_path / "a", apps=20, seed=3)
    second = generate_repo(tmp_path / "b", apps=20, seed=3)
    assert first.head == second.head

    first.commit_image_bump(5)
    assert _changed_paths(first) == [first.apps[5].path]
    assert "image: registry.example.com/" in first.manifest(5) and ":1.2.0" in first.manifest(5)

    first.commit_unrelated()
    assert _changed_paths(first) == ["README.md"]


def test_run_py_prints_one_json_line_per_scenario(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    scenarios = ["noop-poll", "api-economy", "memory"]
    proc = subprocess.run(
        [sys.executable, "bench/run.py", *scenarios, "--apps", "12", "--rounds", "3", "--json-only"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [line["scenario"] for line in lines] == scenarios, proc.stderr
    noop, economy, memory = lines
    assert all(isinstance(line["ok"], bool) and line["target"] for line in lines)
    assert proc.returncode == (0 if all(line["ok"] for line in lines) else 1)
    assert noop["apps"] == 12 and {"median_ms", "p99_ms"} <= noop.keys()
    assert isinstance(noop["median_ms"], float)
    assert (noop["api_requests"], noop["files_parsed"]) == (0, 0)
    assert economy["waves"] == 2 and economy["writes_per_rollout"] > 0
    assert economy["settled_pass_writes"] == 0 and economy["settled_pass_lists"] >= 1
    assert economy["rollout_requests"]["create replicasets"] == economy["apps"]
    assert memory["replica_sets"] == 2 * 12 and memory["exit_code"] == 0
    assert memory["replica_set_lists"] >= 1 and memory["peak_rss_mib"] > 10


def test_peak_rss_is_measured_for_the_child_process() -> None:
    peak = measure_peak_rss(
        [sys.executable, "-c", "block = bytearray(64 * 2**20); block[::4096] = b'x' * 16384"]
    )

    assert peak.exit_code == 0
    assert 64 <= peak.peak_rss_mib < 1024


def test_the_peak_covers_the_commands_the_process_ran_and_its_own_peak_is_apart() -> None:
    grandchild = "block = bytearray(200 * 2**20); block[::4096] = b'x' * 51200"
    child = "import subprocess, sys, time; "
    child += f"subprocess.run([sys.executable, '-c', {grandchild!r}]); time.sleep(1)"
    peak = measure_peak_rss([sys.executable, "-c", child], run_for=60)

    assert peak.exit_code == 0
    assert peak.peak_rss_mib >= 200  # wait4: the git commands of `gitdeploy run` count
    assert peak.own_peak_rss_mib is not None and peak.own_peak_rss_mib < 100


def test_the_peak_leaves_out_the_memory_of_the_process_that_measures() -> None:
    # bench/run.py grows to several hundred MiB over a full run; on Linux a command it started
    # itself would report that size as its own ru_maxrss (exec keeps the caller's high-water mark).
    measuring = "import sys; from bench.run import measure_peak_rss; "
    measuring += "block = bytearray(300 * 2**20); block[::4096] = b'x' * 76800; "
    measuring += "print(measure_peak_rss([sys.executable, '-c', 'pass']).peak_rss_mib)"
    out = subprocess.run(
        [sys.executable, "-c", measuring], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout

    assert 0 < float(out) < 100


def test_a_long_running_command_itself_gets_the_stop_signal() -> None:
    peak = measure_peak_rss(
        [sys.executable, "-c", "import time; time.sleep(60)"], run_for=60, until=lambda: True
    )

    assert peak.exit_code == -signal.SIGTERM
    assert peak.own_peak_rss_mib is not None and peak.own_peak_rss_mib > 0
