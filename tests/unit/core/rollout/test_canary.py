"""The canary replica arithmetic (gitdeploy.core.rollout.canary): the worked examples of its
docstring, Argo Rollouts' own table (utils/replicaset/canary_test.go, its basic-canary cases, as
facts), and properties of the bounds for any input."""

from __future__ import annotations

import doctest
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitdeploy.core.canarysteps import AnalysisRef, AnalysisStep, CanaryStep, Pause, SetWeight
from gitdeploy.core.rollout import canary
from gitdeploy.core.rollout.canary import at_step_sizes, basic_canary_replicas, current_weight
from gitdeploy.core.scaling.canaryshares import canary_shares
from gitdeploy.core.scaling.rollingmath import Bound, resolve_fenceposts
from tests.fixtures.hypothesis_rollouts import percent_or_count


class Case(NamedTuple):
    name: str
    replicas: int
    weight: int
    max_surge: Bound
    max_unavailable: Bound
    stable: tuple[int, int]  # spec, available
    canary: tuple[int, int]
    expected: tuple[int, int]  # canary, stable
    older: tuple[int, int] = (0, 0)


def run(case: Case) -> tuple[int, int]:
    return basic_canary_replicas(
        case.replicas,
        case.weight,
        case.max_surge,
        case.max_unavailable,
        *case.stable,
        *case.canary,
        *case.older,
    )


def test_docstring_examples() -> None:
    result = doctest.testmod(canary)
    assert result.attempted > 0 and result.failed == 0


DOCSTRING_CASES = [
    Case("10% of 10, surge 1, unavailable 1", 10, 10, 1, 1, (10, 10), (0, 0), (1, 9)),
    Case("30% of 10, surge 3, unavailable 0", 10, 30, 3, 0, (10, 10), (0, 0), (3, 10)),
    Case("30% of 10, surge 0, unavailable 5", 10, 30, 0, 5, (10, 10), (0, 0), (0, 7)),
    Case("5% of 10, surge 1, unavailable 1", 10, 5, 1, 1, (10, 10), (0, 0), (1, 10)),
    Case("5% of 1, surge 1", 1, 5, 1, 0, (1, 1), (0, 0), (1, 1)),
    Case("95% of 1, surge 1", 1, 95, 1, 0, (1, 1), (0, 0), (1, 1)),
    Case("stable first, older pods go first", 10, 30, 1, 0, (1, 1), (0, 0), (1, 7), older=(3, 3)),
    Case("abort: stable surges back", 4, 0, 1, 0, (0, 0), (4, 4), (4, 1)),
    Case("abort: then one canary pod goes", 4, 0, 1, 0, (1, 1), (4, 4), (3, 1)),
]

UPSTREAM_CASES = [
    Case("spec below available counts the spec", 10, 100, 3, 0, (7, 8), (6, 3), (6, 7)),
    Case("max surge int scales the canary up", 10, 20, 2, 0, (10, 10), (0, 0), (2, 10)),
    Case("max surge percentage scales the canary up", 10, 20, "20%", 0, (10, 10), (0, 0), (2, 10)),
    Case("extra stable replicas scale down", 10, 20, "20%", 0, (10, 10), (2, 2), (2, 8)),
    Case("not past max surge", 10, 30, 2, 0, (10, 10), (0, 0), (2, 10)),
    Case("max unavailable int scales the stable down", 10, 20, 0, 2, (10, 10), (0, 0), (0, 8)),
    Case("max unavailable percentage scales the stable down", 10, 20, 0, "20%", (10, 10), (0, 0), (0, 8)),
    Case("not past max unavailable", 10, 30, 0, 2, (10, 10), (0, 0), (0, 8)),
    Case("max surge and max unavailable", 10, 50, 2, 1, (10, 10), (0, 0), (2, 9)),
    Case("canary to zero at weight 0", 10, 0, 1, 1, (10, 10), (1, 1), (0, 10)),
    Case("stable to zero at weight 100", 10, 100, 1, 1, (1, 1), (10, 10), (10, 0)),
    Case("canary not to zero on a non-zero weight", 1, 20, 1, 0, (1, 1), (0, 0), (1, 1)),
    Case("canary not to zero on a non-100 weight", 1, 90, 1, 0, (1, 1), (0, 0), (1, 1)),
    Case("stable scales up before the canary", 10, 30, 1, 0, (1, 1), (0, 0), (1, 7), older=(3, 3)),
    Case("canary and stable scale down", 10, 30, 0, 3, (8, 5), (4, 4), (3, 7)),
    Case("nothing down while older pods exist", 10, 30, 0, 1, (8, 6), (4, 2), (4, 8), older=(3, 3)),
    Case("0% and 0% resolve to unavailable 1", 10, 10, "0%", "0%", (10, 10), (0, 0), (0, 9)),
    Case("max surge honoured while the stable is unavailable", 4, 100, 1, 0, (4, 1), (0, 0), (1, 4)),
    Case("max unavailable honoured while the stable is unavailable", 4, 100, 1, 0, (4, 1), (1, 1), (1, 3)),
    Case("aborting: the stable surges before the canary goes", 4, 0, 1, 0, (0, 0), (4, 4), (4, 1)),
    Case("aborting: nothing while the stable is unavailable", 4, 0, 1, 0, (1, 0), (4, 4), (4, 1)),
    Case("aborting: one canary pod within max unavailable 0", 4, 0, 1, 0, (1, 1), (4, 4), (3, 1)),
    Case("promote full (weight 100) ignores the step weight", 4, 100, 4, 4, (4, 4), (0, 0), (4, 0)),
    Case("promote full still honours the bounds", 4, 100, 3, 0, (4, 4), (0, 0), (3, 4)),
    Case("both down to their available pods at 100%", 10, 100, 1, 0, (10, 2), (10, 8), (9, 2)),
]
"""Upstream's basic-canary cases (a full promotion is weight 100 here), with its expectations."""


class Departure(NamedTuple):
    case: Case
    upstream_now: tuple[int, int]
    why: str


APPROXIMATION = "v1.1+ picks the sizes nearest the weight instead of rounding both up"
KEPT_SIDE = "upstream also gives the side kept available pods above its spec (pods on their way out)"
DEPARTURES = [
    Departure(Case("aborted, a canary pod going", 2, 0, 0, None, (2, 0), (0, 1), (0, 2)), (1, 1), KEPT_SIDE),
    Departure(Case("49% of 1 without surge", 1, 49, 0, 1, (1, 1), (0, 0), (1, 1)), (0, 1), APPROXIMATION),
    Departure(Case("51% of 1 without surge", 1, 51, 0, 1, (1, 1), (0, 0), (1, 1)), (0, 0), APPROXIMATION),
    Departure(Case("51% of 1, no stable pods", 1, 51, 0, 1, (0, 0), (0, 0), (1, 1)), (1, 0), APPROXIMATION),
    Departure(Case("5% of 10 without surge", 10, 5, 0, 1, (10, 10), (0, 0), (1, 10)), (0, 9), APPROXIMATION),
    Departure(Case("5% of 10, part 2", 10, 5, 0, 1, (9, 9), (0, 0), (1, 10)), (1, 9), APPROXIMATION),
    Departure(Case("99% of 3 without surge", 3, 99, 0, 2, (3, 3), (0, 0), (1, 1)), (0, 1), APPROXIMATION),
    Departure(Case("99% of 3, part 2", 3, 99, 0, 2, (1, 1), (0, 0), (3, 1)), (2, 1), APPROXIMATION),
]
"""Cases of upstream's current table whose expectations come from its later rule (see the module
docstring): the issue's rule, both shares rounded up, gives ``case.expected``."""


@pytest.mark.parametrize("case", DOCSTRING_CASES + UPSTREAM_CASES, ids=lambda c: c.name)
def test_table(case: Case) -> None:
    assert run(case) == case.expected


@pytest.mark.parametrize("departure", DEPARTURES, ids=lambda d: d.case.name)
def test_departures_from_later_upstream(departure: Departure) -> None:
    assert run(departure.case) == departure.case.expected != departure.upstream_now


@pytest.mark.parametrize(
    ("replicas", "weight", "expected"),
    [
        (10, 0, (0, 10, False)),
        (10, 100, (10, 0, False)),
        (10, 25, (3, 8, True)),
        (4, 25, (1, 3, False)),
        (0, 50, (0, 0, False)),
        (100, 7, (7, 93, False)),  # Go's floating point rounds 100 × 0.07 up to 8
        (3, 50, (2, 2, True)),
    ],
)
def test_canary_shares(replicas: int, weight: int, expected: tuple[int, int, bool]) -> None:
    assert canary_shares(replicas, weight) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((10, 101, 1, 1, 10, 10, 0, 0), "weight must be an integer from 0 to 100"),
        ((10, -1, 1, 1, 10, 10, 0, 0), "weight must be an integer from 0 to 100"),
        ((10, True, 1, 1, 10, 10, 0, 0), "weight must be an integer from 0 to 100"),
        ((-1, 10, 1, 1, 10, 10, 0, 0), "replicas must be a non-negative integer"),
        ((10, 10, 1, 1, -1, 10, 0, 0), "stable_spec must be a non-negative integer"),
        ((10, 10, 1, 1, 10, 10, 0, 0, 0, -2), "older_available must be a non-negative integer"),
        ((10, 10, "x", 1, 10, 10, 0, 0), "maxSurge must be an integer or a percentage"),
    ],
)
def test_refuses_what_is_not_a_canary(args: tuple[int | str, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        basic_canary_replicas(*args)  # type: ignore[arg-type]


# -- properties ---------------------------------------------------------------------------------


class Pass(NamedTuple):
    replicas: int
    weight: int
    surge: Bound
    unavailable: Bound
    stable_spec: int
    stable_available: int
    canary_spec: int
    canary_available: int
    older_spec: int
    older_available: int

    def run(self) -> tuple[int, int]:
        return basic_canary_replicas(*self)

    def limits(self) -> tuple[int, int]:
        """``(most pods by spec, fewest available)`` the bounds allow."""
        surge, unavailable = resolve_fenceposts(self.surge, self.unavailable, self.replicas)
        rounded = canary_shares(self.replicas, self.weight)[2]
        return self.replicas + surge + int(rounded), self.replicas - min(unavailable, self.replicas)


@st.composite
def passes(draw: st.DrawFn) -> Pass:
    def spec_and_available() -> tuple[int, int]:
        spec = draw(st.integers(0, 30))
        return spec, draw(st.integers(0, spec + 2))  # a ReplicaSet going down can have more

    older = draw(st.sampled_from([(0, 0), spec_and_available()]))
    return Pass(
        draw(st.integers(0, 25)),
        draw(st.integers(0, 100)),
        draw(percent_or_count),
        draw(percent_or_count),
        *spec_and_available(),
        *spec_and_available(),
        *older,
    )


@settings(max_examples=600, deadline=None)
@given(passes())
def test_no_side_passes_its_share(p: Pass) -> None:
    """A side grows only up to its share and shrinks only down to it, except that a pass trims
    what is over the surge limit already (more pods by spec than ``replicas + maxSurge``)."""
    canary_want, stable_want, _ = canary_shares(p.replicas, p.weight)
    canary_now, stable_now = p.run()
    assert canary_now <= max(p.canary_spec, canary_want)
    assert stable_now <= max(p.stable_spec, stable_want)
    most, _ = p.limits()
    if canary_now < min(p.canary_spec, canary_want) or stable_now < min(p.stable_spec, stable_want):
        assert p.canary_spec + p.stable_spec > most


@settings(max_examples=600, deadline=None)
@given(passes())
def test_growth_stays_within_max_surge(p: Pass) -> None:
    canary_now, stable_now = p.run()
    most, _ = p.limits()
    if canary_now > p.canary_spec or stable_now > p.stable_spec:
        assert p.older_spec + canary_now + stable_now <= most


@settings(max_examples=600, deadline=None)
@given(passes())
def test_older_replica_sets_go_first(p: Pass) -> None:
    canary_now, stable_now = p.run()
    if p.older_spec > 0:
        assert canary_now >= p.canary_spec and stable_now >= p.stable_spec


@settings(max_examples=600, deadline=None)
@given(passes())
def test_shrinking_stays_within_max_unavailable(p: Pass) -> None:
    """What goes never takes availability below ``replicas − maxUnavailable`` (or below what it
    already was): a ReplicaSet that shrinks deletes its unavailable pods first."""
    canary_now, stable_now = p.run()
    _, fewest = p.limits()
    before = min(p.canary_spec, p.canary_available) + min(p.stable_spec, p.stable_available)
    after = min(canary_now, p.canary_available) + min(stable_now, p.stable_available)
    if canary_now < p.canary_spec or stable_now < p.stable_spec:
        assert after >= min(fewest, before)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 25), st.integers(0, 100), percent_or_count, percent_or_count)
def test_a_step_settles_at_its_shares_within_the_bounds(
    replicas: int, weight: int, surge: Bound, unavailable: Bound
) -> None:
    """From a full stable, pass after pass (pods available at once), the sizes reach the weight's
    shares and stay there, every pass within maxSurge and maxUnavailable."""
    canary_want, stable_want, _ = canary_shares(replicas, weight)
    canary_size, stable_size = 0, replicas
    for _ in range(2 * replicas + 3):
        sizes = (stable_size, stable_size, canary_size, canary_size)
        p = Pass(replicas, weight, surge, unavailable, *sizes, 0, 0)
        most, fewest = p.limits()
        canary_next, stable_next = p.run()
        assert canary_next + stable_next <= max(most, canary_size + stable_size)
        assert min(canary_next, canary_size) + min(stable_next, stable_size) >= min(fewest, replicas)
        if (canary_next, stable_next) == (canary_size, stable_size):
            break
        canary_size, stable_size = canary_next, stable_next
    assert (canary_size, stable_size) == (canary_want, stable_want)


# -- where a canary is in its steps ---------------------------------------------------------------

STEPS = (SetWeight(20), Pause(), SetWeight(50), Pause(60), AnalysisStep(AnalysisRef(("error-rate",))))


@pytest.mark.parametrize(
    ("steps", "index", "aborted", "weight"),
    [
        (STEPS, 0, False, 20),
        (STEPS, 1, False, 20),  # a pause keeps the weight of the step before it
        (STEPS, 3, False, 50),
        (STEPS, 4, False, 50),
        (STEPS, 5, False, 100),  # past the last step: promoted
        (STEPS, 9, False, 100),
        (STEPS, 3, True, 0),  # aborted: back to the stable
        ((Pause(), SetWeight(40)), 0, False, 0),  # no weight set yet
        ((), 0, False, 100),  # no steps: straight to the new template
    ],
)
def test_current_weight(steps: tuple[CanaryStep, ...], index: int, aborted: bool, weight: int) -> None:
    assert current_weight(steps, index, aborted=aborted) == weight


@pytest.mark.parametrize(
    ("canary", "stable", "older_available", "settled"),
    [
        ((3, 3), (7, 7), 0, True),
        ((3, 2), (7, 7), 0, False),  # a canary pod not available yet
        ((3, 3), (8, 7), 0, False),  # the stable not scaled down yet
        ((3, 3), (7, 6), 0, False),
        ((3, 3), (7, 7), 1, False),  # an older ReplicaSet still has an available pod
        ((4, 4), (7, 7), 0, False),
    ],
)
def test_at_step_sizes(
    canary: tuple[int, int], stable: tuple[int, int], older_available: int, settled: bool
) -> None:
    assert at_step_sizes(10, 30, *canary, *stable, older_available) is settled


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 25), st.integers(0, 100), percent_or_count, percent_or_count)
def test_a_step_settles_where_its_passes_stop(
    replicas: int, weight: int, surge: Bound, unavailable: Bound
) -> None:
    """Pass after pass with pods available at once, the sizes reach the step's and stay there."""
    canary_want, stable_want, _ = canary_shares(replicas, weight)
    assert at_step_sizes(replicas, weight, canary_want, canary_want, stable_want, stable_want, 0)
    assert basic_canary_replicas(
        replicas, weight, surge, unavailable, stable_want, stable_want, canary_want, canary_want
    ) == (canary_want, stable_want)
