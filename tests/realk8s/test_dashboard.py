"""The dashboard's actions on the real control plane: ``gitdeploy run --listen
--dashboard-token-file`` as deploy/'s ServiceAccount, and a rollback asked through the dashboard's
HTTP endpoints as a browser asks it (log in, the CSRF token of the page, the form's POST with the
page's Origin), carried out by that loop on the real API server and recorded as an Event there."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.gitdeploy_cli import ManagedNamespace, Run, at_revision, history, view, wait_for
from tests.realk8s.manifests import deployment, settings

pytestmark = pytest.mark.usefixtures("isolated_git_config")

TOKEN = "realk8s-dashboard-token-5e1f9a"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_rollback_through_the_dashboard_of_run_happens_on_the_real_api_server(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
    tmp_path: Path,
) -> None:
    # Given `gitdeploy run --listen` with a dashboard token, as the ServiceAccount, at revision 2
    namespace = managed_namespace("dash")
    git_remote.commit_and_push(
        "web 1",
        {"gitdeploy.yaml": settings(namespace), "apps/web.yaml": deployment("web", "registry.test/web:1", 2)},
    )
    token_file = tmp_path / "dashboard-token"
    token_file.write_text(TOKEN + "\n")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    loop = runs(
        "dash", "--repo", git_remote.url, "-n", namespace, "--interval", "1s", "--no-leader-elect",
        "--listen", f"127.0.0.1:{port}", "--dashboard-token-file", str(token_file),
    )  # fmt: skip
    wait_for("revision 1 deployed", at_revision(gitdeploy, namespace, 1))
    git_remote.commit_and_push("web 2", {"apps/web.yaml": deployment("web", "registry.test/web:2", 2)})
    wait_for("revision 2 deployed", at_revision(gitdeploy, namespace, 2))
    app = f"/apps/{namespace}/web"
    # and its apps page lists the app (listed in run's namespaces only, as its Role allows)
    wait_for("the apps page", lambda: f'data-app="{namespace}/web"' in httpx.get(base + "/", timeout=30).text)

    with httpx.Client(base_url=base, timeout=30, headers={"Origin": base}) as browser:
        # Then without a session the rollback is refused, and nothing changes
        assert browser.post(f"{app}/actions/rollback", data={"revision": "1"}).status_code == 401
        # When alice logs in with the token, as the login form posts it
        login = browser.post("/login", data={"name": "alice", "token": TOKEN, "next": app})
        assert login.status_code == 303 and login.headers["location"] == app, login.text
        page = browser.get(app)
        assert page.status_code == 200 and "Logged in as alice" in page.text
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert found, page.text
        # then her session without the page's CSRF token is refused
        assert browser.post(f"{app}/actions/rollback", data={"revision": "1"}).status_code == 403
        # and the confirm page, then its form with the CSRF token, rolls back to revision 1
        confirm = browser.get(f"{app}/confirm/rollback", params={"revision": "1"})
        assert confirm.status_code == 200 and "Roll back to revision 1?" in confirm.text
        form = {"revision": "1", "csrf": found.group(1), "message": "web 2 is slow"}
        done = browser.post(f"{app}/actions/rollback", data=form)
        assert done.status_code == 200, done.text
        assert "revision 3 will run revision 1&#39;s template" in done.text, done.text

    # Then the loop, as the ServiceAccount, carries it out on the real API server
    def rolled_back() -> bool:
        found = view(gitdeploy, namespace) or {}
        return (found.get("revision"), found.get("sync"), found.get("health")) == (3, "Pinned", "Healthy")

    try:
        wait_for("revision 3 deployed", rolled_back)
    except AssertionError as late:
        raise AssertionError(f"{late}; the loop's log:\n{loop.log[-3000:]}") from None
    newest = history(gitdeploy, f"{namespace}/web")[-1]
    assert newest["returnsTo"] == 1 and newest["images"] == [
        {"container": "web", "image": "registry.test/web:1"}
    ]
    # and the API server holds the event naming her
    events: Any = control_plane.get_json("events", "-n", namespace)
    asked = [e["message"] for e in events["items"] if e["reason"] == "RollbackRequested"]
    assert len(asked) == 1 and asked[0].startswith(
        "rollback by alice via dashboard: rolled back: revision 3"
    ), asked
    assert "forbidden" not in loop.log.lower() and "cannot list" not in loop.log, loop.log
