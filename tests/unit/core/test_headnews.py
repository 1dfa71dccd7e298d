"""Head announcements (gitdeploy.core.headnews): who fetches, who announces, who polls how often."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitdeploy.core import headnews
from gitdeploy.core.headnews import (
    FOLLOWER_POLL_FACTOR,
    Announced,
    HeadAnnouncement,
    WriteAct,
    decide_write,
    poll_period,
    should_announce,
    should_fetch,
)

MAIN = "refs/heads/main"


def news(sha: str = "c0ffee", by: str = "b", ref: str = MAIN) -> HeadAnnouncement:
    return HeadAnnouncement(sha, ref, by, 1_700_000_000.0, Announced.PUSH)


def test_the_worked_examples_hold() -> None:
    failures, tried = doctest.testmod(headnews)
    assert tried > 10 and failures == 0


@pytest.mark.parametrize(
    ("announced", "identity", "ref", "head", "fetched_for", "fetch"),
    [
        (news(), "a", "main", "bead", "", True),  # another replica's news of my branch
        (news(), "a", MAIN, "bead", "", True),  # the ref as a full name
        (news(), "a", "main", None, "", False),  # not read git yet: its own poll comes first
        (news(), "a", "main", "c0ffee", "", False),  # I have it
        (news(), "b", "main", "bead", "", False),  # my own announcement: my poll moves my head
        (news(), "a", "prod", "bead", "", False),  # another branch (another fleet, misconfigured)
        (news(ref=""), "a", "main", "bead", "", False),  # no branch named: not trusted
        (news(), "a", "main", "bead", "c0ffee", False),  # fetched for it already (a relist)
        (news(), "a", "main", "bead", "d00d", True),  # fetched for an older one
        (None, "a", "main", "bead", "", False),
    ],
)
def test_a_replica_fetches_for_news_of_another_commit_of_its_branch_once(
    announced: HeadAnnouncement | None,
    identity: str,
    ref: str,
    head: str | None,
    fetched_for: str,
    fetch: bool,
) -> None:
    assert should_fetch(announced, identity=identity, ref=ref, head=head, fetched_for=fetched_for) is fetch


@pytest.mark.parametrize(
    ("announced", "head", "announce"),
    [
        (None, "c0ffee", True),
        (news("c0ffee"), "c0ffee", False),  # a push named it (or my fetch came from the news)
        (news("bead"), "c0ffee", True),
        (news("c0ffee", ref="refs/heads/prod"), "c0ffee", True),  # another branch's
        (news("c0ffee"), None, False),  # nothing polled
    ],
)
def test_a_replica_announces_a_head_its_poll_found_unless_already_named(
    announced: HeadAnnouncement | None, head: str | None, announce: bool
) -> None:
    assert should_announce(announced, head=head, ref=MAIN) is announce


def test_of_two_announcers_of_one_commit_the_second_drops_its_write() -> None:
    first = news("c0ffee", by="a")
    assert decide_write(None, first) is WriteAct.WRITE
    assert decide_write(first, news("c0ffee", by="b")) is WriteAct.DROP
    assert decide_write(first, news("d00d", by="b")) is WriteAct.WRITE


@pytest.mark.parametrize(
    ("leading", "leader_known", "watching", "failed", "factor"),
    [
        (True, True, True, False, 1),
        (False, True, True, False, FOLLOWER_POLL_FACTOR),  # the fan-out works: hardly ever
        (False, False, True, False, 1),  # no leader seen: nobody else polls
        (False, True, False, False, 1),  # the watch is down: news would not reach me
        (False, True, True, True, 1),  # the last poll failed: the backoff decides
    ],
)
def test_only_the_leader_polls_at_the_interval_while_the_fan_out_works(
    leading: bool, leader_known: bool, watching: bool, failed: bool, factor: int
) -> None:
    period = poll_period(30.0, leading=leading, leader_known=leader_known, watching=watching, failed=failed)
    assert period == 30.0 * factor


@given(
    sha=st.text("0123456789abcdef", min_size=1, max_size=64),
    ref=st.sampled_from(["", "main", MAIN, "refs/heads/a/b"]),
    by=st.text(max_size=40),
    at=st.integers(min_value=0, max_value=4_000_000_000),
    source=st.sampled_from(list(Announced)),
)
def test_an_announcement_reads_back_as_written(
    sha: str, ref: str, by: str, at: int, source: Announced
) -> None:
    written = HeadAnnouncement(sha, ref, by, float(at), source)
    assert HeadAnnouncement.from_annotations(written.annotations()) == written


@pytest.mark.parametrize(
    "annotations",
    [{}, {"gitdeploy.io/head-commit": "  "}, {"other": "x"}],
)
def test_an_object_naming_no_commit_announces_nothing(annotations: dict[str, str]) -> None:
    assert HeadAnnouncement.from_annotations(annotations) is None
