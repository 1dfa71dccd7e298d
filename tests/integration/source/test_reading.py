"""Reading commits: metadata, per-app history, past revisions, monorepo sub-paths."""

from __future__ import annotations

from pathlib import Path

from gitdeploy.core.commits import CommitInfo
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import EPOCH, GitRemote


def test_commit_metadata(git_remote: GitRemote, state_dir: Path) -> None:
    git_remote.commit_files(
        "Roll web to 1.26\n\nBecause of CVE-0000.\nSigned-off-by: Ada",
        {"web.yaml": "a: 1\n"},
        author=("Ada Author", "ada@example.com"),
    )
    git_remote.push()
    with ConfigRepo(git_remote.url, state_dir=state_dir) as repo:
        head = repo.poll().head
        info = repo.commit(head)
    assert info == CommitInfo(
        sha=head,
        author_name="Ada Author",
        author_email="ada@example.com",
        authored_at=float(EPOCH + 60),
        committer_name="Cy Committer",
        committer_email="cy@example.com",
        committed_at=float(EPOCH + 60),
        subject="Roll web to 1.26",
        message="Roll web to 1.26\n\nBecause of CVE-0000.\nSigned-off-by: Ada",
    )


def test_path_history_names_the_commits_that_changed_an_app(git_remote: GitRemote, state_dir: Path) -> None:
    first = git_remote.commit_and_push(
        "Add web and api", {"apps/web.yaml": "v: 1\n", "apps/api.yaml": "v: 1\n"}
    )
    web2 = git_remote.commit_and_push("Bump web", {"apps/web.yaml": "v: 2\n"})
    api2 = git_remote.commit_and_push("Bump api", {"apps/api.yaml": "v: 2\n"})
    head = git_remote.commit_and_push("Docs", {"README.md": "hi\n"})
    with ConfigRepo(git_remote.url, state_dir=state_dir) as repo:
        assert repo.poll().head == head
        assert [c.sha for c in repo.path_history("apps/web.yaml")] == [web2, first]
        assert [c.subject for c in repo.path_history("apps/api.yaml", max_count=1)] == ["Bump api"]
        last = repo.last_change("apps/web.yaml", head)
        assert last is not None and last.sha == web2
        # At an older commit, history stops there
        older = repo.last_change("apps/api.yaml", web2)
        assert older is not None and older.sha == first
        assert repo.last_change("apps/nope.yaml") is None
        assert api2 in {c.sha for c in repo.path_history("apps")}


def test_any_past_commit_can_be_read_at_any_time(git_remote: GitRemote, state_dir: Path) -> None:
    shas = [git_remote.commit_and_push(f"v{i}", {"app.yaml": f"v: {i}\n"}) for i in range(3)]
    with ConfigRepo(git_remote.url, state_dir=state_dir) as repo:
        repo.poll()
        for i, sha in enumerate(shas):
            assert repo.files_at(sha)[0].data == f"v: {i}\n".encode()


def test_subpath_limits_reads_and_diffs_to_that_directory(git_remote: GitRemote, state_dir: Path) -> None:
    old = git_remote.commit_and_push(
        "monorepo",
        {
            "services/api/main.go": "package main\n",
            "deploy/prod/web.yaml": "a: 1\n",
            "other/x.yaml": "x: 1\n",
        },
    )
    new = git_remote.commit_and_push("both", {"deploy/prod/web.yaml": "a: 2\n", "other/x.yaml": "x: 2\n"})
    with ConfigRepo(git_remote.url, subpath="deploy/", state_dir=state_dir) as repo:
        repo.poll()
        assert [f.path for f in repo.files_at(new)] == ["deploy/prod/web.yaml"]
        assert [c.path for c in repo.changed_files(old, new)] == ["deploy/prod/web.yaml"]


def test_validate_a_ref_without_a_checkout(git_remote: GitRemote, state_dir: Path) -> None:
    # What `gitdeploy validate --repo URL --ref REF` does: poll the ref, read its files.
    git_remote.commit_and_push("main", {"a.yaml": "a: 1\n"})
    feature = git_remote.commit_and_push("feature", {"a.yaml": "a: 2\n"}, branch="feature")
    with ConfigRepo(git_remote.file_url, ref="feature", state_dir=state_dir) as repo:
        head = repo.poll().head
        assert head == feature
        assert [(f.path, f.data) for f in repo.files_at(head)] == [("a.yaml", b"a: 2\n")]
        assert not list(repo.mirror_path.glob("*.yaml"))
