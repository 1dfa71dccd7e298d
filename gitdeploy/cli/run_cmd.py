"""``gitdeploy run`` (the loop) and ``gitdeploy sync`` (one pass, optionally waiting for the result)."""

from __future__ import annotations

import json
import logging
import re
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from gitdeploy import __version__
from gitdeploy.cli.context import get_context
from gitdeploy.cli.image_options import image_options, image_settings
from gitdeploy.cli.output import print_json, print_table
from gitdeploy.cli.target import open_cluster
from gitdeploy.clock import SystemClock
from gitdeploy.controller.loop import AppReport, Controller
from gitdeploy.core.models import AppKey
from gitdeploy.core.syncstate import Health, Sync
from gitdeploy.errors import PermanentError
from gitdeploy.server.http import (
    HttpServer,
    Readiness,
    WebhookSettings,
    parse_listen_address,
    read_secret_file,
)
from gitdeploy.server.metrics import Metrics
from gitdeploy.source.repo import ConfigRepo

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class Duration(click.ParamType):  # type: ignore[type-arg]
    """``300ms``, ``5s``, ``2m``, ``1h`` or plain seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        match = _DURATION.match(str(value).strip())
        if not match:
            self.fail(f"{value!r} is not a duration: write 5s, 2m, 300ms or 1h", param, ctx)
        return float(match.group(1)) * _UNITS[match.group(2)]


def repo_options(command: Any) -> Any:
    """The options that name the config repo, shared by ``run`` and ``sync``."""
    for option in reversed(
        [
            click.option("--repo", required=True, help="Config repo: a URL or a local path."),
            click.option(
                "--branch", default="main", show_default=True, help="Branch, tag or commit to track."
            ),
            click.option(
                "--path", "subpath", default="", help="Only this directory of the repo (monorepos)."
            ),
            click.option(
                "--prune/--no-prune",
                default=None,
                help="Delete apps removed from git (default: the repo's `prune` setting).",
            ),
            click.option("--workers", default=4, show_default=True, help="Apps reconciled in parallel."),
            click.option(
                "-n",
                "--namespace",
                "namespaces",
                multiple=True,
                help="Only apps in this namespace (repeatable; default: every namespace).",
            ),
        ]
    ):
        command = option(command)
    return image_options(command)  # --image-interval, --registry-config, --insecure-registry


def _setup_logging(debug: bool, log_format: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(message)s", "%H:%M:%S"))
    root = logging.getLogger("gitdeploy")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    root.propagate = False


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        body = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in ("commit", "revision", "previous_commit"):
            if hasattr(record, key):
                body[key] = getattr(record, key)
        return json.dumps(body)


@contextmanager
def _controller(
    ctx: click.Context,
    repo: str,
    branch: str,
    subpath: str,
    prune: bool | None,
    workers: int,
    namespaces: tuple[str, ...] = (),
) -> Iterator[Controller]:
    cli = get_context(ctx)
    cluster = open_cluster(cli)
    with ConfigRepo(repo, ref=branch, subpath=subpath, state_dir=cli.state_dir) as source:
        yield Controller(
            source,
            cluster,
            SystemClock(),
            prune=prune,
            workers=workers,
            namespaces=frozenset(namespaces),
            images=image_settings(ctx),
        )


def _report_row(report: AppReport) -> list[str]:
    return [str(report.key), report.sync, report.health, str(report.revision or ""), report.message]


@click.command("run")
@repo_options
@click.option(
    "--interval", type=Duration(), default="5s", show_default=True, help="How often to poll the repo."
)
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--listen",
    default=None,
    metavar="[HOST]:PORT",
    help="Serve /healthz, /readyz, /metrics and /hooks/git here.",
)
@click.option(
    "--webhook-secret-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Accept signed GitHub/GitLab push webhooks on /hooks/git (needs --listen).",
)
@click.pass_context
def run(
    ctx: click.Context,
    repo: str,
    branch: str,
    subpath: str,
    prune: bool | None,
    workers: int,
    namespaces: tuple[str, ...],
    interval: float,
    log_format: str,
    listen: str | None,
    webhook_secret_file: str | None,
) -> None:
    """Keep the cluster at what the config repo says, until stopped (SIGTERM/Ctrl-C).

    \b
    Examples:
      gitdeploy run --repo https://github.com/acme/deploy --branch main
      gitdeploy run --repo ./config --interval 2s --prune
    """
    _setup_logging(get_context(ctx).debug, log_format)
    stop = threading.Event()

    def request_stop(signum: int, _frame: Any) -> None:
        logging.getLogger("gitdeploy").info(
            "received %s: finishing the step in progress", signal.Signals(signum).name
        )
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    wake = threading.Event()
    metrics = Metrics(version=__version__)
    readiness = Readiness()
    readiness.set_lease_decided()  # no leader election yet: this process always acts
    server = None
    if webhook_secret_file and not listen:
        raise PermanentError("--webhook-secret-file needs --listen", hint="add --listen :8080")
    if listen:
        host, port = parse_listen_address(listen)
        webhook = (
            WebhookSettings(secret=read_secret_file(webhook_secret_file), repo_url=repo, branch=branch)
            if webhook_secret_file
            else None
        )
        server = HttpServer(
            metrics=metrics,
            readiness=readiness,
            host=host,
            port=port,
            webhook=webhook,
            on_push=lambda _event: wake.set(),
        )
        server.start()
    try:
        with _controller(ctx, repo, branch, subpath, prune, workers, namespaces) as controller:
            _loop(controller, stop, wake, interval, metrics, readiness, f"{repo} ({branch})")
    finally:
        if server is not None:
            server.stop()


def _loop(
    controller: Controller,
    stop: threading.Event,
    wake: threading.Event,
    interval: float,
    metrics: Metrics,
    readiness: Readiness,
    source: str,
) -> None:
    """Poll at ``interval`` (at once on a webhook push), and run each pass when apps are due."""
    log = logging.getLogger("gitdeploy")
    where = controller.cluster.description
    log.info("gitdeploy run: %s on %s, polling every %.1f s", source, where, interval)
    next_poll = 0.0
    while not stop.is_set():
        now = time.monotonic()
        if now >= next_poll or wake.is_set():
            wake.clear()
            controller.poll()
            metrics.observe_poll(time.monotonic() - now, error=controller.source_error is not None)
            if controller.head is not None:
                readiness.set_repo_read()
            next_poll = now + (interval if controller.source_error is None else min(interval * 2, 60.0))
        started = time.monotonic()
        if controller.reconcile_due():
            metrics.observe_reconcile(time.monotonic() - started, "success")
            states = list(controller.reports.values())
            metrics.set_app_states(Counter(r.sync for r in states), Counter(r.health for r in states))
        wait = controller.next_due_in()
        timeout = next_poll - time.monotonic()
        if wait is not None:
            timeout = min(timeout, wait)
        wake.wait(max(timeout, 0.05))
        if stop.is_set():
            break
    log.info("gitdeploy run: stopped; a restart resumes where this left off")


@click.command("sync")
@click.argument("apps", nargs=-1, metavar="[APP]...")
@repo_options
@click.option("--wait", is_flag=True, help="Keep going until every touched rollout is Complete or Failed.")
@click.option(
    "--timeout", type=Duration(), default="10m", show_default=True, help="Give up waiting after this."
)
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def sync(
    ctx: click.Context,
    apps: tuple[str, ...],
    repo: str,
    branch: str,
    subpath: str,
    prune: bool | None,
    workers: int,
    namespaces: tuple[str, ...],
    wait: bool,
    timeout: float,
    output: str,
) -> None:
    """One pass at the tracked head; with --wait, until the rollouts end.

    Exit code: 0 when every app (or every APP named) is Synced or Pinned and not Degraded;
    1 otherwise (a rollout failed, a manifest is invalid, the repo is unreachable, or --timeout).

    \b
    Examples:
      gitdeploy sync --repo ./config --wait
      gitdeploy sync shop/web --repo https://github.com/acme/deploy --wait --timeout 5m
    """
    if get_context(ctx).debug:
        _setup_logging(True, "text")
    with _controller(ctx, repo, branch, subpath, prune, workers, namespaces) as controller:
        controller.poll()
        if controller.source_error is not None:
            raise PermanentError(
                f"cannot read {repo}: {controller.source_error}", hint="check --repo and --branch"
            )
        keys = _select(controller, apps)
        deadline = time.monotonic() + timeout
        reports = {r.key: r for r in controller.reconcile_due(only=keys)}
        while wait and time.monotonic() < deadline and not all(r.settled for r in reports.values()):
            pending = [k for k, r in reports.items() if not r.settled]
            time.sleep(min(max(controller.next_due_in() or 0.2, 0.05), 1.0))
            for report in controller.reconcile_due(only=pending):
                reports[report.key] = report
        rows = [reports[k] for k in sorted(reports)]
    if output == "json":
        print_json(
            [
                {
                    "app": str(r.key),
                    "sync": r.sync,
                    "health": r.health,
                    "revision": r.revision,
                    "message": r.message,
                }
                for r in rows
            ]
        )
    else:
        print_table(["app", "sync", "health", "revision", "message"], [_report_row(r) for r in rows])
    good = all(r.sync in (Sync.SYNCED, Sync.PINNED) and r.health == Health.HEALTHY for r in rows)
    if wait and not all(r.settled for r in rows):
        click.echo(
            f"error: timed out after {timeout:.0f} s waiting for the rollouts "
            "(they go on in the cluster: `gitdeploy status` shows where they are; "
            "raise --timeout to wait longer)",
            err=True,
        )
        ctx.exit(1)
    ctx.exit(0 if good else 1)


def _select(controller: Controller, apps: tuple[str, ...]) -> list[AppKey]:
    known = sorted(set(controller.apps) | set(controller.problems))
    if not apps:
        return known
    chosen = []
    for name in apps:
        matches = [k for k in known if str(k) == name or k.name == name]
        if not matches:
            raise PermanentError(
                f"no app {name!r} in the repo", hint="use the name or namespace/name of an app"
            )
        if len(matches) > 1:
            raise PermanentError(
                f"{name!r} is ambiguous: {', '.join(map(str, matches))}", hint="write namespace/name"
            )
        chosen.append(matches[0])
    return chosen
