"""The dashboard's actions in a real browser (Debian's Chromium under Playwright), against the
embedded cluster with real rollouts made by the real ``gitdeploy sync``: refused without the
token, without a session and without the CSRF token; with them, a rollback that ``gitdeploy
history`` then shows, and an event naming who asked. And the dashboard served by ``gitdeploy run
--listen`` next to its probes, metrics and webhook."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.fixtures.cli import RunCli, gitdeploy_executable
from tests.fixtures.dashboard import DASHBOARD_TOKEN, running_dashboard
from tests.fixtures.drift import state_apis
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import SETTINGS, sync_and_wait, web, web_history
from tests.fixtures.waiting import eventually

BOUND = 60_000  # ms: a bound for a hung test, not a speed check
ROLLBACK = "apps/shop/web/actions/rollback"


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def two_revisions(git_remote: GitRemote, run_cli: RunCli) -> None:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push("web: nginx 1.26", {"apps/web.yaml": web("nginx:1.26")})
    sync_and_wait(run_cli, git_remote)


def revisions(run_cli: RunCli) -> list[int]:
    return [entry["revision"] for entry in web_history(run_cli)]


def dashboard_events(tmp_path: Path) -> list[tuple[str, str]]:
    with state_apis(tmp_path) as (_, core):
        found = core.list_namespaced_event("shop")
        return [(str(e.reason), str(e.message)) for e in found.items if str(e.reason).endswith("Requested")]


def log_in(context: BrowserContext, dashboard: str, name: str, token: str) -> Page:
    page = context.new_page()
    page.goto(f"{dashboard}apps/shop/web")
    page.locator("#login").click()
    page.get_by_label("Your name").fill(name)
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Log in").click()
    return page


def test_a_read_only_dashboard_refuses_every_action(
    git_remote: GitRemote, run_cli: RunCli, dashboard: str, browser: Browser
) -> None:
    # Given shop/web at revision 2, and a dashboard started without a token file
    two_revisions(git_remote, run_cli)

    # Then its app page offers no action and no login
    page = browser.new_page()
    page.goto(f"{dashboard}apps/shop/web")
    assert page.locator("#actions").count() == 0 and page.locator("#login").count() == 0
    assert page.locator(".badge").inner_text() == "read-only"

    # and a POST that asks for a rollback, logging in or out, is refused and changes nothing
    forged = httpx.post(dashboard + ROLLBACK, data={"revision": "1", "csrf": "x"}, timeout=10)
    login = httpx.post(dashboard + "login", data={"name": "eve", "token": ""}, timeout=10)
    elsewhere = httpx.post(dashboard + "apps/shop/web", data={"revision": "1"}, timeout=10)
    assert (forged.status_code, login.status_code, elsewhere.status_code) == (403, 403, 403)
    assert "read-only" in forged.text
    assert httpx.get(dashboard + "login", timeout=10).status_code == 404
    assert revisions(run_cli) == [1, 2]


def test_with_the_token_a_confirmed_rollback_happens_and_an_event_names_who(
    git_remote: GitRemote, run_cli: RunCli, browser: Browser, token_file: Path, cluster: None, tmp_path: Path
) -> None:
    # Given shop/web at revision 2, and a dashboard with a token file
    two_revisions(git_remote, run_cli)
    with running_dashboard(tmp_path / "state", "--dashboard-token-file", str(token_file)) as dashboard:
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{dashboard}apps/shop/web")
        # Then before a login the page offers only the login
        assert page.locator("#login").is_visible() and page.locator("#actions button").count() == 0

        # When someone posts a rollback without a session: refused
        nobody = httpx.post(dashboard + ROLLBACK, data={"revision": "1"}, timeout=10)
        assert nobody.status_code == 401
        # and a wrong token does not log in
        wrong = log_in(context, dashboard, "mallory", "not-the-token-at-all")
        assert "Wrong token" in wrong.locator(".problem").inner_text()
        assert context.cookies() == []

        # When alice logs in with the token
        page = log_in(context, dashboard, "alice", DASHBOARD_TOKEN)
        page.wait_for_url("**/apps/shop/web")
        [cookie] = context.cookies()
        assert (cookie["httpOnly"], cookie["sameSite"]) == (True, "Strict")
        session = {cookie["name"]: cookie["value"]}
        csrf = page.locator('#actions input[name="csrf"]').get_attribute("value")
        assert csrf

        # Then a forged POST with her session cookie but without (or with a wrong) CSRF token is
        # refused, and so is one from another site with the right one
        with httpx.Client(base_url=dashboard, cookies=session, timeout=10) as forger:
            no_csrf = forger.post(ROLLBACK, data={"revision": "1"})
            bad_csrf = forger.post(ROLLBACK, data={"revision": "1", "csrf": csrf[:-2] + "xx"})
            other_site = forger.post(
                ROLLBACK, data={"revision": "1", "csrf": csrf}, headers={"Origin": "https://evil.example"}
            )
        assert [a.status_code for a in (no_csrf, bad_csrf, other_site)] == [403, 403, 403]
        assert revisions(run_cli) == [1, 2] and dashboard_events(tmp_path) == []

        # When she picks revision 1, and confirms on the confirm page
        page.select_option('#actions select[name="revision"]', "1")
        page.get_by_role("button", name="Roll back…").click()
        expect(page.locator("h1")).to_have_text("Roll back to revision 1?")
        assert revisions(run_cli) == [1, 2], "the confirm page changes nothing"
        page.get_by_label("Why").fill("1.26 is slow")
        page.get_by_role("button", name="Yes, roll back").click()

        # Then it is done, and `gitdeploy sync` carries it out as it does a CLI rollback
        expect(page.locator("#done")).to_contain_text("revision 3 will run revision 1's template")
        sync_and_wait(run_cli, git_remote)
        newest = web_history(run_cli)[-1]
        assert newest["revision"] == 3
        printed = run_cli("history", "shop/web").stdout
        assert re.search(r"^3 .*Rollback to revision 1", printed, re.MULTILINE), printed

        # and an event on the app names her, on the cluster and on the app page
        [(reason, message)] = dashboard_events(tmp_path)
        assert reason == "RollbackRequested"
        assert message.startswith("rollback by alice via dashboard: rolled back: revision 3")
        page.goto(f"{dashboard}apps/shop/web")
        expect(page.locator("#events")).to_contain_text("rollback by alice via dashboard", timeout=BOUND)
        assert page.locator("#history tbody tr").first.locator("td").first.inner_text().strip() == "3"

        # When she logs out, her cookie is gone and the session's forms no longer act
        page.get_by_role("button", name="Log out").click()
        assert context.cookies() == []
        context.close()


def test_an_action_the_app_cannot_take_is_refused_with_the_clis_reason(
    git_remote: GitRemote, run_cli: RunCli, browser: Browser, token_file: Path, cluster: None, tmp_path: Path
) -> None:
    # Given shop/web Complete at revision 2 and alice logged in
    two_revisions(git_remote, run_cli)
    with running_dashboard(tmp_path / "state", "--dashboard-token-file", str(token_file)) as dashboard:
        context = browser.new_context()
        page = log_in(context, dashboard, "alice", DASHBOARD_TOKEN)
        page.wait_for_url("**/apps/shop/web")

        # When she asks to abort a canary that does not exist, and confirms
        page.get_by_role("link", name="Abort canary…").click()
        page.get_by_role("button", name="Yes, abort canary").click()

        # Then the refusal is the one `gitdeploy rollout abort` prints, and nothing changed
        cli = run_cli("rollout", "abort", "shop/web")
        assert cli.returncode == 1
        assert "shop/web has no canary in progress to abort" in page.locator(".problem").inner_text()
        assert "shop/web has no canary in progress to abort" in cli.stderr
        assert revisions(run_cli) == [1, 2] and dashboard_events(tmp_path) == []
        context.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_loop_with_listen(git_remote: GitRemote, tmp_path: Path, *extra: str) -> Iterator[str]:
    """A real `gitdeploy run --listen 127.0.0.1:PORT`; its base URL once it answers /healthz."""
    env = {**os.environ, "GITDEPLOY_STATE_DIR": str(tmp_path / "state"), "NO_COLOR": "1"}
    env.pop("KUBECONFIG", None)
    port = free_port()
    loop = subprocess.Popen(
        [gitdeploy_executable(), "run", "--repo", git_remote.url, "--interval", "1h", "--no-leader-elect",
         "--listen", f"127.0.0.1:{port}", *extra],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/"

    def answers() -> bool:
        assert loop.poll() is None, loop.stderr.read() if loop.stderr else ""
        try:
            return httpx.get(url + "healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        eventually(answers, "gitdeploy run answering on its --listen port")
        yield url
    finally:
        loop.send_signal(signal.SIGTERM)
        _, stderr = loop.communicate(timeout=30)
    assert loop.returncode == 0, stderr


def test_gitdeploy_run_listen_serves_the_dashboard_beside_metrics_and_probes(
    git_remote: GitRemote, run_cli: RunCli, browser: Browser, token_file: Path, cluster: None, tmp_path: Path
) -> None:
    # Given shop/web deployed, and `gitdeploy run --listen` with a dashboard token
    two_revisions(git_remote, run_cli)
    with running_loop_with_listen(git_remote, tmp_path, "--dashboard-token-file", str(token_file)) as url:
        # Then / is the apps page, listing the app as `status` does
        page = browser.new_page()
        response = page.goto(url)
        assert response is not None and response.status == 200
        expect(page.locator('tr[data-app="shop/web"] [data-col="revision"]')).to_have_text(
            "2 Complete", timeout=BOUND
        )
        assert "1 of 1 apps" in page.locator("#counts").inner_text()
        assert page.locator(".badge").inner_text() == "actions on"
        # and the probes, the metrics and the webhook path answer as before, on the same port
        assert httpx.get(url + "healthz", timeout=10).text == "ok\n"
        eventually(lambda: httpx.get(url + "readyz", timeout=10).status_code == 200, "ready")
        metrics = httpx.get(url + "metrics", timeout=10)
        assert metrics.status_code == 200 and "gitdeploy_build_info" in metrics.text
        assert httpx.get(url + "hooks/git", timeout=10).status_code == 405
        assert httpx.post(url + "hooks/git", content=b"{}", timeout=10).status_code == 404
        # and an action (or any POST of the dashboard's) without a session is refused there too
        assert httpx.post(url + ROLLBACK, data={"revision": "1"}, timeout=10).status_code == 401
        assert httpx.post(url + "logout", timeout=10).status_code == 401
        assert httpx.post(url, timeout=10).status_code == 401
    assert revisions(run_cli) == [1, 2]
