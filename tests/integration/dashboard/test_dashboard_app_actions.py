"""The dashboard's other actions in a real browser (Debian's Chromium under Playwright), against the
embedded cluster with real rollouts: retry, cancel, enable triggers, and promote and abort of a
canary. Each is refused without a session (401) and without the session's CSRF token (403), is
confirmed on its own page, does what the CLI does, and is recorded as an event naming who. And the
app page's hook logs and commit links."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.fixtures.argorollouts import canary_rollout
from tests.fixtures.cli import RunCli
from tests.fixtures.dashboard import DASHBOARD_TOKEN, running_dashboard
from tests.fixtures.drift import state_apis
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import (
    SETTINGS,
    running_loop,
    sync_and_wait,
    wait_for,
    web,
    web_history,
    web_status,
)

BOUND = 60_000  # ms: a bound for a hung test, not a speed check
REPO_WEB = "https://git.example.com/org/config"


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def worker(image: str) -> str:
    """shop/web as a DeploymentConfig whose pre hook runs in a pod of the app's image."""
    return f"""\
apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata:
  name: web
  annotations: {{"gitdeploy.io/auto-rollback": "false"}}
spec:
  replicas: 2
  selector: {{app: web}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: web, image: "{image}"}}]
  strategy:
    type: Recreate
    recreateParams:
      pre: {{failurePolicy: Abort, execNewPod: {{containerName: web, command: [/bin/migrate, --up]}}}}
  triggers: [{{type: ConfigChange}}]
"""


def requested(tmp_path: Path) -> list[tuple[str, str]]:
    """``(reason, message)`` of the dashboard's events in shop, oldest first."""
    with state_apis(tmp_path) as (_, core):
        found: Any = core.list_namespaced_event("shop")
    events = sorted(found.items, key=lambda e: int(e.metadata.resource_version))
    return [(str(e.reason), str(e.message)) for e in events if str(e.reason).endswith("Requested")]


def outcomes(run_cli: RunCli) -> list[tuple[int, str]]:
    return [(e["revision"], e["outcome"]) for e in web_history(run_cli)]


@contextmanager
def logged_in(browser: Browser, dashboard: str, name: str) -> Iterator[Page]:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{dashboard}apps/shop/web")
    page.locator("#login").click()
    page.get_by_label("Your name").fill(name)
    page.get_by_label("Token").fill(DASHBOARD_TOKEN)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/apps/shop/web")
    try:
        yield page
    finally:
        context.close()


def forged_posts_are_refused(dashboard: str, page: Page, action: str) -> None:
    """A POST of ``action`` without a session (401), and with the page's session but without or
    with a wrong CSRF token (403), or from another site (403): none acts."""
    path = f"apps/shop/web/actions/{action}"
    assert httpx.post(dashboard + path, data={}, timeout=10).status_code == 401
    [cookie] = page.context.cookies()
    csrf = page.locator('#actions input[name="csrf"]').get_attribute("value") or ""
    with httpx.Client(base_url=dashboard, cookies={cookie["name"]: cookie["value"]}, timeout=10) as forger:
        answers = [
            forger.post(path, data={}),
            forger.post(path, data={"csrf": csrf[:-2] + "xx"}),
            forger.post(path, data={"csrf": csrf}, headers={"Origin": "https://evil.example"}),
        ]
    assert [a.status_code for a in answers] == [403, 403, 403]


def act(page: Page, button: str) -> str:
    """Click ``button``'s link on the app page, check the confirm page changes nothing by itself,
    say yes; the done page's text."""
    page.get_by_role("link", name=f"{button}…").click()
    expect(page.locator("h1")).to_have_text(f"{button}?")
    page.get_by_role("button", name=f"Yes, {button.lower()}").click()
    done = page.locator("#done")
    expect(done).to_be_visible()
    return done.inner_text()


def test_retry_from_the_dashboard_and_the_hook_logs_and_commit_links_it_shows(
    git_remote: GitRemote, run_cli: RunCli, browser: Browser, token_file: Path, cluster: None, tmp_path: Path
) -> None:
    # Given revision 1 Complete and revision 2 Failed in its pre hook (its image cannot be pulled)
    git_remote.commit_and_push(
        "Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": worker("nginx:1.25")}
    )
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push("typo", {"apps/web.yaml": worker("nginx:missing")})
    run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert outcomes(run_cli) == [(1, "Complete"), (2, "Failed")]
    shas = {e["revision"]: e["commit"]["sha"] for e in web_history(run_cli)}
    extra = ("--dashboard-token-file", str(token_file), "--repo-web-url", REPO_WEB)
    with running_dashboard(tmp_path / "state", *extra) as dashboard:
        page = browser.new_page()
        page.goto(f"{dashboard}apps/shop/web")

        # Then the app page shows the end of each hook pod's log, newest revision first, as the
        # pod log API gives it (the simulated kubelet's lines): revision 2's failed run, revision
        # 1's run to completion
        logs = page.locator("#hook-logs section.hooklog")
        expect(logs).to_have_count(2, timeout=BOUND)
        failed, passed = logs.nth(0), logs.nth(1)
        expect(failed.locator("h3")).to_contain_text("Revision 2, pre hook")
        expect(failed.locator("pre.log")).to_contain_text("[lifecycle] pulling image nginx:missing")
        expect(failed.locator("pre.log")).to_contain_text("[lifecycle] error: process exited with code 1")
        expect(passed.locator("h3")).to_contain_text("Revision 1, pre hook")
        expect(passed.locator("pre.log")).to_contain_text("[lifecycle] started: /bin/migrate --up")
        expect(passed.locator("pre.log")).to_contain_text("[lifecycle] completed successfully")
        # and a log is reachable by keyboard (it scrolls when long)
        assert passed.locator("pre.log").get_attribute("tabindex") == "0"

        # and each commit links to its page on the repo's web site, safely
        links = page.locator("#history a.commit")
        expect(links).to_have_count(2)
        assert [links.nth(i).get_attribute("href") for i in (0, 1)] == [
            f"{REPO_WEB}/commit/{shas[2]}",
            f"{REPO_WEB}/commit/{shas[1]}",
        ]
        assert links.nth(0).get_attribute("rel") == "noopener noreferrer"
        assert page.locator("#commit-link").get_attribute("href") == f"{REPO_WEB}/commit/{shas[2]}"

        # When a hook pod is deleted, the page says it is gone (and shows the tail its revision kept)
        with state_apis(tmp_path) as (_, core):
            pre_pod = failed.get_attribute("data-pod")
            assert pre_pod
            core.delete_namespaced_pod(pre_pod, "shop", grace_period_seconds=0)
        expect(page.locator(f'section[data-pod="{pre_pod}"] .note')).to_contain_text(
            f"pod {pre_pod} is gone", timeout=BOUND
        )

        # When alice logs in, retry is refused to forged posts, and done once she confirms it
        with logged_in(browser, dashboard, "alice") as alice:
            forged_posts_are_refused(dashboard, alice, "retry")
            assert outcomes(run_cli) == [(1, "Complete"), (2, "Failed")] and requested(tmp_path) == []
            done = act(alice, "Retry")
        assert "revision 2 runs again (retried by alice via dashboard" in done, done

    # Then revision 2 runs again under its own number, and an event names her
    assert outcomes(run_cli) == [(1, "Complete"), (2, "Running")]
    [(reason, message)] = requested(tmp_path)
    assert reason == "RetryRequested" and message.startswith("retry by alice via dashboard: "), message


def test_cancel_from_the_dashboard_brings_the_previous_revision_back(
    git_remote: GitRemote, run_cli: RunCli, browser: Browser, token_file: Path, cluster: None, tmp_path: Path
) -> None:
    # Given revision 2 stuck (its image cannot be pulled)
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push("typo", {"apps/web.yaml": web("nginx:missing")})
    started = run_cli("sync", "--repo", git_remote.url)
    assert "revision 2 started" in started.stdout, started.stderr
    extra = ("--dashboard-token-file", str(token_file))
    with (
        running_dashboard(tmp_path / "state", *extra) as dashboard,
        logged_in(browser, dashboard, "bob") as bob,
    ):
        forged_posts_are_refused(dashboard, bob, "cancel")
        assert outcomes(run_cli) == [(1, "Complete"), (2, "Running")] and requested(tmp_path) == []
        # When bob cancels it and confirms
        act(bob, "Cancel rollout")

    # Then the next pass stops it and brings revision 1's template back, as `deploy --cancel` does
    sync_and_wait(run_cli, git_remote)
    assert outcomes(run_cli) == [(1, "Complete"), (2, "Cancelled"), (3, "Complete")]
    assert web_history(run_cli)[-1]["images"] == [{"container": "web", "image": "nginx:1.25"}]
    [(reason, message)] = requested(tmp_path)
    assert reason == "CancelRequested" and message.startswith("cancel by bob via dashboard: "), message


def test_enable_triggers_from_the_dashboard_releases_a_rollback_pin(
    git_remote: GitRemote, run_cli: RunCli, browser: Browser, token_file: Path, cluster: None, tmp_path: Path
) -> None:
    # Given shop/web rolled back (pinned to revision 1's template, its triggers suspended)
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push("web 1.26", {"apps/web.yaml": web("nginx:1.26")})
    sync_and_wait(run_cli, git_remote)
    assert run_cli("rollback", "shop/web", "-m", "1.26 is slow").returncode == 0
    sync_and_wait(run_cli, git_remote)
    assert web_status(run_cli)["sync"] == "Pinned"
    extra = ("--dashboard-token-file", str(token_file))
    with (
        running_dashboard(tmp_path / "state", *extra) as dashboard,
        logged_in(browser, dashboard, "carol") as carol,
    ):
        forged_posts_are_refused(dashboard, carol, "enable-triggers")
        assert web_status(run_cli)["sync"] == "Pinned" and requested(tmp_path) == []
        # When carol enables the triggers and confirms
        act(carol, "Enable triggers")

    # Then the pin is released and the next pass deploys git's manifest again
    sync_and_wait(run_cli, git_remote)
    assert web_status(run_cli)["sync"] == "Synced"
    assert web_history(run_cli)[-1]["images"] == [{"container": "web", "image": "nginx:1.26"}]
    [(reason, message)] = requested(tmp_path)
    assert reason == "TriggersEnableRequested", reason
    assert message.startswith("enable-triggers by carol via dashboard: "), message


CANARY_STEPS = """\
      - setWeight: 50
      - pause: {}
"""


def canary(image: str) -> str:
    return canary_rollout(image, replicas=2, steps=CANARY_STEPS).replace("  namespace: shop\n", "")


def paused(run_cli: RunCli, revision: int) -> bool:
    view = web_status(run_cli)
    return view["health"] == "Suspended" and str(view["message"]).startswith(f"revision {revision}: step 2/2")


def test_promote_and_abort_a_canary_from_the_dashboard(
    git_remote: GitRemote, run_cli: RunCli, browser: Browser, token_file: Path, cluster: None, tmp_path: Path
) -> None:
    # Given shop/web a Rollout, and a running loop that walks 1.26's canary to its `pause: {}`
    git_remote.commit_and_push(
        "Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": canary("nginx:1.25")}
    )
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push("web 1.26", {"apps/web.yaml": canary("nginx:1.26")})
    extra = ("--dashboard-token-file", str(token_file))
    with running_loop(git_remote, tmp_path), running_dashboard(tmp_path / "state", *extra) as dashboard:
        wait_for(lambda: paused(run_cli, 2))
        assert paused(run_cli, 2)
        with logged_in(browser, dashboard, "dave") as dave:
            forged_posts_are_refused(dashboard, dave, "promote")
            assert paused(run_cli, 2) and requested(tmp_path) == []
            # When dave promotes it: the loop takes revision 2 to Complete
            done = act(dave, "Promote canary")
        assert "promoted past step 2" in done, done
        wait_for(lambda: outcomes(run_cli)[-1] == (2, "Complete"))
    assert outcomes(run_cli) == [(1, "Complete"), (2, "Complete")]

    # When 1.27's canary pauses in turn (a new loop reads git at its start) and he aborts it
    git_remote.commit_and_push("web 1.27", {"apps/web.yaml": canary("nginx:1.27")})
    with running_loop(git_remote, tmp_path), running_dashboard(tmp_path / "state", *extra) as dashboard:
        wait_for(lambda: paused(run_cli, 3))
        assert paused(run_cli, 3)
        with logged_in(browser, dashboard, "dave") as dave:
            forged_posts_are_refused(dashboard, dave, "abort")
            assert paused(run_cli, 3)
            act(dave, "Abort canary")
        # Then revision 3 is Failed (aborted) and the stable revision is back at full size
        wait_for(lambda: outcomes(run_cli)[-1] == (3, "Failed"))
    history = web_history(run_cli)
    assert [(e["revision"], e["outcome"]) for e in history] == [
        (1, "Complete"),
        (2, "Complete"),
        (3, "Failed"),
    ]
    assert history[-1]["reason"] == "RolloutAborted", history[-1]
    reasons = [(reason, re.sub(r": .*", "", message)) for reason, message in requested(tmp_path)]
    assert reasons == [
        ("PromoteRequested", "promote by dave via dashboard"),
        ("AbortRequested", "abort by dave via dashboard"),
    ]
