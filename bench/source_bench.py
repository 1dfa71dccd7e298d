"""Benchmark of the config repository source on a repository with 10,000 manifests.

Run: ``.venv/bin/python bench/source_bench.py [--manifests N] [--rounds R]``

It builds a bare "remote" in a temporary directory with ``git fast-import`` (not timed), then
measures through :class:`gitdeploy.source.repo.ConfigRepo`:

* the first sync (fetch of everything, listing, reading, parsing and validating every blob):
  for information;
* a no-change poll (target ≤ 50 ms): one ``ls-remote`` against a local remote, so no network;
* a one-file change (target ≤ 200 ms): poll (ls-remote + fetch), one tree diff, reading the
  changed blob and parsing and validating it (``gitdeploy.manifests.loader.analyse_file``) through
  a :class:`~gitdeploy.core.blobcache.BlobCache`.

It prints one JSON object per figure, then a table. Medians over ``--rounds`` rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gitdeploy.core.blobcache import BlobCache
from gitdeploy.manifests.documents import ManifestFile
from gitdeploy.manifests.loader import FileAnalysis, analyse_file
from gitdeploy.source.repo import ConfigRepo

EPOCH = 1_700_000_000


@dataclass(frozen=True)
class Figure:
    name: str
    millis: float
    target_millis: float | None

    @property
    def ok(self) -> bool | None:
        return None if self.target_millis is None else self.millis <= self.target_millis


def render_manifest(i: int, image_tag: str = "1.25") -> str:
    return (
        "apiVersion: apps/v1\nkind: Deployment\n"
        f"metadata:\n  name: app{i:05d}\n  namespace: team{i % 100:02d}\n"
        f"spec:\n  replicas: 2\n  selector:\n    matchLabels: {{app: app{i:05d}}}\n"
        f"  template:\n    metadata:\n      labels: {{app: app{i:05d}}}\n    spec:\n      containers:\n"
        f"        - name: app\n          image: registry.example.com/app{i:05d}:{image_tag}\n"
    )


def manifest_path(i: int) -> str:
    return f"apps/team{i % 100:02d}/app{i:05d}.yaml"


def run_fast_import(bare: Path, stream: str) -> None:
    subprocess.run(["git", "fast-import", "--quiet"], cwd=bare, input=stream.encode(), check=True)


def commit_header(message: str, tick: int, parent: str | None) -> str:
    header = f"commit refs/heads/main\ncommitter Bench <bench@example.com> {EPOCH + tick} +0000\n"
    header += f"data {len(message)}\n{message}\n"
    if parent:
        header += f"from {parent}\n"
    return header


def create_remote(root: Path, manifests: int) -> Path:
    bare = root / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", str(bare)], check=True)
    parts = [commit_header(f"{manifests} apps", 0, None)]
    for i in range(manifests):
        data = render_manifest(i)
        parts.append(f"M 100644 inline {manifest_path(i)}\ndata {len(data.encode())}\n{data}\n")
    parts.append("M 100644 inline README.md\ndata 9\n# config\n\n")
    run_fast_import(bare, "".join(parts))
    return bare


def push_one_change(bare: Path, tick: int, index: int) -> None:
    parent = subprocess.run(
        ["git", "rev-parse", "refs/heads/main"], cwd=bare, capture_output=True, text=True, check=True
    ).stdout.strip()
    data = render_manifest(index, image_tag=f"2.{tick}")
    stream = commit_header(f"bump app{index}", tick, parent)
    stream += f"M 100644 inline {manifest_path(index)}\ndata {len(data.encode())}\n{data}\n"
    run_fast_import(bare, stream)


def time_call(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


def measure(manifests: int, rounds: int) -> list[Figure]:
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="gitdeploy-bench-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        bare = create_remote(root, manifests)
        figures.append(Figure(f"generate remote ({manifests} manifests, fast-import)", _ms(start), None))
        parsed: list[str] = []
        cache: BlobCache[FileAnalysis] = BlobCache()

        def parse(data: bytes, path: str) -> FileAnalysis:
            parsed.append(path)
            analysis = analyse_file(ManifestFile(path, data))
            assert not analysis.diagnostics, analysis.diagnostics
            return analysis

        def parse_cached(blob_sha: str, data: bytes, path: str) -> FileAnalysis:
            return cache.get_or_compute(blob_sha, lambda: parse(data, path))

        with ConfigRepo(str(bare), ref="main", state_dir=root / "state") as repo:
            figures.append(Figure("first sync: poll (ls-remote + full fetch)", time_call(repo.poll), None))
            head = repo.head or ""
            figures.append(
                Figure("first sync: list files (ls-tree)", time_call(lambda: repo.list_files(head)), None)
            )
            start = time.perf_counter()
            for f in repo.files_at(head):
                parse_cached(f.blob_sha, f.data, f.path)
            figures.append(Figure(f"first sync: read + parse {len(parsed)} blobs", _ms(start), None))

            no_change = [time_call(repo.poll) for _ in range(rounds)]
            figures.append(Figure("no-change poll (median)", statistics.median(no_change), 50.0))

            one_change: list[float] = []
            for tick in range(1, rounds + 1):
                push_one_change(bare, tick, index=(tick * 37) % manifests)
                parsed.clear()
                old = repo.head or ""
                start = time.perf_counter()
                result = repo.poll()
                changes = repo.changed_files(old, result.head)
                blobs = repo.read_blobs([c.new_blob for c in changes if c.new_blob])
                for change in changes:
                    if change.new_blob:
                        parse_cached(change.new_blob, blobs[change.new_blob], change.path)
                one_change.append(_ms(start))
                assert len(changes) == 1 and len(parsed) == 1, (changes, parsed)
            figures.append(
                Figure(
                    "one-file change: poll + diff + read + parse (median)",
                    statistics.median(one_change),
                    200.0,
                )
            )
            figures.append(Figure("one-file change (max)", max(one_change), None))
    return figures


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def print_figures(figures: list[Figure], manifests: int, rounds: int) -> None:
    for figure in figures:
        print(
            json.dumps(
                {
                    "bench": "source",
                    "figure": figure.name,
                    "ms": round(figure.millis, 2),
                    "target_ms": figure.target_millis,
                    "ok": figure.ok,
                    "manifests": manifests,
                    "rounds": rounds,
                }
            )
        )
    width = max(len(f.name) for f in figures)
    print()
    print(f"{'figure':<{width}}  {'ms':>9}  {'target':>8}  ok")
    for f in figures:
        target = f"≤ {f.target_millis:g}" if f.target_millis is not None else ""
        ok = "" if f.ok is None else ("yes" if f.ok else "NO")
        print(f"{f.name:<{width}}  {f.millis:>9.1f}  {target:>8}  {ok}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--manifests", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    os.environ.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
    figures = measure(args.manifests, args.rounds)
    print_figures(figures, args.manifests, args.rounds)
    return 0 if all(f.ok is not False for f in figures) else 1


if __name__ == "__main__":
    raise SystemExit(main())
