"""Polling for a push: the pushed branch is fetched at once, and the payload is never trusted.

``ConfigRepo.poll(pushed=sha)`` is what ``gitdeploy run`` does when a verified webhook names a new
head. Reading the new head afterwards costs one tree diff, not a listing of the whole tree. The
force-push and deleted-branch cases for a push are parameters of their tests in test_poll.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gitdeploy.core.commits import ChangeType
from gitdeploy.errors import TransientError
from gitdeploy.source.repo import ConfigRepo
from gitdeploy.source.trees import SourceLimits
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.manifests import render_app


def git_spent(repo: ConfigRepo) -> Callable[[], dict[str, int]]:
    """Call the result later to get the git commands run in between (by subcommand)."""
    before = repo.git_command_counts

    def spent() -> dict[str, int]:
        after = repo.git_command_counts
        return {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}

    return spent


def test_a_pushed_commit_is_fetched_at_once_without_ls_remote(
    config_repo: ConfigRepo, many_apps_remote: GitRemote
) -> None:
    # Given a source that polled once
    old = config_repo.poll().head
    # When a commit is pushed and the webhook names it
    new = many_apps_remote.commit_and_push("Bump app03", {"apps/app03.yaml": render_app("app03", "nginx:2")})
    spent = git_spent(config_repo)
    result = config_repo.poll(pushed=new)
    # Then one fetch brings it, with no ls-remote and no ancestry process (its parent is the old head)
    assert (result.previous, result.head, result.forced) == (old, new, False)
    assert spent() == {"fetch": 1, "for-each-ref": 1, "update-ref": 1}
    assert config_repo.head == new


def test_a_push_of_several_commits_is_a_fast_forward(
    config_repo: ConfigRepo, many_apps_remote: GitRemote
) -> None:
    old = config_repo.poll().head
    many_apps_remote.commit_and_push("one", {"apps/app01.yaml": render_app("app01", "nginx:2")})
    new = many_apps_remote.commit_and_push("two", {"apps/app02.yaml": render_app("app02", "nginx:2")})
    spent = git_spent(config_repo)
    result = config_repo.poll(pushed=new)
    assert (result.previous, result.head, result.forced) == (old, new, False)
    assert spent().get("merge-base") == 1


def test_a_replayed_push_is_a_normal_poll(config_repo: ConfigRepo, many_apps_remote: GitRemote) -> None:
    config_repo.poll()
    first = many_apps_remote.commit_and_push("one", {"apps/app01.yaml": render_app("app01", "nginx:2")})
    assert config_repo.poll(pushed=first).head == first
    # When the same delivery comes again (the commit is already in the mirror)
    spent = git_spent(config_repo)
    replay = config_repo.poll(pushed=first)
    # Then it costs what a poll without news costs (plus git's housekeeping, which the push's
    # fetch left out to answer sooner), and changes nothing
    assert (replay.head, replay.changed) == (first, False)
    assert spent() == {"ls-remote": 1, "rev-parse": 1, "maintenance": 1}
    spent = git_spent(config_repo)
    assert not config_repo.poll(pushed=first).changed
    assert spent() == {"ls-remote": 1, "rev-parse": 1}
    # And a replay after the branch moved on syncs where the branch is, like any poll
    second = many_apps_remote.commit_and_push("two", {"apps/app02.yaml": render_app("app02", "nginx:2")})
    assert config_repo.poll(pushed=first).head == second


def test_an_out_of_order_push_syncs_what_the_branch_holds_now(
    config_repo: ConfigRepo, many_apps_remote: GitRemote
) -> None:
    old = config_repo.poll().head
    # Given two pushes, whose deliveries arrive in the wrong order
    first = many_apps_remote.commit_and_push("one", {"apps/app01.yaml": render_app("app01", "nginx:2")})
    second = many_apps_remote.commit_and_push("two", {"apps/app02.yaml": render_app("app02", "nginx:2")})
    # When the older one arrives first, Then the poll syncs the branch's head, not the payload's
    result = config_repo.poll(pushed=first)
    assert (result.previous, result.head, result.forced) == (old, second, False)
    # And the late delivery of the newer one is a poll without news
    assert not config_repo.poll(pushed=second).changed


def test_a_push_when_the_remote_is_unreachable_changes_nothing(
    config_repo: ConfigRepo, many_apps_remote: GitRemote
) -> None:
    synced = config_repo.poll().head
    new = many_apps_remote.commit_and_push("one", {"apps/app01.yaml": render_app("app01", "nginx:2")})
    many_apps_remote.bare.rename(many_apps_remote.bare.with_name("moved.git"))
    with pytest.raises(TransientError, match="cannot"):
        config_repo.poll(pushed=new)
    assert config_repo.head == synced
    assert config_repo.consecutive_failures == 1


def test_a_push_before_the_first_poll_is_a_normal_poll(many_apps_remote: GitRemote, state_dir: Path) -> None:
    # The branch has not been resolved yet (it could be ambiguous with a tag): ls-remote first
    with ConfigRepo(many_apps_remote.url, ref="main", state_dir=state_dir) as repo:
        spent = git_spent(repo)
        result = repo.poll(pushed=many_apps_remote.remote_sha())
        assert result.head == many_apps_remote.remote_sha()
        assert spent().get("ls-remote") == 1


def test_reading_a_pushed_commit_costs_one_process_and_lists_like_a_fresh_source(
    config_repo: ConfigRepo, many_apps_remote: GitRemote, state_dir: Path
) -> None:
    old = config_repo.poll().head
    config_repo.list_files(old)
    # When a push changes one app, adds one, removes one and touches a README
    new = many_apps_remote.commit_and_push_changes(
        "Mixed",
        {
            "apps/app05.yaml": None,
            "apps/app07.yaml": render_app("app07", "nginx:2"),
            "apps/new.yml": "x: 1\n",
            "README.md": "# hi\n",
        },
    )
    config_repo.poll(pushed=new)
    spent = git_spent(config_repo)
    changes = config_repo.changed_files(old, new)
    listed = config_repo.list_files(new)
    blobs = config_repo.read_blobs([c.new_blob for c in changes if c.new_blob])
    # Then one diff-tree told it all (no ls-tree, no rev-parse of the heads, no cat-file process)
    assert spent() == {"diff-tree": 1}
    assert sorted(blobs.values()) == sorted([b"x: 1\n", render_app("app07", "nginx:2").encode()])
    assert [(c.path, c.change_type) for c in changes] == [
        ("apps/app05.yaml", ChangeType.DELETED),
        ("apps/app07.yaml", ChangeType.MODIFIED),
        ("apps/new.yml", ChangeType.ADDED),
    ]
    # And the listing equals the one a source that never saw the old commit reads from the tree
    with ConfigRepo(many_apps_remote.url, state_dir=state_dir / "elsewhere") as fresh:
        fresh.poll()
        assert listed == fresh.list_files(new)


def test_a_pushed_file_over_the_size_limit_is_refused_from_the_diff_too(
    many_apps_remote: GitRemote, state_dir: Path
) -> None:
    with ConfigRepo(
        many_apps_remote.url, state_dir=state_dir, limits=SourceLimits(max_file_bytes=1000)
    ) as repo:
        old = repo.poll().head
        repo.list_files(old)
        new = many_apps_remote.commit_and_push("big", {"apps/big.yaml": "x" * 2000})
        repo.poll(pushed=new)
        repo.changed_files(old, new)
        assert "apps/big.yaml" not in {e.path for e in repo.list_files(new)}
        (problem,) = repo.file_problems(new)
        assert (
            problem.file == "apps/big.yaml" and "2000 bytes, more than the limit of 1000" in problem.message
        )
