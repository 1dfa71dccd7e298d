"""The dashboard on the real control plane, as deploy/'s ServiceAccount (its namespaced Role):

* ``gitdeploy run --listen --dashboard-token-file``: a rollback asked through the dashboard's HTTP
  endpoints as a browser asks it (log in, the CSRF token of the page, the form's POST with the
  page's Origin), carried out by that loop on the real API server and recorded as an Event there;
  and the app page of an app with a pre hook shows the hook pod's log as kube-apiserver serves it
  (from the node's kubelet endpoint, which kwok plays: :func:`~tests.realk8s.kwok_logs.chatty_log`,
  colour codes and all), as text.
* ``gitdeploy dashboard -n NS`` with a kubeconfig of its own (another token of the same account):
  its watches list the apps once, and its live stream shows the new rollout ``run`` makes without a
  reload; the API server's audit log shows it listed them once, not at each refresh.
"""

from __future__ import annotations

import base64
import html
import json
import re
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from gitdeploy.core.observed import APP_LABEL, POD_ROLE_LABEL
from tests.fixtures.cli import RunCli
from tests.fixtures.dashboard import running_dashboard
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import (
    ControlPlane,
    audit_events,
    audit_log_size,
    service_account_kubeconfig,
)
from tests.realk8s.gitdeploy_cli import ManagedNamespace, Run, history, view, wait_for
from tests.realk8s.kwok_logs import chatty_log
from tests.realk8s.kwok_stages import RUN_FOR_VAR
from tests.realk8s.manifests import deployment, deployment_config, settings

pytestmark = pytest.mark.usefixtures("isolated_git_config")

TOKEN = "realk8s-dashboard-token-5e1f9a"
LOG_LINES = 50
"""The app page shows the last 50 lines of a hook's log (docs/guides/dashboard.md)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def worker_with_a_pre_hook() -> str:
    """A DeploymentConfig of no replicas whose Recreate strategy runs a pre hook that ends soon; kwok
    serves chatty_log() as the log of the hook pod's container (``lifecycle``)."""
    hook = {
        "failurePolicy": "Abort",
        "execNewPod": {"containerName": "worker", "command": ["/bin/migrate"],
                       "env": [{"name": RUN_FOR_VAR, "value": "100ms"}]},
    }  # fmt: skip
    strategy = {"type": "Recreate", "recreateParams": {"timeoutSeconds": 60, "pre": hook}}
    return deployment_config("worker", "registry.test/worker:1", 0, strategy)


def credential_id(kubeconfig: Path) -> str:
    """The audit log's ``credential-id`` of the token in ``kubeconfig`` (its JWT's ``jti``)."""
    token = json.loads(kubeconfig.read_text())["users"][0]["user"]["token"]
    payload = token.split(".")[1]
    return "JTI=" + str(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["jti"])


def sse_events(stream: httpx.Response) -> Iterator[tuple[str, str]]:
    """(event, data) of each server-sent event of ``stream``, as they come."""
    event, data = "", []
    for line in stream.iter_lines():
        if line.startswith("event: "):
            event = line.removeprefix("event: ")
        elif line.startswith("data: "):
            data.append(line.removeprefix("data: "))
        elif not line and event:
            yield event, "\n".join(data)
            event, data = "", []


def shown(table: str, app: str) -> tuple[str, ...]:
    """(revision, sync, health) as the apps table shows ``app`` (``NS/NAME``); () if not listed."""
    row = re.search(rf'<tr data-app="{re.escape(app)}">(.*?)</tr>', table, re.DOTALL)
    if not row:
        return ()
    cells = dict(re.findall(r'data-col="(revision|sync|health)">(\w+)', row.group(1)))
    return cells.get("revision", ""), cells.get("sync", ""), cells.get("health", "")


def shown_next(tables: Iterator[str], what: str, check: Callable[[str], bool]) -> str:
    """The next apps table of a live stream that ``check`` accepts; fail naming ``what``."""
    last = ""
    try:
        for last in tables:
            if check(last):
                return last
    except httpx.ReadTimeout:
        pass
    raise AssertionError(f"the live stream never showed {what}; its last table:\n{last}")


@pytest.fixture
def dashboards(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """``dashboards(*ARGS)``: ``gitdeploy dashboard ARGS`` in the background (tests/fixtures'
    :func:`running_dashboard`), its base URL; stopped (and its exit checked) at the end."""
    with ExitStack() as stack:
        yield lambda *args: stack.enter_context(running_dashboard(tmp_path / "state-dashboard", *args))


def assert_the_hook_log_is_shown(control_plane: ControlPlane, base: str, namespace: str) -> None:
    """The app page of worker (at ``base``) shows its pre hook pod's log, as text."""
    pods: Any = control_plane.get_json(
        "pods", "-n", namespace, "-l", f"{POD_ROLE_LABEL}=hook-pre,{APP_LABEL}=worker"
    )
    [pod] = [p["metadata"]["name"] for p in pods["items"]]
    page = httpx.get(f"{base}/apps/{namespace}/worker", timeout=30)
    assert page.status_code == 200, page.text
    sections = re.findall(r'<section class="hooklog" data-pod="([^"]+)".*?</section>', page.text, re.DOTALL)
    assert sections == [pod], page.text
    section = re.search(r'<section class="hooklog".*?</section>', page.text, re.DOTALL)
    assert section, page.text
    assert f"Revision 1, pre hook <code>{pod}</code>" in section.group(0), section.group(0)
    assert 'class="note"' not in section.group(0), section.group(0)  # read live: no note
    shown = re.search(r'<pre class="log" tabindex="0">(.*?)</pre>', section.group(0), re.DOTALL)
    assert shown, section.group(0)
    # the last 50 lines kwok serves, their colour codes gone (as a person reads them)
    last_lines = "".join(chatty_log(coloured=False).splitlines(keepends=True)[-LOG_LINES:])
    assert html.unescape(shown.group(1)) == last_lines, shown.group(1)[:500]


def test_the_dashboards_follow_rollouts_show_hook_logs_and_roll_back_on_the_real_api_server(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
    dashboards: Callable[..., str],
    tmp_path: Path,
) -> None:
    # Given `gitdeploy run --listen` with a dashboard token, as the ServiceAccount, at revision 1
    # of web, and of worker, whose pre hook ran
    namespace = managed_namespace("dash")
    git_remote.commit_and_push(
        "web 1",
        {"gitdeploy.yaml": settings(namespace), "apps/web.yaml": deployment("web", "registry.test/web:1", 2),
         "apps/worker.yaml": worker_with_a_pre_hook()},
    )  # fmt: skip
    token_file = tmp_path / "dashboard-token"
    token_file.write_text(TOKEN + "\n")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    loop = runs(
        "dash", "--repo", git_remote.url, "-n", namespace, "--interval", "1s", "--no-leader-elect",
        "--listen", f"127.0.0.1:{port}", "--dashboard-token-file", str(token_file),
    )  # fmt: skip
    # and `gitdeploy dashboard -n NS` beside it, with a token of the same account of its own
    own = service_account_kubeconfig(control_plane, tmp_path / "dashboard-kubeconfig")
    since = audit_log_size(control_plane)
    standalone = dashboards("--kubeconfig", str(own), "-n", namespace).rstrip("/")

    web, worker = f"{namespace}/web", f"{namespace}/worker"
    # When web 2 is pushed while the standalone dashboard's apps page is open (its live stream)
    with httpx.stream("GET", standalone + "/live/apps", timeout=httpx.Timeout(10, read=90)) as live:
        tables = (data for event, data in sse_events(live) if event == "apps")
        # Then it lists both apps, as run deployed them (worker's hook may still run)
        complete = ("1", "Synced", "Healthy")
        shown_next(
            tables,
            "web at revision 1, and worker",
            lambda t: shown(t, web) == complete and shown(t, worker) != (),
        )
        opened = time.monotonic()
        web2 = git_remote.commit_and_push(
            "web 2", {"apps/web.yaml": deployment("web", "registry.test/web:2", 2)}
        )
        # and shows the new rollout without a reload, in the stream it had open
        newer = shown_next(
            tables,
            "web at revision 2, worker at 1",
            lambda t: shown(t, web) == ("2", "Synced", "Healthy") and shown(t, worker) == complete,
        )
        watched_for = time.monotonic() - opened
    row = re.search(rf'<tr data-app="{web}">.*?</tr>', newer, re.DOTALL)
    assert row and web2[:7] in row.group(0), newer
    # having listed the apps once (the watches' lists), not at each refresh of the stream
    dashboard = credential_id(own)
    mine: list[Any] = [e for e in audit_events(control_plane, since) if dashboard in str(e["user"])]
    lists = Counter(
        e["objectRef"]["resource"] for e in mine if e["verb"] == "list" and e["stage"] == "ResponseComplete"
    )
    watches = {e["objectRef"]["resource"] for e in mine if e["verb"] == "watch"}
    assert lists == {"replicasets": 1, "configmaps": 1} and watches == {"replicasets", "configmaps"}, (
        f"{lists} {watches} in {watched_for:.1f} s of live updates"
    )
    assert all(e["objectRef"].get("namespace") == namespace for e in mine if e["verb"] in ("list", "watch"))
    print(f"\nthe standalone dashboard's stream: {watched_for:.1f} s, {dict(lists)} lists")

    # The app page of worker shows its hook's log, on run's dashboard and on the standalone one
    assert_the_hook_log_is_shown(control_plane, base, namespace)
    assert_the_hook_log_is_shown(control_plane, standalone, namespace)

    app = f"/apps/{namespace}/web"
    # and run's apps page lists the app (listed in run's namespaces only, as its Role allows)
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
        found = view(gitdeploy, namespace, "web") or {}
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
