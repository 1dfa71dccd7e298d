"""The dashboard of ``gitdeploy run --listen`` reads its apps list from the loop's watches: with
the apps page open it makes no list request per refresh, and a commit or a rollback still shows
on the page live (Debian's Chromium under Playwright, real ``gitdeploy run``, the embedded
cluster counting requests by client); so does ``gitdeploy dashboard``, from watches of its own."""

from __future__ import annotations

import re
import socket
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.fixtures.dashboard import running_dashboard
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.leader import FAST_LEASE, SETTINGS, Embedded, Run
from tests.fixtures.leader import leader_cluster as cluster  # noqa: F401 (a fixture)
from tests.fixtures.leader import leader_runs as runs  # noqa: F401 (a fixture)
from tests.fixtures.shopweb import web
from tests.fixtures.waiting import eventually

BOUND = 60_000  # ms: a bound for a hung test, not a speed check
RENEWALS = 25
"""Lease renewals (one each 0.2 s retry period) counted as the test's clock: several of the
dashboard's 1 s refresh intervals."""


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def lists_by(embedded: Embedded, identity: str) -> Counter[str]:
    """The list requests of the run named ``identity`` since the stats were cleared, by resource."""
    found: Counter[str] = Counter()
    for row in embedded._stats()["byAgent"]:
        if row["agent"] == f"gitdeploy ({identity})" and row["verb"] == "list":
            found[row["resource"]] += row["count"]
    return found


def watching(embedded: Embedded, identity: str) -> set[str]:
    """The resources the run named ``identity`` has had a watch of (a watch starts after its list)."""
    return {
        row["resource"]
        for row in embedded._stats()["byAgent"]
        if row["agent"] == f"gitdeploy ({identity})" and row["verb"] == "watch"
    }


def test_the_dashboard_of_run_lists_no_apps_per_refresh_and_shows_changes_live(
    git_remote: GitRemote,
    cluster: Embedded,  # noqa: F811
    runs: Callable[..., Run],  # noqa: F811
    browser: Browser,
) -> None:
    # Given `gitdeploy run --listen` (settled: nothing due until its hourly resync) at revision 1
    git_remote.commit_and_push("Add web", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    port = free_port()
    run = runs(
        "dash", "--repo", git_remote.url, "--interval", "0.5s", "--resync-interval", "1h", *FAST_LEASE,
        "--listen", f"127.0.0.1:{port}",
    )  # fmt: skip
    identity = run.identity()
    eventually(lambda: (cluster.web() or {}).get("health") == "Healthy", "shop/web deployed")
    # and its apps page open, showing shop/web
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(f"http://127.0.0.1:{port}/")
    revision = page.locator('tr[data-app="shop/web"] [data-col="revision"]')
    expect(revision).to_have_text("1 Complete", timeout=BOUND)
    page.evaluate("window.notReloaded = true")
    # ... and run's watches of shop listed it (they start within 2 s of a namespace's first app)
    eventually(lambda: {"replicasets", "configmaps"} <= watching(cluster, identity), "run's watches")

    # When the page stays open over several refresh intervals (the Lease renewals count them)
    cluster.stats("DELETE")
    eventually(lambda: cluster.stats().get(("update", "leases"), 0) >= RENEWALS, f"{RENEWALS} renewals")

    # Then run listed no ReplicaSets and no app records meanwhile: its watches hold them
    listed = lists_by(cluster, identity)
    assert listed["replicasets"] == 0 and listed["configmaps"] == 0, listed

    # When a commit changes the app, then a rollback returns to revision 1
    sha = git_remote.commit_and_push("web: nginx 1.26", {"apps/web.yaml": web("nginx:1.26")})
    # Then the page shows each, live
    expect(revision).to_have_text("2 Complete", timeout=BOUND)
    commit = page.locator('tr[data-app="shop/web"] [data-col="commit"]')
    expect(commit).to_contain_text(sha[:7])
    rolled = cluster.run_cli("rollback", "shop/web", "--to-revision", "1", "-m", "1.26 is slow")
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    expect(revision).to_have_text("3 Complete", timeout=BOUND)
    expect(page.locator('tr[data-app="shop/web"] [data-col="sync"]')).to_have_text("Pinned")
    assert page.evaluate("window.notReloaded") is True
    assert re.search(r"1 of 1 apps", page.locator("#counts").inner_text())


def lists_by_others(embedded: Embedded, identity: str) -> Counter[str]:
    """The list requests of every client but the run named ``identity``, by resource."""
    found: Counter[str] = Counter()
    for row in embedded._stats()["byAgent"]:
        if row["agent"] != f"gitdeploy ({identity})" and row["verb"] == "list":
            found[row["resource"]] += row["count"]
    return found


def test_gitdeploy_dashboard_watches_the_apps_and_lists_them_no_more(
    git_remote: GitRemote,
    cluster: Embedded,  # noqa: F811
    runs: Callable[..., Run],  # noqa: F811
    browser: Browser,
    tmp_path: Path,
) -> None:
    # Given `gitdeploy run` (without --listen) at revision 1, and `gitdeploy dashboard` beside it
    git_remote.commit_and_push("Add web", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    run = runs("loop", "--repo", git_remote.url, "--interval", "0.5s", "--resync-interval", "1h", *FAST_LEASE)
    identity = run.identity()
    eventually(lambda: (cluster.web() or {}).get("health") == "Healthy", "shop/web deployed")
    with running_dashboard(tmp_path / "state") as dashboard:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(dashboard)
        revision = page.locator('tr[data-app="shop/web"] [data-col="revision"]')
        expect(revision).to_have_text("1 Complete", timeout=BOUND)

        # When the page stays open over several refresh intervals
        cluster.stats("DELETE")
        eventually(lambda: cluster.stats().get(("update", "leases"), 0) >= RENEWALS, f"{RENEWALS} renewals")

        # Then the dashboard listed nothing meanwhile: its watches hold the apps
        assert lists_by_others(cluster, identity) == Counter()

        # and a commit rolled out by the loop shows on the page, live
        git_remote.commit_and_push("web: nginx 1.26", {"apps/web.yaml": web("nginx:1.26")})
        expect(revision).to_have_text("2 Complete", timeout=BOUND)
        assert lists_by_others(cluster, identity) == Counter()
