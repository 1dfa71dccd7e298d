"""The dashboard's ASGI app (Starlette, Jinja2 templates, htmx): read-only pages of what
``gitdeploy status`` and ``history`` compute, with live updates over server-sent events.

* ``GET /``: the apps page; ``?namespace=&sync=&health=&page=`` filter and page it without JS.
* ``GET /apps/{namespace}/{name}``: the app page; ``?from=N&to=M`` compares two revisions' templates.
* ``GET /live/apps?...`` and ``GET /live/apps/{namespace}/{name}``: ``text/event-stream`` of the
  pages' live parts, sent again each time what they show changes (htmx's SSE extension swaps them in).
* ``GET /login``, ``POST /login``, ``POST /logout``, ``GET /apps/{namespace}/{name}/confirm/{action}``
  and ``POST /apps/{namespace}/{name}/actions/{action}``: the actions, with a token file only
  (:mod:`gitdeploy.web.actions`); without one every POST answers 403.
* ``/static/...``: the stylesheet, htmx and its SSE extension (vendored, no CDN).

Every answer carries a Content-Security-Policy without 'unsafe-inline': no inline script or style.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import escape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.core.models import AppKey
from gitdeploy.core.sync.syncstate import Health, Sync
from gitdeploy.core.weblinks import CommitLinks
from gitdeploy.errors import GitdeployError, NotFoundError
from gitdeploy.web.actions import Actions, SessionGuard
from gitdeploy.web.appsource import AppsSource, ListedApps
from gitdeploy.web.auth import SessionKeys
from gitdeploy.web.detail import Comparison, read_app_detail
from gitdeploy.web.selection import AppFilter, select_apps
from gitdeploy.web.snapshot import AppSnapshot

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
STATIC_DIR: Final = Path(__file__).parent / "static"
WAITING_SECONDS: Final = 0.1
"""How often a live stream of the apps page looks again while the first listing is under way."""


@dataclass(frozen=True)
class DashboardSettings:
    refresh_seconds: float = 1.0
    """How often the live streams look at the cluster (and how old the apps list may get)."""
    cluster_description: str = ""
    token: bytes | None = None
    """The token that logs in to act (``--dashboard-token-file``); None: read-only."""
    commit_links: CommitLinks | None = None
    """How commits link to the repo's web site (``--repo-web-url``, or derived from ``--repo``)."""
    namespaces: tuple[str, ...] = ()
    """``-n``: list the apps of these namespaces only (a namespaced Role may list no more);
    empty: every namespace."""


class _SecurityHeaders:
    """Adds the Content-Security-Policy and friends to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *message.get("headers", []),
                    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"),
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("gitdeploy.web", "templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def sse_message(event: str, html: str) -> str:
    """One server-sent event carrying ``html`` (one ``data:`` line per line of it).

    >>> sse_message("apps", "<p>\\n</p>")
    'event: apps\\ndata: <p>\\ndata: </p>\\n\\n'
    """
    return f"event: {event}\n" + "".join(f"data: {line}\n" for line in html.split("\n")) + "\n"


class _Dashboard:
    """The pages and live streams of one cluster's dashboard."""

    def __init__(
        self, cluster: Cluster, settings: DashboardSettings, stopping: threading.Event, apps: AppsSource
    ) -> None:
        self.cluster = cluster
        self.settings = settings
        self.stopping = stopping
        self.env = _environment()
        self.snapshot = AppSnapshot(apps, settings.refresh_seconds)
        self.snapshot.prime()
        keys = SessionKeys(settings.token) if settings.token is not None else None
        self.common = {
            "cluster": settings.cluster_description,
            "syncs": list(Sync),
            "healths": list(Health),
            "actions_on": keys is not None,
        }
        self.actions = Actions(cluster, keys, self.env, self.common)

    def render_apps(self, wanted: AppFilter, template: str) -> str:
        """The apps page (or its live part); before the first listing is done, one that says so."""
        views = self.snapshot.views()
        page = select_apps(views, wanted) if views is not None else None
        return self.env.get_template(template).render(**self.common, page=page, wanted=wanted)

    def render_app(
        self,
        key: AppKey,
        comparison: Comparison | None,
        template: str,
        extra: dict[str, object] | None = None,
    ) -> str:
        detail = read_app_detail(self.cluster, key, time.time(), comparison, self.settings.commit_links)
        return self.env.get_template(template).render(
            **self.common, **(extra or {}), detail=detail, key=key, comparison=comparison
        )

    async def page(self, render: Callable[[], str]) -> Response:
        """A whole page; a missing app is a 404 page, a cluster that cannot be read a 503 one."""
        try:
            return HTMLResponse(await run_in_threadpool(render))
        except GitdeployError as problem:
            missing = isinstance(problem, NotFoundError)
            title = "Not found" if missing else "Cannot read the cluster"
            html = self.env.get_template("problem.html").render(**self.common, problem=problem, title=title)
            status = 404 if missing else 503
            return HTMLResponse(html, status_code=status)

    async def apps_page(self, request: Request) -> Response:
        wanted = AppFilter.from_query(request.query_params)
        return await self.page(lambda: self.render_apps(wanted, "apps.html"))

    async def app_page(self, request: Request) -> Response:
        key = AppKey(request.path_params["namespace"], request.path_params["name"])
        comparison = Comparison.from_query(request.query_params)
        extra = self.actions.page_context(request)
        return await self.page(lambda: self.render_app(key, comparison, "app.html", extra))

    async def apps_live(self, request: Request) -> Response:
        wanted = AppFilter.from_query(request.query_params)
        listing = self.snapshot.listing
        return self.stream("apps", lambda: self.render_apps(wanted, "apps_live.html"), listing)

    async def app_live(self, request: Request) -> Response:
        key = AppKey(request.path_params["namespace"], request.path_params["name"])
        comparison = Comparison.from_query(request.query_params)
        return self.stream("app", lambda: self.render_app(key, comparison, "app_live.html"))

    def stream(
        self, event: str, render: Callable[[], str], waiting: Callable[[], bool] = lambda: False
    ) -> Response:
        """``event`` with what ``render`` shows, sent again each time it changes, until stopped;
        looked at every :data:`WAITING_SECONDS` while ``waiting()`` (the first listing is under
        way: the table is sent as soon as it lands), else every refresh interval."""

        async def changes() -> AsyncIterator[str]:
            shown = None
            while not self.stopping.is_set():
                try:
                    html = await run_in_threadpool(render)
                except GitdeployError as problem:
                    html = f"<p class=problem>{escape(problem.message)}</p>"
                if html != shown:
                    yield sse_message(event, html)
                    shown = html
                await asyncio.sleep(WAITING_SECONDS if waiting() else self.settings.refresh_seconds)

        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(changes(), media_type="text/event-stream", headers=headers)


def create_app(
    cluster: Cluster,
    settings: DashboardSettings,
    stopping: threading.Event | None = None,
    apps: AppsSource | None = None,
) -> ASGIApp:
    """The dashboard of ``cluster``; its live streams end once ``stopping`` is set. The apps page
    shows ``apps`` (default: listed from the cluster, in ``settings.namespaces``)."""
    source = apps if apps is not None else ListedApps(cluster, settings.namespaces)
    dashboard = _Dashboard(cluster, settings, stopping or threading.Event(), source)
    app = Starlette(
        routes=[
            Route("/", dashboard.apps_page),
            Route("/apps/{namespace}/{name}", dashboard.app_page),
            Route("/live/apps", dashboard.apps_live),
            Route("/live/apps/{namespace}/{name}", dashboard.app_live),
            Route("/login", dashboard.actions.login_page),
            Route("/login", dashboard.actions.login, methods=["POST"]),
            Route("/logout", dashboard.actions.logout, methods=["POST"]),
            Route("/apps/{namespace}/{name}/confirm/{action}", dashboard.actions.confirm_page),
            Route("/apps/{namespace}/{name}/actions/{action}", dashboard.actions.act, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        ]
    )
    return _SecurityHeaders(SessionGuard(app, dashboard.actions))
