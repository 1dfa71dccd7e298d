"""Polling a config repository: first sync, no-change polls, changes, force-push, failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitdeploy.core.blobcache import BlobCache
from gitdeploy.core.commits import ChangeType
from gitdeploy.errors import PermanentError, TransientError
from gitdeploy.source.repo import ConfigRepo, RefNotFoundError
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.manifests import render_app


def test_first_sync_fetches_the_branch_and_reads_every_manifest(
    config_repo: ConfigRepo, many_apps_remote: GitRemote
) -> None:
    # Given a remote with 20 apps, When the source polls for the first time
    result = config_repo.poll()
    # Then it reports the remote's head as new, and reads the 20 manifests without a checkout
    assert result.head == many_apps_remote.remote_sha()
    assert result.previous is None and result.changed and not result.forced
    assert result.ref == "refs/heads/main"
    files = config_repo.files_at(result.head)
    assert [f.path for f in files] == [f"apps/app{i:02d}.yaml" for i in range(20)]
    assert files[3].data.decode() == render_app("app03")
    assert config_repo.head == result.head
    assert not (config_repo.mirror_path / "apps").exists()


def test_no_change_poll_costs_one_ls_remote_and_no_fetch(config_repo: ConfigRepo) -> None:
    first = config_repo.poll()
    before = config_repo.git_command_counts
    # When nothing was pushed since
    second = config_repo.poll()
    # Then the poll is unchanged, and ran one ls-remote and no fetch, ls-tree or diff
    after = config_repo.git_command_counts
    spent = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    assert second.head == first.head and not second.changed
    assert spent.get("ls-remote") == 1
    assert spent.get("fetch", 0) == spent.get("ls-tree", 0) == spent.get("diff-tree", 0) == 0


def test_mirror_survives_a_restart_and_is_fetched_not_recloned(
    many_apps_remote: GitRemote, state_dir: Path
) -> None:
    with ConfigRepo(many_apps_remote.url, state_dir=state_dir) as repo:
        head = repo.poll().head
    new = many_apps_remote.commit_and_push("Bump app01", {"apps/app01.yaml": render_app("app01", "nginx:2")})
    with ConfigRepo(many_apps_remote.url, state_dir=state_dir) as again:
        assert again.head == head
        result = again.poll()
        assert (result.previous, result.head) == (head, new)
        assert "init" not in again.git_command_counts


def test_one_changed_app_is_the_only_file_reported_and_reparsed(
    config_repo: ConfigRepo, many_apps_remote: GitRemote
) -> None:
    old = config_repo.poll().head
    parsed: list[str] = []
    cache: BlobCache[str] = BlobCache()

    def parse_all(sha: str) -> None:
        for entry in config_repo.list_files(sha):

            def parse(path: str = entry.path) -> str:
                parsed.append(path)
                return path

            cache.get_or_compute(entry.blob_sha, parse)

    parse_all(old)
    assert len(parsed) == 20
    parsed.clear()
    # When one app of 20 changes
    many_apps_remote.commit_and_push("Bump app07", {"apps/app07.yaml": render_app("app07", "nginx:1.26")})
    result = config_repo.poll()
    assert result.changed and result.previous == old
    changes = config_repo.changed_files(old, result.head)
    # Then the diff names exactly that file, and only its blob is parsed again
    assert [(c.path, c.change_type) for c in changes] == [("apps/app07.yaml", ChangeType.MODIFIED)]
    assert changes[0].new_blob is not None
    assert config_repo.read_blobs([changes[0].new_blob])[changes[0].new_blob].endswith(b"nginx:1.26\n")
    parse_all(result.head)
    assert parsed == ["apps/app07.yaml"]


def test_commit_touching_no_manifest_reports_no_changed_files(
    config_repo: ConfigRepo, many_apps_remote: GitRemote
) -> None:
    old = config_repo.poll().head
    many_apps_remote.commit_and_push("Docs only", {"README.md": "# config\n\nmore words\n", "notes.txt": "x"})
    result = config_repo.poll()
    assert result.changed
    assert config_repo.changed_files(old, result.head) == []


def test_added_and_deleted_files_are_reported(config_repo: ConfigRepo, many_apps_remote: GitRemote) -> None:
    old = config_repo.poll().head
    many_apps_remote.remove_file("apps/app00.yaml")
    many_apps_remote.write_file("apps/new.yml", render_app("new"))
    many_apps_remote.commit_all("Replace app00 by new")
    many_apps_remote.push()
    new = config_repo.poll().head
    changes = config_repo.changed_files(old, new)
    assert [(c.path, c.change_type) for c in changes] == [
        ("apps/app00.yaml", ChangeType.DELETED),
        ("apps/new.yml", ChangeType.ADDED),
    ]
    assert changes[0].new_blob is None and changes[1].old_blob is None


@pytest.mark.parametrize("pushed", [False, True], ids=["poll", "push"])
def test_force_push_is_reported_and_the_old_commit_stays_readable(
    pushed: bool, config_repo: ConfigRepo, many_apps_remote: GitRemote
) -> None:
    # (pushed: each poll is for a webhook that names the new head, see test_push_poll.py)
    base = config_repo.poll().head
    doomed = many_apps_remote.commit_and_push("Bad change", {"apps/app01.yaml": render_app("app01", "bad:1")})
    assert config_repo.poll(pushed=doomed if pushed else None).head == doomed
    # When the branch is reset and force-pushed to a different commit
    many_apps_remote.reset_hard(base)
    replacement = many_apps_remote.commit_files(
        "Good change", {"apps/app02.yaml": render_app("app02", "ok:1")}
    )
    many_apps_remote.push(force=True)
    many_apps_remote.run_git("gc", "--quiet", "--prune=now", cwd=many_apps_remote.bare)
    result = config_repo.poll(pushed=replacement if pushed else None)
    # Then the poll says forced, and the abandoned commit can still be read from the mirror
    assert (result.previous, result.head, result.forced) == (doomed, replacement, True)
    assert not config_repo.is_ancestor(doomed, replacement)
    old_files = {f.path: f.data for f in config_repo.files_at(doomed)}
    assert b"bad:1" in old_files["apps/app01.yaml"]
    assert config_repo.commit(doomed).subject == "Bad change"
    changes = config_repo.changed_files(doomed, replacement)
    assert {c.path for c in changes} == {"apps/app01.yaml", "apps/app02.yaml"}


def test_fast_forward_is_not_reported_as_forced(config_repo: ConfigRepo, many_apps_remote: GitRemote) -> None:
    config_repo.poll()
    many_apps_remote.commit_and_push("a", {"apps/a.yaml": "a: 1\n"})
    many_apps_remote.commit_and_push("b", {"apps/b.yaml": "b: 1\n"})
    assert not config_repo.poll().forced


@pytest.mark.parametrize("pushed", [False, True], ids=["poll", "push"])
def test_deleted_branch_is_a_permanent_error_that_keeps_the_last_commit(
    pushed: bool, git_remote: GitRemote, state_dir: Path
) -> None:
    git_remote.commit_and_push("main", {"a.yaml": "a: 1\n"})
    synced = git_remote.commit_and_push("on release", {"a.yaml": "a: 2\n"}, branch="release")
    with ConfigRepo(git_remote.url, ref="release", state_dir=state_dir) as repo:
        assert repo.poll().head == synced
        # (pushed: a push to the branch, whose webhook arrives after the branch was deleted)
        more = git_remote.commit_and_push("more", {"a.yaml": "a: 3\n"}, branch="release") if pushed else None
        git_remote.delete_remote_branch("release")
        with pytest.raises(RefNotFoundError) as info:
            repo.poll(pushed=more)
        assert "no longer exists" in info.value.message and synced[:12] in info.value.message
        assert repo.head == synced
        assert repo.files_at(synced)[0].data == b"a: 2\n"


def test_unknown_ref_is_permanent(many_apps_remote: GitRemote, state_dir: Path) -> None:
    with (
        ConfigRepo(many_apps_remote.url, ref="nope", state_dir=state_dir) as repo,
        pytest.raises(RefNotFoundError, match="does not exist"),
    ):
        repo.poll()


def test_unreachable_remote_is_transient_with_growing_backoff(tmp_path: Path, state_dir: Path) -> None:
    with ConfigRepo(str(tmp_path / "no-such-repo"), state_dir=state_dir) as repo:
        delays = []
        for _ in range(3):
            with pytest.raises(TransientError) as info:
                repo.poll()
            delays.append(info.value.retry_after)
        assert delays == [5.0, 10.0, 20.0]
        assert repo.consecutive_failures == 3


def test_remote_that_vanishes_after_a_sync_keeps_the_last_synced_commit(
    git_remote: GitRemote, state_dir: Path
) -> None:
    sha = git_remote.commit_and_push("one", {"a.yaml": "a: 1\n"})
    with ConfigRepo(git_remote.file_url, state_dir=state_dir) as repo:
        repo.poll()
        git_remote.bare.rename(git_remote.bare.with_name("moved.git"))
        with pytest.raises(TransientError, match="cannot read"):
            repo.poll()
        assert repo.head == sha
        git_remote.bare.with_name("moved.git").rename(git_remote.bare)
        assert repo.poll().head == sha
        assert repo.consecutive_failures == 0


def test_closed_localhost_port_is_transient(state_dir: Path) -> None:
    with (
        ConfigRepo("https://127.0.0.1:9/org/config.git", state_dir=state_dir, network_timeout=20) as repo,
        pytest.raises(TransientError) as info,
    ):
        repo.poll()
    assert "127.0.0.1" in info.value.message


def test_tag_and_default_branch_and_commit_refs(many_apps_remote: GitRemote, state_dir: Path) -> None:
    tagged = many_apps_remote.head_sha()
    many_apps_remote.create_tag("v1")
    many_apps_remote.create_tag("light", annotated=False)
    later = many_apps_remote.commit_and_push("later", {"apps/x.yaml": "x: 1\n"})
    with ConfigRepo(many_apps_remote.url, ref="v1", state_dir=state_dir) as by_tag:
        result = by_tag.poll()
        assert (result.ref, result.head) == ("refs/tags/v1", tagged)
        assert not by_tag.poll().changed
    with ConfigRepo(many_apps_remote.url, ref="light", state_dir=state_dir) as light:
        assert light.poll().head == tagged
    with ConfigRepo(many_apps_remote.url, ref=None, state_dir=state_dir) as default:
        result = default.poll()
        assert (result.ref, result.head) == ("refs/heads/main", later)
    with ConfigRepo(many_apps_remote.url, ref=tagged, state_dir=state_dir) as pinned:
        result = pinned.poll()
        assert result.head == tagged
        counts = pinned.git_command_counts
        assert not pinned.poll().changed
        assert pinned.git_command_counts.get("ls-remote", 0) == counts.get("ls-remote", 0) == 0


def test_commit_sha_not_yet_fetched_is_fetched(many_apps_remote: GitRemote, state_dir: Path) -> None:
    older = many_apps_remote.head_sha()
    many_apps_remote.commit_and_push("later", {"apps/x.yaml": "x: 1\n"})
    with ConfigRepo(many_apps_remote.url, ref=older, state_dir=state_dir) as pinned:
        assert pinned.poll().head == older
        assert len(pinned.files_at(older)) == 20
    with (
        ConfigRepo(many_apps_remote.url, ref="ab" * 20, state_dir=state_dir) as missing,
        pytest.raises(RefNotFoundError),
    ):
        missing.poll()


def test_ambiguous_ref_names_both(git_remote: GitRemote, state_dir: Path) -> None:
    git_remote.commit_and_push("one", {"a.yaml": "a: 1\n"})
    git_remote.create_tag("main")
    with (
        ConfigRepo(git_remote.url, ref="main", state_dir=state_dir) as repo,
        pytest.raises(PermanentError, match="both a branch and a tag"),
    ):
        repo.poll()
    with ConfigRepo(git_remote.url, ref="refs/heads/main", state_dir=state_dir) as repo:
        assert repo.poll().ref == "refs/heads/main"
