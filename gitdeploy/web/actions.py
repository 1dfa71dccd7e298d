"""The dashboard's actions (``--dashboard-token-file``): log in, confirm, act, log out.

Every POST needs a valid session cookie (else 401) and the session's CSRF token in its form
(else 403); a cross-site request is refused (403) from its ``Origin`` or ``Sec-Fetch-Site``
headers too. Without a token file, every POST answers 403 and nothing changes. An action is
confirmed on a page of its own (a GET that changes nothing) before the POST that carries it out,
and it runs :func:`gitdeploy.controller.actions.perform`, what the CLI commands run, which records
an Event naming who did it.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from jinja2 import Environment
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.actions import Action, perform
from gitdeploy.core.models import AppKey
from gitdeploy.errors import GitdeployError, NotFoundError
from gitdeploy.web.auth import COOKIE, NAME, SESSION_SECONDS, Session, SessionKeys

MAX_FORM_BYTES: Final = 16 * 1024
FAILED_LOGIN_DELAY_SECONDS: Final = 1.0
"""A wrong token is answered after this long, so guessing is slow (the token is long anyway)."""


@dataclass(frozen=True)
class ActionText:
    button: str
    confirm: str


TEXTS: Final = {
    Action.ROLLBACK: ActionText(
        "Roll back", "Roll {app} back to revision {revision}'s template and images, and pin it there "
        "(its image triggers are suspended) until its manifest in git changes or "
        "`gitdeploy deploy {app} --latest`."),
    Action.RETRY: ActionText("Retry", "Run {app}'s last revision again under its own number, if it Failed."),
    Action.CANCEL: ActionText(
        "Cancel rollout", "Stop {app}'s rollout in progress and bring the previous revision back."),
    Action.ENABLE_TRIGGERS: ActionText(
        "Enable triggers", "Resume {app}'s image triggers (this releases a rollback pin: git's manifest "
        "with the newest images deploys)."),
    Action.PROMOTE: ActionText(
        "Promote canary", "End the current step of {app}'s canary and go on to the next."),
    Action.ABORT: ActionText(
        "Abort canary", "Abort {app}'s canary: the stable revision back to full size, the canary to 0, "
        "and the revision marked Failed."),
}  # fmt: skip


def _plain(message: str) -> Response:
    return Response(message + "\n", media_type="text/plain; charset=utf-8")


def refuse(status: int, message: str) -> Response:
    answer = _plain(message)
    answer.status_code = status
    return answer


def cross_site(headers: Mapping[str, str]) -> bool:
    """Whether the browser says the request comes from another site (no header: not a browser).

    >>> cross_site({"host": "a:1", "origin": "http://a:1"}), cross_site({"host": "a:1", "origin": "http://b"})
    (False, True)
    >>> cross_site({"sec-fetch-site": "cross-site"}), cross_site({})
    (True, False)
    """
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return True
    origin = headers.get("origin")
    if origin is None:
        return False
    return origin == "null" or urllib.parse.urlsplit(origin).netloc != headers.get("host", "")


def safe_next(target: str) -> str:
    """Where to go after the login: a path of this site only.

    >>> safe_next("/apps/shop/web"), safe_next("//evil.example/"), safe_next("https://evil.example/")
    ('/apps/shop/web', '/', '/')
    """
    return target if target.startswith("/") and not target.startswith(("//", "/\\")) else "/"


async def read_form(request: Request) -> dict[str, str] | None:
    """The urlencoded form of a POST (the first value of each field); None when too large."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    fields = urllib.parse.parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0] for name, values in fields.items()}


class Actions:
    """The login, confirm and action routes; ``keys`` None: actions are off (read-only)."""

    def __init__(
        self, cluster: Cluster, keys: SessionKeys | None, env: Environment, common: dict[str, Any]
    ) -> None:
        self.cluster = cluster
        self.keys = keys
        self.env = env
        self.common = common

    def session(self, request: Request) -> Session | None:
        if self.keys is None:
            return None
        return self.keys.read(request.cookies.get(COOKIE), now=time.time())

    def page_context(self, request: Request) -> dict[str, Any]:
        """What the templates need to offer the actions (nothing when they are off)."""
        if self.keys is None:
            return {"actions": None}
        return {"actions": {"session": self.session(request), "texts": TEXTS}}

    def render(self, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        html = self.env.get_template(template).render(**self.common, **values)
        return HTMLResponse(html, status_code=status)

    async def checked(self, request: Request) -> tuple[Session, dict[str, str]] | Response:
        """The session and form of a POST that may act, or the refusal to answer."""
        if self.keys is None:
            return refuse(403, "the dashboard is read-only: start it with --dashboard-token-file to act")
        if cross_site(request.headers):
            return refuse(403, "refused: a cross-site request")
        session = self.session(request)
        if session is None:
            return refuse(401, "log in first (the session is missing or expired)")
        form = await read_form(request)
        if form is None:
            return refuse(413, "form too large")
        if not self.keys.csrf_matches(session, form.get("csrf", "")):
            return refuse(403, "refused: the form's CSRF token is missing or wrong; reload the page")
        return session, form

    # -- login and logout ---------------------------------------------------------------------------

    async def login_page(self, request: Request) -> Response:
        if self.keys is None:
            return self.render("problem.html", 404, title="Read-only", problem=_ReadOnly())
        return self.render("login.html", next=safe_next(request.query_params.get("next", "/")), error="")

    async def login(self, request: Request) -> Response:
        if self.keys is None:
            return refuse(403, "the dashboard is read-only: start it with --dashboard-token-file to act")
        if cross_site(request.headers):
            return refuse(403, "refused: a cross-site request")
        form = await read_form(request) or {}
        name, target = form.get("name", "").strip(), safe_next(form.get("next", "/"))
        if not NAME.match(name):
            error = "Give your name (letters, digits, . _ @ - and spaces, up to 63): the events record it."
            return self.render("login.html", 400, next=target, error=error, name="")
        if not self.keys.token_matches(form.get("token", "")):
            await asyncio.sleep(FAILED_LOGIN_DELAY_SECONDS)
            return self.render("login.html", 401, next=target, error="Wrong token.", name=name)
        answer = RedirectResponse(target, status_code=303)
        answer.set_cookie(
            COOKIE, self.keys.issue(name, now=time.time()), max_age=SESSION_SECONDS, path="/",
            httponly=True, samesite="strict", secure=request.url.scheme == "https",
        )  # fmt: skip
        return answer

    async def logout(self, request: Request) -> Response:
        checked = await self.checked(request)
        if isinstance(checked, Response):
            return checked
        answer = RedirectResponse("/", status_code=303)
        answer.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return answer

    # -- confirm and act ----------------------------------------------------------------------------

    async def confirm_page(self, request: Request) -> Response:
        key, action = _target(request)
        if action is None:
            return refuse(404, "no such action")
        session = self.session(request)
        if session is None:
            path = urllib.parse.quote(f"/apps/{key.namespace}/{key.name}")
            return RedirectResponse(f"/login?next={path}", status_code=303)
        revision = request.query_params.get("revision", "")
        if action is Action.ROLLBACK and not revision.isdigit():
            return refuse(400, "say which revision to roll back to (?revision=N)")
        text = TEXTS[action]
        return self.render(
            "confirm.html", key=key, action=action, text=text, session=session,
            description=text.confirm.format(app=key, revision=revision), revision=revision,
        )  # fmt: skip

    async def act(self, request: Request) -> Response:
        checked = await self.checked(request)
        if isinstance(checked, Response):
            return checked
        session, form = checked
        key, action = _target(request)
        if action is None:
            return refuse(404, "no such action")
        revision_text = form.get("revision", "")
        if action is Action.ROLLBACK and not revision_text.isdigit():
            return refuse(400, "say which revision to roll back to")
        revision = int(revision_text) if revision_text.isdigit() else None
        message = " ".join(form.get("message", "").split())[:200]
        by = f"{session.name} via dashboard"
        run: Callable[[], str] = lambda: perform(  # noqa: E731
            self.cluster, key, action, by=by, now=time.time(), revision=revision, message=message
        )
        try:
            done = await run_in_threadpool(run)
        except GitdeployError as problem:
            status = 404 if isinstance(problem, NotFoundError) else 409
            return self.render(
                "problem.html", status, title=f"{TEXTS[action].button}: refused", problem=problem
            )
        return self.render("done.html", key=key, action=action, text=TEXTS[action], done=done, by=by)


class SessionGuard:
    """Before any route: a request that may change something (not GET or HEAD), the login's POST
    aside, needs a valid session (401 without; 403 when actions are off). The routes that act
    check the CSRF token too; a new POST route is thus never open by mistake."""

    def __init__(self, app: ASGIApp, actions: Actions) -> None:
        self.app = app
        self.actions = actions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD") and scope["path"] != "/login":
            refusal = None
            if self.actions.keys is None:
                refusal = refuse(
                    403, "the dashboard is read-only: start it with --dashboard-token-file to act"
                )
            elif self.actions.session(Request(scope)) is None:
                refusal = refuse(401, "log in first (the session is missing or expired)")
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


class _ReadOnly:
    message = "This dashboard is read-only: no one can log in or act."
    hint = "Start it with --dashboard-token-file FILE to offer rollback, retry, cancel and the others."


def _target(request: Request) -> tuple[AppKey, Action | None]:
    key = AppKey(request.path_params["namespace"], request.path_params["name"])
    try:
        return key, Action(request.path_params["action"])
    except ValueError:
        return key, None
