"""Root pytest configuration: shared fixtures live in tests/fixtures/ and are loaded here.

Hypothesis runs without its per-example deadline and its too-slow health check: both are timing
assertions, which fail on a loaded machine (CI runs two workers on two cores) without anything
being wrong. Speed is measured in bench/, never in tests."""

from hypothesis import HealthCheck, settings

settings.register_profile("gitdeploy", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("gitdeploy")

pytest_plugins: list[str] = [
    "tests.fixtures.cli",
    "tests.fixtures.gitrepo",
    "tests.fixtures.cluster",
    "tests.fixtures.dashboard",
    "tests.fixtures.controlplane",
    "tests.fixtures.faultproxy",
    "tests.fixtures.kubectl",
    "tests.fixtures.registry",
    "tests.fixtures.prometheus",  # after registry, whose find_free_port it uses
    "tests.fixtures.rollouts",
    "tests.fixtures.signing",
]
