"""``ConfigRepo.attribute``: one walk of history names the commit that last changed each file,
the same commit ``last_change`` (one ``git log -1 -- path`` per file) names."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitdeploy.source.history import ChangeWalk
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.manifests import render_app


def _every_file_agrees(repo: ConfigRepo, at_sha: str) -> int:
    paths = [entry.path for entry in repo.list_files(at_sha)]
    for path in paths:
        expected = repo.last_change(path, at_sha)
        assert repo.attribute(path, at_sha) == expected, path
    return len(paths)


def test_adds_edits_removals_and_renames_are_attributed_like_git_log(
    git_remote: GitRemote, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ChangeWalk, "FIRST_CHUNK", 2)  # several chunks even for a short history
    git_remote.commit_and_push("Add apps", {f"apps/app{i}.yaml": render_app(f"app{i}") for i in range(6)})
    git_remote.commit_and_push("Bump app1", {"apps/app1.yaml": render_app("app1", "nginx:1.26")})
    git_remote.commit_and_push("Docs", {"README.md": "# hi\n"})
    git_remote.remove_file("apps/app2.yaml")
    git_remote.commit_all("Remove app2")
    git_remote.run_git("mv", "apps/app3.yaml", "apps/renamed.yaml")
    git_remote.commit_all("Rename app3")
    git_remote.commit_and_push(
        "Bump app4, subject with ünïcode", {"apps/app4.yaml": render_app("app4", "nginx:1.27")}
    )
    with ConfigRepo(git_remote.url, state_dir=state_dir) as repo:
        head = repo.poll().head

        assert _every_file_agrees(repo, head) == 5
        bumped = repo.attribute("apps/app4.yaml", head)
        assert bumped is not None and bumped.subject == "Bump app4, subject with ünïcode"
        assert repo.attribute("apps/app2.yaml", head) is not None  # its removal
        assert repo.attribute("apps/never.yaml", head) is None


def test_a_merged_branch_is_attributed_to_its_own_commits(git_remote: GitRemote, state_dir: Path) -> None:
    git_remote.commit_and_push("Add apps", {"apps/a.yaml": render_app("a"), "apps/b.yaml": render_app("b")})
    git_remote.run_git("checkout", "-q", "-b", "feature")
    git_remote.commit_files("Feature bumps b", {"apps/b.yaml": render_app("b", "nginx:2")})
    git_remote.run_git("checkout", "-q", "main")
    git_remote.commit_files("Main bumps a", {"apps/a.yaml": render_app("a", "nginx:2")})
    git_remote.run_git("merge", "-q", "--no-ff", "-m", "Merge feature", "feature")
    git_remote.push()
    with ConfigRepo(git_remote.url, state_dir=state_dir) as repo:
        head = repo.poll().head

        assert _every_file_agrees(repo, head) == 2
        b = repo.attribute("apps/b.yaml", head)
        assert b is not None and b.subject == "Feature bumps b"


def test_with_a_sub_path_only_that_directory_is_walked(git_remote: GitRemote, state_dir: Path) -> None:
    git_remote.commit_and_push(
        "Prod", {"prod/web.yaml": render_app("web"), "dev/web.yaml": render_app("web")}
    )
    git_remote.commit_and_push("Dev only", {"dev/web.yaml": render_app("web", "nginx:2")})
    with ConfigRepo(git_remote.url, subpath="prod", state_dir=state_dir) as repo:
        head = repo.poll().head

        assert _every_file_agrees(repo, head) == 1
        prod = repo.attribute("prod/web.yaml", head)
        assert prod is not None and prod.subject == "Prod"
