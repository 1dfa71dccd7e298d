"""Safety rules of the source layer, on real repositories."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from gitdeploy.core.commits import ChangeType
from gitdeploy.errors import PermanentError, TransientError
from gitdeploy.source.repo import ConfigRepo
from gitdeploy.source.trees import SourceLimits
from tests.fixtures.gitrepo import GitRemote

SECRET = "glpat-SuperSecretToken123"


@pytest.mark.parametrize(
    "url",
    [
        "ext::sh -c touch% /tmp/gitdeploy-pwned",
        "fd::17",
        "::path",
        "ext://sh -c id",
        "--upload-pack=touch /tmp/gitdeploy-pwned",
        "-oProxyCommand=id",
        "ssh://-oProxyCommand=id/x",
        "http://example.com/org/config.git",
    ],
)
def test_dangerous_addresses_are_refused_before_git_runs(url: str, state_dir: Path) -> None:
    with pytest.raises(PermanentError, match="refusing"):
        ConfigRepo(url, state_dir=state_dir)
    assert not (state_dir / "source").exists()
    assert not Path("/tmp/gitdeploy-pwned").exists()


@pytest.mark.parametrize("ref", ["--upload-pack=id", "-x", "main..other", "a b", "x@{1}"])
def test_refs_that_could_be_options_or_revisions_are_refused(
    ref: str, tmp_path: Path, state_dir: Path
) -> None:
    with pytest.raises(PermanentError):
        ConfigRepo(str(tmp_path), ref=ref, state_dir=state_dir)


@pytest.mark.parametrize(
    "url",
    [
        f"https://deploy-bot:{SECRET}@127.0.0.1:9/org/config.git",
        f"https://{SECRET}@127.0.0.1:9/org/config.git",
        f"https://127.0.0.1:9/org/config.git?private_token={SECRET}",
    ],
)
def test_credentials_in_the_url_never_appear_in_errors_logs_or_state(
    url: str, state_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with ConfigRepo(url, state_dir=state_dir, network_timeout=20) as repo:
        assert SECRET not in repo_text(repo)
        with pytest.raises(TransientError) as info:
            repo.poll()
    shown = " ".join([str(info.value), info.value.message, info.value.hint, repr(info.value), caplog.text])
    assert SECRET not in shown and "deploy-bot" not in shown
    assert "127.0.0.1:9/org/config.git" in str(info.value)
    assert "git.cmd" in caplog.text  # GitPython's own argv log lines were captured, and redacted
    for path in state_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def repo_text(repo: ConfigRepo) -> str:
    return " ".join([repr(repo), str(repo.url), repr(repo.url), str(repo.mirror_path)])


def test_symlink_out_of_the_tree_is_an_error(git_remote: GitRemote, state_dir: Path) -> None:
    git_remote.write_file("deploy/web.yaml", "a: 1\n")
    git_remote.write_file("secrets/db.yaml", "password: hunter2\n")
    git_remote.make_symlink("deploy/db.yaml", "../secrets/db.yaml")
    sha = git_remote.commit_all("link out of deploy/")
    git_remote.push()
    with ConfigRepo(git_remote.url, subpath="deploy", state_dir=state_dir) as repo:
        repo.poll()
        assert [f.path for f in repo.files_at(sha)] == ["deploy/web.yaml"]
        (problem,) = repo.file_problems(sha)
        assert problem.file == "deploy/db.yaml"
        assert re.search(r"symlink to '../secrets/db.yaml', which leaves deploy", problem.message)


@pytest.mark.parametrize("target", ["/etc/passwd", "../../../../etc/passwd"])
def test_symlink_out_of_the_repository_is_an_error(
    git_remote: GitRemote, state_dir: Path, target: str
) -> None:
    git_remote.make_symlink("app.yaml", target)
    sha = git_remote.commit_all("link to /etc")
    git_remote.push()
    with ConfigRepo(git_remote.url, state_dir=state_dir) as repo:
        repo.poll()
        assert repo.list_files(sha) == []
        (problem,) = repo.file_problems(sha)
        assert (problem.file, problem.hint) == (
            "app.yaml",
            "gitdeploy reads only files inside the tracked path; copy the file instead",
        )
        assert f"symlink to {target!r}" in problem.message


def test_symlink_inside_the_tree_is_followed_and_its_target_changes_show(
    git_remote: GitRemote, state_dir: Path
) -> None:
    git_remote.write_file("deploy/base/web.yaml", "image: a\n")
    git_remote.make_symlink("deploy/prod/web.yaml", "../base/web.yaml")
    git_remote.make_symlink("deploy/prod/notes", "/etc")  # not a manifest name: ignored
    old = git_remote.commit_all("link inside")
    git_remote.push()
    with ConfigRepo(git_remote.url, subpath="deploy", state_dir=state_dir) as repo:
        repo.poll()
        files = {f.path: f.data for f in repo.files_at(old)}
        assert files == {"deploy/base/web.yaml": b"image: a\n", "deploy/prod/web.yaml": b"image: a\n"}
        assert repo.list_files(old)[1].link_target == "deploy/base/web.yaml"
        new = git_remote.commit_and_push("bump base", {"deploy/base/web.yaml": "image: b\n"})
        repo.poll()
        changes = repo.changed_files(old, new)
        assert [(c.path, c.change_type) for c in changes] == [
            ("deploy/base/web.yaml", ChangeType.MODIFIED),
            ("deploy/prod/web.yaml", ChangeType.MODIFIED),
        ]
        assert changes[0].new_blob == changes[1].new_blob


def test_dot_directories_and_hidden_files_are_skipped(git_remote: GitRemote, state_dir: Path) -> None:
    files: dict[str, str | bytes] = {
        ".github/workflows/ci.yaml": "on: push\n",
        "apps/.yamllint.yml": "rules: {}\n",
        "apps/web.yaml": "a: 1\n",
        "apps/README.md": "docs\n",
        "apps/settings.json": "{}\n",
    }
    sha = git_remote.commit_and_push("mixed", files)
    with ConfigRepo(git_remote.url, state_dir=state_dir) as repo:
        repo.poll()
        assert [f.path for f in repo.files_at(sha)] == ["apps/settings.json", "apps/web.yaml"]


def test_file_size_and_file_count_limits(git_remote: GitRemote, state_dir: Path) -> None:
    sha = git_remote.commit_and_push("big", {"big.yaml": "x" * 2000, "a.yaml": "a\n", "b.yaml": "b\n"})
    with ConfigRepo(git_remote.url, state_dir=state_dir, limits=SourceLimits(max_file_bytes=1000)) as repo:
        repo.poll()
        assert [f.path for f in repo.files_at(sha)] == ["a.yaml", "b.yaml"]
        (problem,) = repo.file_problems(sha)
        assert problem.file == "big.yaml"
        assert re.search(r"big.yaml .* 2000 bytes, more than the limit of 1000", problem.message)
    few = SourceLimits(max_files=2)
    with (
        ConfigRepo(git_remote.url, state_dir=state_dir, limits=few) as repo,
        pytest.raises(PermanentError, match=r"3 manifest files .* limit of 2"),
    ):
        repo.files_at(sha)


def test_missing_subpath_is_a_permanent_error(git_remote: GitRemote, state_dir: Path) -> None:
    sha = git_remote.commit_and_push("one", {"deploy/a.yaml": "a: 1\n"})
    with ConfigRepo(git_remote.url, subpath="deplyo", state_dir=state_dir) as repo:
        repo.poll()
        with pytest.raises(PermanentError, match="'deplyo' does not exist"):
            repo.files_at(sha)


@pytest.mark.parametrize("subpath", ["../x", "/etc", ".git/objects"])
def test_subpaths_leaving_the_repository_are_refused(subpath: str, tmp_path: Path, state_dir: Path) -> None:
    with pytest.raises(PermanentError):
        ConfigRepo(str(tmp_path), subpath=subpath, state_dir=state_dir)
