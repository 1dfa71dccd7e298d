"""Leader election decisions (gitdeploy.core.lease): acquire, renew, stand by, take over, lose, release."""

from __future__ import annotations

import doctest

import pytest

from gitdeploy.core import lease
from gitdeploy.core.lease import (
    LeaseDecision,
    LeaseSpec,
    LeaseTimings,
    Role,
    decide_lease,
    format_micro_time,
    holder_pid_to_check,
    release_lease,
    renew_deadline_passed,
    seen_since,
)
from gitdeploy.errors import PermanentError

ME = "b_2"
HELD_BY_A = LeaseSpec("a_1", 15, acquire_time=90.0, renew_time=100.0, transitions=4)
RELEASED = LeaseSpec("", 1, acquire_time=100.0, renew_time=100.0, transitions=4)
MINE = LeaseSpec(ME, 15, acquire_time=80.0, renew_time=100.0, transitions=5)


@pytest.mark.parametrize(
    ("current", "now", "observed_at", "expected"),
    [
        pytest.param(
            None,
            100.0,
            100.0,
            LeaseDecision(Role.LEADER, ME, LeaseSpec(ME, 15, 100.0, 100.0, 0), acquired=True),
            id="no lease yet: create it, no transition",
        ),
        pytest.param(
            HELD_BY_A, 100.0, 100.0, LeaseDecision(Role.STANDBY, "a_1"), id="held, just seen: stand by"
        ),
        pytest.param(
            HELD_BY_A, 114.9, 100.0, LeaseDecision(Role.STANDBY, "a_1"), id="held, 0.1 s before expiry"
        ),
        pytest.param(
            HELD_BY_A,
            115.0,
            100.0,
            LeaseDecision(Role.LEADER, ME, LeaseSpec(ME, 15, 115.0, 115.0, 5), acquired=True),
            id="expired on my clock: take over, transitions + 1",
        ),
        pytest.param(
            HELD_BY_A,
            500.0,
            499.0,
            LeaseDecision(Role.STANDBY, "a_1"),
            id="renewTime long past but first seen just now: stand by (no trust in other clocks)",
        ),
        pytest.param(
            RELEASED,
            100.0,
            100.0,
            LeaseDecision(Role.LEADER, ME, LeaseSpec(ME, 15, 100.0, 100.0, 5), acquired=True),
            id="released (no holder): take over at once",
        ),
        pytest.param(
            MINE,
            102.0,
            100.0,
            LeaseDecision(Role.LEADER, ME, LeaseSpec(ME, 15, 80.0, 102.0, 5)),
            id="mine: renew, keep acquireTime and transitions",
        ),
        pytest.param(
            MINE,
            300.0,
            100.0,
            LeaseDecision(Role.LEADER, ME, LeaseSpec(ME, 15, 80.0, 300.0, 5)),
            id="mine even though expired: renew (nobody took it)",
        ),
    ],
)
def test_decide_lease(
    current: LeaseSpec | None, now: float, observed_at: float, expected: LeaseDecision
) -> None:
    assert decide_lease(current, identity=ME, now=now, observed_at=observed_at, lease_duration=15) == expected


def test_a_renewal_writes_the_configured_duration() -> None:
    decision = decide_lease(MINE, identity=ME, now=101.0, observed_at=100.0, lease_duration=30)
    assert decision.write is not None and decision.write.duration_seconds == 30


@pytest.mark.parametrize(
    ("last_renewed", "now", "passed"),
    [(100.0, 100.0, False), (100.0, 109.99, False), (100.0, 110.0, True), (100.0, 200.0, True)],
)
def test_renew_deadline(last_renewed: float, now: float, passed: bool) -> None:
    assert renew_deadline_passed(last_renewed, now, 10.0) is passed


def test_release_clears_the_holder_and_keeps_the_transitions() -> None:
    released = release_lease(MINE, 120.0)
    assert released == LeaseSpec("", 1, 120.0, 120.0, 5)
    # and a standby takes it at its next try, with one more transition
    taken = decide_lease(released, identity="c_3", now=120.1, observed_at=120.1, lease_duration=15)
    assert (taken.role, taken.write) == (Role.LEADER, LeaseSpec("c_3", 15, 120.1, 120.1, 6))


@pytest.mark.parametrize(
    ("timings", "seconds"),
    [((15, 10, 2), 15), ((2, 1.5, 0.2), 2), ((1.5, 1, 0.2), 2), ((0.5, 0.3, 0.1), 1)],
)
def test_valid_timings_and_whole_lease_seconds(timings: tuple[float, float, float], seconds: int) -> None:
    assert LeaseTimings(*timings).lease_seconds == seconds


@pytest.mark.parametrize(
    ("timings", "message"),
    [
        ((10, 10, 2), "--renew-deadline (10 s) must be shorter than --lease-duration (10 s)"),
        ((10, 12, 2), "--renew-deadline (12 s) must be shorter than --lease-duration (10 s)"),
        ((15, 2, 2), "--renew-deadline (2 s) must be longer than 1.2 × --retry-period (2 s)"),
        ((15, 10, 0), "--retry-period (0 s) must be positive"),
    ],
)
def test_invalid_timings_say_which_flag(timings: tuple[float, float, float], message: str) -> None:
    with pytest.raises(PermanentError) as raised:
        LeaseTimings(*timings)
    assert raised.value.message == message and raised.value.hint


@pytest.mark.parametrize(
    ("at", "text"),
    [(1_700_000_000.0, "2023-11-14T22:13:20.000000Z"), (1_700_000_000.123456, "2023-11-14T22:13:20.123456Z")],
)
def test_micro_time(at: float, text: str) -> None:
    assert format_micro_time(at) == text


HERE = "web-0_1a2b3c4d.40_bb"
"""This process: pod web-0, booted 1a2b3c4d, pid 40."""


@pytest.mark.parametrize(
    ("holder", "pid"),
    [
        pytest.param("web-0_1a2b3c4d.7_aa", 7, id="another process of this machine: check pid 7"),
        pytest.param("web-0_1a2b3c4d.40_aa", 40, id="an earlier process with this pid (a restart)"),
        pytest.param(HERE, None, id="this process itself: never gone"),
        pytest.param("", None, id="a free Lease: no holder to check"),
        pytest.param("web-1_1a2b3c4d.7_aa", None, id="another pod: only its Lease's expiry tells"),
        pytest.param("web-0_99999999.7_aa", None, id="this machine before a reboot: cannot tell"),
        pytest.param("a_1", None, id="an identity without boot id and pid (an older gitdeploy)"),
        pytest.param("web-0_1a2b3c4d.x7_aa", None, id="no process id in it"),
    ],
)
def test_which_holder_is_checked_for_a_running_process(holder: str, pid: int | None) -> None:
    assert holder_pid_to_check(holder, HERE) == pid


@pytest.mark.parametrize(
    ("since", "now", "gone", "expected"),
    [
        pytest.param(100.0, 105.0, False, 100.0, id="holder runs: when first seen so"),
        pytest.param(100.0, 105.0, True, 90.0, id="holder gone: expired at once (duration ago)"),
        pytest.param(80.0, 105.0, True, 80.0, id="holder gone, long expired: unchanged"),
        pytest.param(90.0, 105.0, True, 90.0, id="holder gone, exactly one duration: unchanged"),
    ],
)
def test_a_gone_holders_lease_counts_as_expired(
    since: float, now: float, gone: bool, expected: float
) -> None:
    assert seen_since(since, now, 15, holder_gone=gone) == expected
    assert (now >= seen_since(since, now, 15, holder_gone=gone) + 15) is (gone or now >= since + 15)


def test_docstring_examples() -> None:
    result = doctest.testmod(lease)
    assert result.attempted > 0 and result.failed == 0
