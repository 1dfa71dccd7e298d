"""Root pytest configuration: shared fixtures live in tests/fixtures/ and are loaded here."""

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
