"""Writing a commit to the config repository and pushing it, never by force."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitdeploy.core.commits import Author
from gitdeploy.errors import PermanentError
from gitdeploy.source.repo import ConfigRepo
from gitdeploy.source.writer import BranchMovedError
from tests.fixtures.gitrepo import GitRemote

BOT = Author("gitdeploy", "gitdeploy@example.com")


def test_write_commit_sets_and_deletes_files_and_pushes(git_remote: GitRemote, state_dir: Path) -> None:
    base = git_remote.commit_and_push("start", {"apps/web.yaml": "v: 2\n", "apps/old.yaml": "o: 1\n"})
    with ConfigRepo(git_remote.url, state_dir=state_dir) as repo:
        repo.poll()
        sha = repo.write_commit(
            "main",
            {"apps/web.yaml": b"v: 1\n", "apps/old.yaml": None, "apps/new.yaml": b"n: 1\n"},
            "Revert web to v1\n\nRollback of revision 3.",
            BOT,
            base,
            authored_at=1_700_000_000,
        )
        assert git_remote.remote_sha() == sha
        result = repo.poll()
        assert (result.previous, result.head, result.forced) == (base, sha, False)
        assert {f.path: f.data for f in repo.files_at(sha)} == {
            "apps/new.yaml": b"n: 1\n",
            "apps/web.yaml": b"v: 1\n",
        }
        info = repo.commit(sha)
        assert (info.author_name, info.author_email, info.subject) == (
            "gitdeploy",
            BOT.email,
            "Revert web to v1",
        )
        assert info.authored_at == 1_700_000_000.0


def test_write_commit_refuses_when_the_branch_moved(git_remote: GitRemote, state_dir: Path) -> None:
    base = git_remote.commit_and_push("start", {"a.yaml": "a: 1\n"})
    with ConfigRepo(git_remote.url, state_dir=state_dir) as repo:
        repo.poll()
        moved = git_remote.commit_and_push("someone else", {"b.yaml": "b: 1\n"})
        with pytest.raises(BranchMovedError, match="moved") as info:
            repo.write_commit("main", {"a.yaml": b"a: 0\n"}, "revert", BOT, base)
        assert "never force-pushes" in info.value.hint
        assert git_remote.remote_sha() == moved


def test_write_commit_creates_a_new_branch(git_remote: GitRemote, state_dir: Path) -> None:
    base = git_remote.commit_and_push("start", {"a.yaml": "a: 1\n"})
    with ConfigRepo(git_remote.url, state_dir=state_dir) as repo:
        repo.poll()
        sha = repo.write_commit("gitdeploy/revert-1", {"a.yaml": b"a: 0\n"}, "revert", BOT, base)
        assert git_remote.remote_sha("gitdeploy/revert-1") == sha
        assert git_remote.remote_sha("main") == base


def test_write_commit_without_push_leaves_the_remote_alone(git_remote: GitRemote, state_dir: Path) -> None:
    base = git_remote.commit_and_push("start", {"a.yaml": "a: 1\n"})
    with ConfigRepo(git_remote.url, state_dir=state_dir) as repo:
        repo.poll()
        sha = repo.write_commit("main", {"a.yaml": b"a: 0\n"}, "revert", BOT, base, push=False)
        assert git_remote.remote_sha() == base
        assert repo.files_at(sha)[0].data == b"a: 0\n"


def test_write_commit_refuses_paths_outside_the_tracked_path_and_no_ops(
    git_remote: GitRemote, state_dir: Path
) -> None:
    base = git_remote.commit_and_push("start", {"deploy/a.yaml": "a: 1\n"})
    with ConfigRepo(git_remote.url, subpath="deploy", state_dir=state_dir) as repo:
        repo.poll()
        for path in ("other/a.yaml", "../x.yaml", "/etc/passwd", ".git/config"):
            with pytest.raises(PermanentError):
                repo.write_commit("main", {path: b"x"}, "bad", BOT, base)
        with pytest.raises(PermanentError, match="nothing to commit"):
            repo.write_commit("main", {"deploy/a.yaml": b"a: 1\n"}, "same", BOT, base)
        with pytest.raises(PermanentError):
            repo.write_commit("--force", {"deploy/a.yaml": b"a: 2\n"}, "flag", BOT, base)
    assert git_remote.remote_sha() == base
