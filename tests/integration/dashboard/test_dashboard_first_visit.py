"""The first visitor of ``gitdeploy dashboard`` gets the page at once, before the apps are listed,
and the table comes in live when the listing lands (Debian's Chromium under Playwright, the real
CLI, the embedded cluster reached through a fault proxy that holds the listing back)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, expect

from gitdeploy.cluster.connection import connect
from tests.fixtures.cli import RunCli
from tests.fixtures.dashboard import running_dashboard
from tests.fixtures.faultproxy import Fault, FaultProxy
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import SETTINGS, sync_and_wait, web
from tests.fixtures.waiting import eventually

BOUND = 60_000  # ms: a bound for a hung test, not a speed check


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


@pytest.fixture
def held_back(tmp_path: Path, cluster: None) -> Iterator[tuple[FaultProxy, Path]]:
    """A fault proxy in front of the test's embedded cluster, and a kubeconfig that goes through it."""
    kubeconfig = tmp_path / "state" / "kubeconfig"
    host = connect(kubeconfig).api.configuration.host
    found = re.match(r"https?://([^:/]+):(\d+)", host)
    assert found, host
    with FaultProxy((found.group(1), int(found.group(2)))) as proxy:
        port = proxy.url.rsplit(":", 1)[1].rstrip("/")
        proxied = tmp_path / "proxied-kubeconfig"
        text = kubeconfig.read_text().replace(f":{found.group(2)}", f":{port}", 1)
        proxied.write_text(text)
        proxied.chmod(0o600)
        yield proxy, proxied


def test_the_first_visitor_sees_the_page_at_once_and_the_apps_come_in_live(
    git_remote: GitRemote,
    run_cli: RunCli,
    held_back: tuple[FaultProxy, Path],
    browser: Browser,
    tmp_path: Path,
) -> None:
    # Given shop/web deployed, and a dashboard whose API requests hang (the listing never ends)
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    proxy, kubeconfig = held_back
    proxy.set(Fault.STALL)
    with running_dashboard(tmp_path / "state", "--kubeconfig", str(kubeconfig)) as dashboard:
        # When the first visitor opens the apps page, with and without JavaScript
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors: list[str] = []
        page.on("console", lambda message: _keep_errors(message, errors))
        response = page.goto(dashboard)
        plain = browser.new_context(java_script_enabled=False).new_page()
        plain.goto(dashboard)

        # Then the page is there at once: header, filters, and what goes on; no row, made up or not
        assert response is not None and response.status == 200
        assert page.locator("h1").inner_text() == "Apps"
        assert page.get_by_role("button", name="Filter").is_visible()
        expect(page.locator("#listing")).to_contain_text("Listing the apps")
        assert page.locator("#apps tbody tr").count() == 0 and page.locator("#counts").count() == 0
        eventually(lambda: proxy.requests[Fault.STALL] > 0, "the dashboard asks the cluster, and waits")
        # and without JavaScript the page offers a reload, and reloads itself (a noscript refresh)
        reload = plain.get_by_role("link", name="reload")
        assert reload.get_attribute("href") == "/"
        assert '<noscript><meta http-equiv="refresh" content="2"></noscript>' in plain.content()
        page.evaluate("window.notReloaded = true")

        # When the cluster answers again
        proxy.set(Fault.PASS)

        # Then the table comes in over the live stream, without a reload
        expect(page.locator('tr[data-app="shop/web"] [data-col="revision"]')).to_have_text(
            "1 Complete", timeout=BOUND
        )
        assert page.evaluate("window.notReloaded") is True
        assert page.locator("#listing").count() == 0
        expect(page.locator("#counts")).to_contain_text("1 of 1 apps")
        # and the page without JavaScript shows it once reloaded, and then reloads itself no more
        plain.goto(dashboard)  # the reload link's target (unless the page reloaded itself first)
        expect(plain.locator('tr[data-app="shop/web"]')).to_have_count(1)
        assert 'http-equiv="refresh"' not in plain.content()
        assert errors == [], "no console errors (a blocked inline script would be one)"


def _keep_errors(message: ConsoleMessage, errors: list[str]) -> None:
    if message.type == "error":
        errors.append(message.text)
