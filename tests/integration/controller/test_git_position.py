"""A sharded replica waits for its git to reach the commit an app's record names (so that a move
never rolls an app back), but only until a poll shows whether the branch still holds that commit:
after a force push back to an older commit, the apps follow the branch."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.controller import gitposition
from gitdeploy.controller.gitposition import GitPosition
from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.models import AppKey
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote

APP = AppKey("shop", "web")


@pytest.fixture
def repo(git_remote: GitRemote, tmp_path: Path) -> ConfigRepo:
    git_remote.commit_and_push("A", {"a.yaml": "a: 1\n"})
    return ConfigRepo(git_remote.url, state_dir=tmp_path / "state")


class Replica:
    """A replica's git as GitPosition sees it: its mirror, and the head its desired state is at."""

    def __init__(self, repo: ConfigRepo, clock: FakeClock) -> None:
        self.repo, self.clock = repo, clock
        self.head: str | None = None
        self.fetches: list[str] = []
        self.position = GitPosition(repo, lambda: self.head, clock)
        self.position.fetch_now = self.fetches.append

    def poll(self, *, load: bool = True) -> None:
        """A poll that begins a second from now and takes a second (``load``: the head it finds
        becomes this replica's desired state, as unless it is refused)."""
        self.clock.advance(1)
        found = self.repo.poll().head
        self.clock.advance(1)
        self.position.polled(1.0, False)
        if load:
            self.head = found

    def poll_fails(self) -> None:
        """A poll that begins a second from now and fails a second later (git unreachable)."""
        self.clock.advance(1)
        self.clock.advance(1)
        self.position.polled(1.0, True)


def naming(sha: str) -> AppRecord:
    return AppRecord(last_synced_commit=sha)


def test_a_new_owner_behind_the_commit_waits_for_its_poll(
    git_remote: GitRemote, repo: ConfigRepo, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    replica = Replica(repo, fake_clock)
    replica.poll()
    # Given another replica deployed B, which this replica has not fetched
    b = git_remote.commit_and_push("B", {"a.yaml": "a: 2\n"})
    # Then it waits, says why once, and asks for a fetch once
    with caplog.at_level(logging.INFO, logger="gitdeploy.loop"):
        assert replica.position.waits(APP, naming(b)) and replica.position.waits(APP, naming(b))
    assert replica.fetches == [b]
    assert [r.getMessage() for r in caplog.records] == [
        f"[{APP}] waits: its record names commit {b[:12]}, which this replica has not fetched yet"
    ]
    # ... until its poll brought B
    replica.poll()
    assert not replica.position.waits(APP, naming(b))


def test_a_commit_the_branch_holds_is_waited_for_while_this_replica_has_not_loaded_it(
    git_remote: GitRemote, repo: ConfigRepo, fake_clock: FakeClock
) -> None:
    replica = Replica(repo, fake_clock)
    replica.poll()
    a = replica.head
    # Given B on the branch and in the mirror, but not this replica's desired state (refused, say)
    b = git_remote.commit_and_push("B", {"a.yaml": "a: 2\n"})
    replica.poll(load=False)
    assert replica.head == a
    # Then it waits for B, however many polls look at the branch
    for _ in range(3):
        assert replica.position.waits(APP, naming(b))
        replica.poll(load=False)
    assert replica.fetches == [b]


def test_after_a_force_push_back_the_apps_follow_the_branch_once_a_poll_looked_at_it(
    git_remote: GitRemote, repo: ConfigRepo, fake_clock: FakeClock
) -> None:
    replica = Replica(repo, fake_clock)
    replica.poll()
    a = replica.head
    assert a is not None
    b = git_remote.commit_and_push("B", {"a.yaml": "a: 2\n"})
    replica.poll()
    # Given the branch reset to A and force-pushed, and this replica at A again (its mirror keeps B)
    git_remote.reset_hard(a)
    git_remote.push(force=True)
    replica.poll()
    assert replica.head == a
    # When a record names B: B is newer than its head, and no poll has looked at the branch since
    # it found that, so it waits and asks for a fetch
    assert replica.position.waits(APP, naming(b))
    assert replica.fetches == [b]
    # Then once a poll looked at the branch and did not find B there, the app follows the branch
    replica.poll()
    assert not replica.position.waits(APP, naming(b))
    # ... and if B comes back on the branch, it is waited for again until loaded
    git_remote.reset_hard(b)
    git_remote.push(force=True)
    replica.poll(load=False)
    assert replica.position.waits(APP, naming(b))
    replica.head = b
    assert not replica.position.waits(APP, naming(b))


def test_a_commit_it_cannot_fetch_is_waited_for_however_long_its_polls_fail(
    git_remote: GitRemote, repo: ConfigRepo, fake_clock: FakeClock
) -> None:
    """A new leader whose git is unreachable must not roll the app back to its older head."""
    replica = Replica(repo, fake_clock)
    replica.poll()
    # Given another process deployed B, and this one's polls fail from then on
    b = git_remote.commit_and_push("B", {"a.yaml": "a: 2\n"})
    # Then it waits for B for as long as they fail (an hour here)
    for _ in range(60):
        assert replica.position.waits(APP, naming(b))
        fake_clock.advance(60)
        replica.poll_fails()
    assert replica.fetches == [b]
    # ... and once a poll brought B, it waits only until B is its desired state
    replica.poll(load=False)
    assert replica.position.waits(APP, naming(b))
    replica.head = b
    assert not replica.position.waits(APP, naming(b))


def test_a_commit_the_branch_never_held_is_waited_for_only_until_a_poll_fetched_the_branch(
    git_remote: GitRemote, repo: ConfigRepo, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    replica = Replica(repo, fake_clock)
    replica.poll()
    # Given a record naming a commit of another branch (deployed with another --branch, say)
    other = git_remote.commit_and_push("Elsewhere", {"a.yaml": "a: 3\n"}, branch="other")
    git_remote.reset_hard("HEAD~1")
    # Then it waits until a poll that began after it missed the commit looked at the branch
    assert replica.position.waits(APP, naming(other))
    replica.poll()
    with caplog.at_level(logging.WARNING, logger="gitdeploy.loop"):
        assert not replica.position.waits(APP, naming(other))
        assert not replica.position.waits(APP, naming(other))
    # ... and says so once
    assert [r.getMessage() for r in caplog.records] == [
        f"records name commit {other[:12]}, which the branch does not hold (a poll fetched the branch "
        f"without it); their apps follow the branch's head {str(replica.head)[:12]}"
    ]


@pytest.mark.parametrize("recent", [1, 2, 10_000])
def test_older_commits_are_never_waited_for_within_the_recent_window_or_beyond_it(
    git_remote: GitRemote,
    repo: ConfigRepo,
    fake_clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    recent: int,
) -> None:
    """Commits among the head's newest are answered from one ``git rev-list``; older ones, and
    newer ones, by a ``git merge-base`` each: the answers are the same."""
    monkeypatch.setattr(gitposition, "RECENT_COMMITS", recent)
    a = git_remote.head_sha()
    b = git_remote.commit_and_push("B", {"a.yaml": "a: 2\n"})
    replica = Replica(repo, fake_clock)
    replica.poll()
    c = git_remote.commit_and_push("C", {"a.yaml": "a: 3\n"})
    replica.poll(load=False)  # C fetched, not loaded: newer than the head
    assert replica.head == b
    assert not replica.position.waits(APP, naming(a))
    assert not replica.position.waits(APP, naming(b))
    assert replica.position.waits(APP, naming(c))
