"""The dashboard in a real browser (Debian's Chromium under Playwright), against the embedded
cluster with real rollouts made by the real ``gitdeploy sync`` and ``gitdeploy run``."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import SETTINGS, running_loop, sync_and_wait, web, web_status

BOUND = 60_000  # ms: a bound for a hung test, not a speed check


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def _open(browser: Browser, url: str) -> tuple[Page, list[str]]:
    """A page at ``url`` and the console errors it logs (a CSP violation is one)."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("console", lambda message: _keep_errors(message, errors))
    response = page.goto(url)
    assert response is not None and response.status == 200
    return page, errors


def _keep_errors(message: ConsoleMessage, errors: list[str]) -> None:
    if message.type == "error":
        errors.append(message.text)


def _assert_a_strict_content_security_policy(dashboard: str) -> None:
    """Every answer (a page, a 404 page, a static file) forbids inline scripts, styles and eval."""
    for path in ("", "apps/shop/nothing", "static/dashboard.css"):
        try:
            with urllib.request.urlopen(dashboard + path) as answer:
                policy = answer.headers["Content-Security-Policy"]
        except urllib.error.HTTPError as refused:  # the missing app: a 404 page, with the header too
            assert refused.code == 404
            policy = refused.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "style-src 'self'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy


def _cell(page: Page, app: str, column: str) -> str:
    return page.locator(f'tr[data-app="{app}"] [data-col="{column}"]').inner_text().strip()


def test_the_apps_page_shows_status_and_a_commit_updates_it_live_to_complete(
    git_remote: GitRemote, run_cli: RunCli, dashboard: str, browser: Browser, tmp_path: Path
) -> None:
    # Given shop/web deployed from git, and the apps page open
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    page, errors = _open(browser, dashboard)

    # Then it shows shop/web as `gitdeploy status` does
    status = web_status(run_cli)
    assert (_cell(page, "shop/web", "sync"), _cell(page, "shop/web", "health")) == (
        status["sync"], status["health"],
    )  # fmt: skip
    assert _cell(page, "shop/web", "revision").split()[0] == "1"
    assert _cell(page, "shop/web", "commit").startswith(status["commit"])
    assert "1 of 1 apps" in page.locator("#counts").inner_text()
    _assert_a_strict_content_security_policy(dashboard)

    # When a commit changes the app and `gitdeploy run` rolls it out, with the page left open
    page.evaluate("window.notReloaded = true")
    sha = git_remote.commit_and_push("web: nginx 1.26", {"apps/web.yaml": web("nginx:1.26")})
    with running_loop(git_remote, tmp_path):
        # Then the page follows it over server-sent events, without a reload, to Complete
        revision = page.locator('tr[data-app="shop/web"] [data-col="revision"]')
        expect(revision).to_have_text("2 Complete", timeout=BOUND)
    assert page.evaluate("window.notReloaded") is True
    assert _cell(page, "shop/web", "commit").startswith(sha[:7])
    assert "web: nginx 1.26" in _cell(page, "shop/web", "commit")
    status = web_status(run_cli)
    assert (_cell(page, "shop/web", "sync"), _cell(page, "shop/web", "health")) == (
        status["sync"], status["health"],
    )  # fmt: skip
    assert errors == [], "no console errors (a blocked inline script or style would be one)"


def test_the_app_page_shows_the_history_that_gitdeploy_history_prints(
    git_remote: GitRemote, run_cli: RunCli, dashboard: str, browser: Browser
) -> None:
    # Given three revisions, the third a rollback to the first
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push("web: nginx 1.26", {"apps/web.yaml": web("nginx:1.26")})
    sync_and_wait(run_cli, git_remote)
    rolled = run_cli("rollback", "shop/web", "--to-revision", "1", "-m", "1.26 is slow")
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    sync_and_wait(run_cli, git_remote)

    # When the app page is opened
    page, errors = _open(browser, f"{dashboard}apps/shop/web")

    # Then its timeline is the CLI's, row for row, newest first
    printed = run_cli("history", "shop/web", "-o", "wide").stdout.splitlines()[1:]
    by_revision = {line.split()[0]: line for line in printed}
    rows = page.locator("#history tbody tr")
    assert rows.count() == len(printed) == 3
    for index in range(rows.count()):
        cells = [c.strip() for c in rows.nth(index).locator("td").all_inner_texts()]
        revision, commit, author, _age, cause, outcome, images = cells
        assert revision == str(3 - index)
        line = by_revision[revision]
        for shown in (commit, author, cause, outcome, images):
            assert shown in line, f"{shown!r} of revision {revision} is not in `history`: {line!r}"
    assert "Rollback to revision 1" in rows.nth(0).inner_text()
    # and the app's message is status's, the pin with why and the way out
    message = page.locator("#app-live .message").inner_text()
    assert message == web_status(run_cli)["message"]
    assert "1.26 is slow" in message and "gitdeploy deploy shop/web --latest" in message
    assert "image: nginx:1.26 -> nginx:1.25" in page.locator("#diff").inner_text()

    # When two revisions are compared with the form (plain GET, no script needed)
    page.select_option('select[name="from"]', "1")
    page.select_option('select[name="to"]', "2")
    page.get_by_role("button", name="Compare").click()

    # Then the diff is the one `history --revision 2` prints against revision 1
    page.wait_for_url("**/apps/shop/web?from=1&to=2")
    assert page.locator("#diff-title").inner_text() == "Template changes in revision 2 since revision 1"
    in_full = run_cli("history", "shop/web", "--revision", "2").stdout
    for change in page.locator("#diff li code").all_inner_texts():
        assert f"    {change}\n" in in_full, f"{change!r} is not in `history --revision 2`:\n{in_full}"
    assert page.locator("#diff li").count() == 1
    assert errors == []

    # and on a phone it fits the screen (wide tables scroll inside their box), reachable by keyboard
    phone = browser.new_page(viewport={"width": 390, "height": 844})
    phone.goto(f"{dashboard}apps/shop/web")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    phone.keyboard.press("Tab")
    assert phone.evaluate("document.activeElement.textContent") == "Skip to content"
