"""What a resync pays to ask, for each app, whether this process's git head is behind the commit
the app's record names (:class:`~gitdeploy.controller.gitposition.GitPosition`, asked before every
step with leader election or ``--sharding``).

A repository of ``--apps`` commits (``git fast-import``), polled into a mirror; one record per app
naming its own commit, as in a repository where each commit changed one app; every app asked
once at the head, as a resync does. Commits among the head's newest
:data:`~gitdeploy.controller.gitposition.RECENT_COMMITS` are answered from one ``git rev-list``;
older ones by a ``git merge-base`` each.

    python bench/git_position.py [--apps 2000] [--recent N]

``--recent 0`` asks every app's commit with a ``git merge-base``, as before the window.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from gitdeploy.clock import FakeClock
from gitdeploy.controller import gitposition
from gitdeploy.controller.gitposition import GitPosition
from gitdeploy.core.history.records import AppRecord, CommitRef, RevisionEntry
from gitdeploy.core.models import AppKey
from gitdeploy.source.repo import ConfigRepo


def repository(root: Path, commits: int) -> list[str]:
    """A repository of ``commits`` commits on main; their shas, newest first."""
    work = root / "config"
    subprocess.run(["git", "init", "--quiet", "--initial-branch=main", str(work)], check=True)
    stream = []
    for i in range(commits):
        data = f"replicas: {i}\n"
        parent = f"from :{i}\n" if i else ""
        stream.append(
            f"commit refs/heads/main\nmark :{i + 1}\n"
            f"committer Bench <bench@example.com> {1_700_000_000 + i} +0000\n"
            f"data 7\nchange\n{parent}M 644 inline apps/app-{i % 100}.yaml\ndata {len(data)}\n{data}\n"
        )
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(
        ["git", "fast-import", "--quiet"], input="".join(stream).encode(), cwd=work, check=True, env=env
    )
    shas = subprocess.run(["git", "rev-list", "main"], cwd=work, capture_output=True, text=True, check=True)
    return shas.stdout.split()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=2000)
    parser.add_argument("--recent", type=int, default=gitposition.RECENT_COMMITS, help="the window's size")
    args = parser.parse_args(argv)
    apps, gitposition.RECENT_COMMITS = args.apps, args.recent
    with tempfile.TemporaryDirectory(prefix="gitdeploy-position-") as tmp:
        root = Path(tmp)
        shas = repository(root, apps)
        repo = ConfigRepo(str(root / "config"), state_dir=root / "state")
        repo.poll()
        head = repo.head
        position = GitPosition(repo, lambda: head, FakeClock())
        records = [
            AppRecord(
                last_synced_commit=head or "",
                revisions=(RevisionEntry(1, "hash", "rs", commit=CommitRef(sha)),),
            )
            for sha in shas
        ]
        started = time.perf_counter()
        waiting = sum(position.waits(AppKey("bench", f"app-{i}"), record) for i, record in enumerate(records))
        seconds = time.perf_counter() - started
    result = {
        "scenario": "git-position",
        "apps": apps,
        "recent_commits": args.recent,
        "resync_s": round(seconds, 3),
        "per_app_us": round(seconds / apps * 1e6, 1),
        "waiting": waiting,
    }
    print(json.dumps(result))
    print(
        f"{apps} apps, each naming its own commit: {seconds:.3f} s "
        f"({result['per_app_us']} us an app), {waiting} waiting"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
