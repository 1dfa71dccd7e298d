"""Desired state read a few blobs at a time is the desired state read at once, parsed once per blob."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from gitdeploy.controller import desired
from gitdeploy.controller.desired import DesiredStateReader
from gitdeploy.manifests.loader import LoadResult, load_directory
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.manifests import deployment

FILES = {
    **{f"apps/shop/app{i}.yaml": deployment(f"app{i}", "shop") for i in range(7)},
    "apps/shop/other.yaml": deployment("app0", "other"),  # the same name in another namespace
    "apps/broken.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: [x]}\n",
    "apps/copy/app1.yaml": deployment("app1", "shop"),  # a duplicate of app1: same blob, other path
}


def _facts(result: LoadResult) -> tuple[object, ...]:
    return (
        [(a, a.manifest_json, a.location) for a in result.apps],
        result.invalid_apps,
        [d.render() for d in result.diagnostics],
    )


@pytest.mark.parametrize("at_once", [1, 3, 500])
def test_reading_blobs_in_batches_changes_nothing_but_how_many_are_held(
    at_once: int, git_remote: GitRemote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(desired, "READ_AT_ONCE", at_once)
    git_remote.commit_and_push("Apps", FILES)
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        reader = DesiredStateReader(repo)
        result = reader.load(repo.poll().head)
        assert reader.files_parsed == len(FILES)
        assert _facts(result) == _facts(load_directory(git_remote.work))
        assert {str(key) for key in result.invalid_apps} >= {"shop/app1"}

        again = DesiredStateReader(repo, cache=reader.cache)
        assert _facts(again.load(repo.poll().head)) == _facts(result)
        assert again.files_parsed == 0

        git_remote.commit_and_push("Bump app5", {"apps/shop/app5.yaml": deployment("app5", "shop", "x:2")})
        bumped = reader.load(repo.poll().head)
        assert reader.files_parsed == len(FILES) + 1
        assert _facts(bumped) == _facts(load_directory(git_remote.work))


def frozen_garbage_after_load(url: str, state_dir: Path) -> int:
    """Objects of cyclic garbage that a load of ``url``'s head froze with what it keeps (it
    freezes every 4 files parsed here)."""
    desired.FREEZE_AFTER_FILES = 4
    with ConfigRepo(url, state_dir=state_dir) as repo:
        DesiredStateReader(repo).load(repo.poll().head)
    gc.collect()  # the garbage that was not frozen
    gc.unfreeze()
    return gc.collect()


def test_a_load_freezes_no_garbage_with_the_state_it_keeps(git_remote: GitRemote, tmp_path: Path) -> None:
    # Given a repo of 16 apps, When a fresh process loads it (in a process of its own: the
    # collector counts the garbage of every thread)
    git_remote.commit_and_push(
        "Apps", {f"apps/app{i}.yaml": deployment(f"app{i}", "shop") for i in range(16)}
    )
    script = (
        "import sys; from pathlib import Path\n"
        "from tests.integration.controller.test_desired_batches import frozen_garbage_after_load\n"
        "print(frozen_garbage_after_load(sys.argv[1], Path(sys.argv[2])))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, git_remote.url, str(tmp_path / "state")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # Then nothing it froze was garbage already
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == 0


def test_the_parse_cache_holds_the_files_of_the_head_not_every_version_seen(
    git_remote: GitRemote, tmp_path: Path
) -> None:
    git_remote.commit_and_push("Apps", FILES)
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        reader = DesiredStateReader(repo)
        reader.load(repo.poll().head)
        assert len(reader.cache) == len(FILES)
        # When one file changes in each of 20 commits, and one file goes and another comes
        for version in range(20):
            image = f"x:{version}"
            git_remote.commit_and_push("Bump", {"apps/shop/app5.yaml": deployment("app5", "shop", image)})
            reader.load(repo.poll().head)
        git_remote.commit_and_push_changes(
            "Move", {"apps/shop/app6.yaml": None, "apps/moved/app6.yaml": deployment("app6", "shop")}
        )
        result = reader.load(repo.poll().head)
        # Then the cache holds one entry per file of the head, as a fresh load of it would
        assert len(reader.cache) == len(FILES)
        assert _facts(result) == _facts(load_directory(git_remote.work))
        # ... and a settings change (a full reload) keeps only what that load read
        git_remote.commit_and_push("Settings", {"gitdeploy.yaml": "paths: [apps/shop]\n"})
        reader.load(repo.poll().head)
        assert len(reader.cache) == sum(path.startswith("apps/shop/") for path in FILES) - 1
