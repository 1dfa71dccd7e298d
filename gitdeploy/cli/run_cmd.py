"""``gitdeploy run`` (the loop) and ``gitdeploy sync`` (one pass, optionally waiting for the result)."""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from gitdeploy import __version__
from gitdeploy.cli.context import get_context
from gitdeploy.cli.dashboard_options import commit_links, dashboard_token_option, repo_web_url_option
from gitdeploy.cli.durations import Duration
from gitdeploy.cli.image_options import image_interval_option, image_settings, registry_options
from gitdeploy.cli.output import camel_case, output_option, print_data, print_table
from gitdeploy.cli.progress import RolloutProgress
from gitdeploy.cli.target import open_cluster, resolve_target
from gitdeploy.cli.trust import load_trusted_keys, trusted_key_option
from gitdeploy.clock import MonotonicClock, SystemClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.cluster.apirequests import observe_api_requests
from gitdeploy.controller.gitposition import GitPosition
from gitdeploy.controller.handover import Handover
from gitdeploy.controller.headnews import HeadNews
from gitdeploy.controller.inspect import AppState, AppTally, count_app_states, list_app_views
from gitdeploy.controller.leader import LeaderElector, default_lease_namespace, new_identity
from gitdeploy.controller.loop import RESYNC_SECONDS, AppReport, Controller
from gitdeploy.controller.membership import Membership
from gitdeploy.controller.notify import Notifier
from gitdeploy.controller.rollouts import forget_app, forget_replica_sets
from gitdeploy.controller.scheduler import Scheduler
from gitdeploy.controller.shards import OwnShards, ShardGate
from gitdeploy.controller.streamwatch import watch_streams
from gitdeploy.controller.watcher import watch_records, watch_rollouts
from gitdeploy.core.diagnostics import printable
from gitdeploy.core.headnews import FOLLOWER_POLL_FACTOR, head_announcement_name
from gitdeploy.core.lease import LeaseTimings, Role
from gitdeploy.core.models import AppKey
from gitdeploy.core.pruning import PruneLimit, parse_prune_limit
from gitdeploy.core.sync.syncstate import Health, Sync
from gitdeploy.errors import GitdeployError, PermanentError
from gitdeploy.source.repo import ConfigRepo

if TYPE_CHECKING:  # run's HTTP side is imported when run starts: sync never needs it
    from gitdeploy.server.http import HttpServer, Readiness, WebhookSettings
    from gitdeploy.server.metrics import AppStates, Metrics
    from gitdeploy.server.webhook import PushEvent
    from gitdeploy.web.appsource import WatchedApps
    from gitdeploy.web.server import DashboardSettings


class PruneLimitType(click.ParamType):  # type: ignore[type-arg]
    """``7`` (apps) or ``20%`` (of the apps gitdeploy manages)."""

    name = "limit"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> PruneLimit:
        if isinstance(value, PruneLimit):
            return value
        found = parse_prune_limit(value)
        if found is None:
            self.fail(f"{value!r} is not a limit: write a count (7) or a percentage (20%)", param, ctx)
        return found


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
            click.option(
                "--prune-limit",
                type=PruneLimitType(),
                default=None,
                help="Hold one commit's prunes above this many apps (7) or share of them (20%) until "
                "`gitdeploy prune --confirm` (default: the repo's `pruneLimit`, else 5 or 10%).",
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
    return trusted_key_option(registry_options(command))


def leader_options(command: Any) -> Any:
    """Leader election options of ``run`` (client-go's defaults: 15 s, 10 s, 2 s)."""
    for option in reversed(
        [
            click.option(
                "--leader-elect/--no-leader-elect",
                default=True,
                show_default=True,
                help="Act only while holding the leader Lease; otherwise stand by.",
            ),
            click.option("--lease-name", default="gitdeploy", show_default=True, help="The Lease's name."),
            click.option(
                "--lease-namespace",
                default=None,
                help="The Lease's namespace (default: the pod's own in a cluster, else gitdeploy-system).",
            ),
            click.option(
                "--lease-duration",
                type=Duration(),
                default="15s",
                show_default=True,
                help="How long a standby waits after the last renewal before taking over.",
            ),
            click.option(
                "--renew-deadline",
                type=Duration(),
                default="10s",
                show_default=True,
                help="A leader that could not renew for this long stops acting.",
            ),
            click.option(
                "--sharding/--no-sharding",
                default=False,
                show_default=True,
                help="Share the apps among all replicas: each acts on the apps it owns (member "
                "Leases in --lease-namespace); leader-only work stays with the leader Lease.",
            ),
            click.option(
                "--retry-period",
                type=Duration(),
                default="2s",
                show_default=True,
                help="How often to renew, or to try to acquire.",
            ),
        ]
    ):
        command = option(command)
    return command


def _setup_logging(debug: bool, log_format: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(_TextFormatter("%(asctime)s %(levelname)-7s %(message)s", "%H:%M:%S"))
    root = logging.getLogger("gitdeploy")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    root.propagate = False


class _TextFormatter(logging.Formatter):
    """One line per message: a newline in a file name or a value from git cannot forge a line."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(record.message)
        return super().formatMessage(record)


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        at = datetime.fromtimestamp(record.created, UTC)
        body = {
            "time": at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z",  # RFC 3339
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in ("commit", "revision", "previous_commit"):
            if hasattr(record, key):
                body[camel_case(key)] = getattr(record, key)
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
    resync_seconds: float = RESYNC_SECONDS,
    trusted_keys: tuple[str, ...] = (),
    cluster: Cluster | None = None,
) -> Iterator[Controller]:
    cli = get_context(ctx)
    trusted = load_trusted_keys(trusted_keys, cli.state_dir)
    cluster = cluster or open_cluster(cli)
    with ConfigRepo(
        repo, ref=branch, subpath=subpath, state_dir=cli.state_dir, trusted_keys=trusted
    ) as source:
        controller = Controller(
            source,
            cluster,
            SystemClock(),
            prune=prune,
            prune_limit=ctx.params.get("prune_limit"),
            workers=workers,
            namespaces=frozenset(namespaces),
            images=image_settings(ctx),
            resync_seconds=resync_seconds,
        )
        try:
            yield controller
        finally:
            controller.images.close()  # the registry client's connections


@contextmanager
def _leadership(
    ctx: click.Context,
    controller: Controller,
    lease: tuple[str | None, str, LeaseTimings | None],
    relay: _Relay,
    metrics: Metrics,
    readiness: Readiness,
) -> Iterator[Callable[[], bool]]:
    """Yield "may this process act now?"; with leader election, hold the Lease while it runs.

    The Lease namespace is created when missing on the embedded cluster only (on a real cluster,
    deploy/ makes it, and gitdeploy's service account may not create namespaces).
    """
    namespace, name, timings = lease
    wake = relay.wake
    if timings is None:
        readiness.set_lease_decided()
        metrics.set_leader(True)
        yield lambda: True
        return
    if ctx.params.get("sharding"):
        with _sharding(ctx, controller, (namespace, name, timings), relay, metrics, readiness) as acting:
            yield acting
        return
    target = resolve_target(get_context(ctx), start_embedded=False)
    namespace = namespace or default_lease_namespace(target.in_cluster)
    if target.embedded:
        controller.cluster.ensure_namespace(namespace)

    def changed(role: Role) -> None:
        readiness.set_lease_decided()
        metrics.set_leader(role is Role.LEADER)
        forget_replica_sets(controller.runner)  # what another leader changed meanwhile is no hand's
        if role is Role.LEADER:
            controller.mark_due()  # the other leader may have changed anything meanwhile
        wake.set()

    identity = new_identity()
    controller.cluster.name_client(identity)  # who wrote what, in audit logs
    elector = LeaderElector(
        controller.cluster, namespace, name, identity, controller.clock, timings, on_change=changed
    )
    controller.runner.leading = elector.is_leader  # every write of a pass asks again
    controller.reconciler.position = _git_position(controller, relay, timings.retry_period)
    elector.start()
    try:
        yield elector.is_leader
    finally:
        elector.close()


def _git_position(controller: Controller, relay: _Relay, recheck: float) -> GitPosition:
    """Where this process's git stands against the commits the app records name: after a
    takeover or a move, an app waits for git rather than going back to an older commit."""
    position = GitPosition(controller.repo, lambda: controller.head, MonotonicClock(), recheck=recheck)
    position.fetch_now = relay.push  # a commit an app's record names and this process lacks
    controller.poll_observers.append(position.polled)  # ... and whether the branch holds it
    return position


def _refuse_options_alone(given: dict[str, Any], *, sharding: bool) -> None:
    """Refuse, before anything starts, an option of ``run`` (``given``: its parameters) given
    without the one it needs."""
    if sharding and not given["leader_elect"]:
        raise PermanentError(
            "--sharding needs leader election",
            hint="drop --no-leader-elect: the leader alone polls image streams and prunes orphans",
        )
    if given["notify_secret_file"] and not given["notify_url"]:
        raise PermanentError("--notify-secret-file needs --notify-url", hint="add --notify-url URL")
    for needs_listen in ("webhook_secret_file", "dashboard_token_file", "repo_web_url"):
        if given[needs_listen] and not given["listen"]:
            flag = "--" + needs_listen.replace("_", "-")
            raise PermanentError(f"{flag} needs --listen", hint="add --listen :8080")


@contextmanager
def _sharding(
    ctx: click.Context,
    controller: Controller,
    lease: tuple[str | None, str, LeaseTimings],
    relay: _Relay,
    metrics: Metrics,
    readiness: Readiness,
) -> Iterator[Callable[[], bool]]:
    """``run --sharding``: a member Lease of this replica's own, the apps it owns (see
    :mod:`gitdeploy.controller.shards`), the leader Lease for the leader-only work, and the
    shared head announcement (:mod:`gitdeploy.controller.headnews`). Yields "may this replica
    act now?" (its member Lease is fresh)."""
    namespace, name, timings = lease
    wake = relay.wake
    target = resolve_target(get_context(ctx), start_embedded=False)
    namespace = namespace or default_lease_namespace(target.in_cluster)
    if target.embedded:
        controller.cluster.ensure_namespace(namespace)
    identity = new_identity()
    controller.cluster.name_client(identity)  # who wrote what, in audit logs

    members_before = [frozenset[str]()]

    def members_changed(live: frozenset[str]) -> None:
        readiness.set_lease_decided()
        before, members_before[0] = members_before[0], live
        source = controller.source  # the apps that moved to or from this replica, claimed or
        handover.take(gate.concerned(before, live, [*source.apps, *source.problems]))  # released
        controller.mark_due(source.orphans)  # and the orphans: the leader may have gone
        wake.set()

    def role_changed(role: Role) -> None:
        metrics.set_leader(role is Role.LEADER)
        if role is Role.LEADER:
            controller.source.images_stale = True  # image streams are this replica's to poll now
        wake.set()

    membership = Membership(
        controller.cluster, namespace, identity, SystemClock(), MonotonicClock(), timings, members_changed
    )
    elector = LeaderElector(
        controller.cluster, namespace, name, identity, controller.clock, timings, on_change=role_changed
    )
    membership.leading = elector.is_leader  # the leader deletes the Leases killed replicas left
    position = _git_position(controller, relay, timings.retry_period)
    gate = ShardGate(
        membership, controller.cluster, controller.clock, elector.is_leader, lambda: elector.leader, position
    )
    gate.observers.append(metrics.set_shard)
    controller.reconciler.shards = gate
    controller.runner.shards = gate
    controller.shard_scope = gate  # a resync and the record watch look at this replica's apps alone
    controller.watched_shards = OwnShards(membership, lambda: bool(gate.handing))  # ... watches theirs
    controller.pool.sharing = lambda: len(membership.members())  # ... and lists their namespaces
    gate.on_drop.append(lambda key: forget_app(controller.runner, key))  # its changes are no hand's

    def due_now(keys: Iterable[AppKey]) -> None:
        controller.mark_due(keys)
        wake.set()

    write = controller.runner.write_record
    handover = Handover(gate, controller.cluster, write, due_now, cache=controller.watch_cache)
    controller.images.leading = elector.is_leader
    log = logging.getLogger("gitdeploy")
    log.info("sharding: member %s (lease %s)", identity, membership.lease)
    news = _share_head(controller, (namespace, name), identity, elector, relay)
    membership.step()  # the first renewal before the first pass
    handover.start()
    membership.start()
    elector.start()
    news.start()
    try:
        yield membership.fresh
    finally:
        news.close()
        elector.close()
        membership.close()
        handover.close()


def _share_head(
    controller: Controller, lease: tuple[str, str], identity: str, elector: LeaderElector, relay: _Relay
) -> HeadNews:
    """The head announcement of ``run --sharding``: pushes this replica receives, and heads its
    polls find, announced to the others; theirs fetched at once; git polled at --interval by the
    leader alone (the others far less often, while the announcement's watch works)."""
    namespace, name = lease
    news = HeadNews(
        controller.cluster,
        (namespace, head_announcement_name(name)),
        identity,
        controller.repo.ref or "",
        lambda: controller.repo.head,
        SystemClock(),
        relay.push,
    )
    news.leading, news.leader = elector.is_leader, lambda: elector.leader
    news.failed = lambda: controller.source_error is not None
    relay.push_listeners.append(news.pushed)
    relay.after_poll.append(news.after_poll)
    relay.period = news.period
    return news


@dataclass
class _Relay:
    """What reaches the loop from outside it: the newest push's head (a webhook's, or with
    --sharding another replica's announcement), how long to wait between polls, and what to do
    after each poll (--sharding: announce a head that moved)."""

    wake: threading.Event
    pushed: deque[str] = field(default_factory=lambda: deque(maxlen=1))
    """The newest push's head, for the next poll to fetch at once."""
    push_listeners: list[Callable[[str], None]] = field(default_factory=list)
    period: Callable[[float], float] | None = None
    after_poll: list[Callable[[], None]] = field(default_factory=list)

    def push(self, sha: str) -> None:
        """Fetch at once (the loop's next turn polls for ``sha``)."""
        self.pushed.append(sha)
        self.wake.set()

    def on_push(self, event: PushEvent) -> None:
        """A verified webhook push (on the HTTP server's event loop: hand over, never block)."""
        self.push(event.after)
        for listener in self.push_listeners:
            listener(event.after)


def _report_row(report: AppReport) -> list[str]:
    return [str(report.key), report.sync, report.health, str(report.revision or ""), report.message]


@click.command("run")
@repo_options
@image_interval_option
@click.option(
    "--interval",
    type=Duration(),
    default="5s",
    show_default=True,
    help="How often to poll the repo (an unreachable one: with backoff, 5 s doubling to 5 min). With "
    "--sharding the leader polls this often, the others every 10 intervals while they watch the "
    "replicas' shared head announcement (the Lease <--lease-name>-head).",
)
@click.option(
    "--resync-interval",
    type=Duration(),
    default="5m",
    show_default=True,
    help="How often every app is looked at again even if nothing changed (undoes hand changes).",
)
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--listen",
    default=None,
    metavar="[HOST]:PORT",
    help="Serve the dashboard (/), /healthz, /readyz, /metrics and /hooks/git here.",
)
@click.option(
    "--webhook-secret-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Accept signed GitHub/GitLab push webhooks on /hooks/git (needs --listen).",
)
@dashboard_token_option
@repo_web_url_option
@click.option(
    "--notify-url",
    default=None,
    metavar="URL",
    help="POST a JSON message here when a rollout starts, completes, fails or rolls back.",
)
@click.option(
    "--notify-secret-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Sign notifications with this secret (X-Gitdeploy-Signature-256: sha256=HMAC).",
)
@leader_options
@click.pass_context
def run(
    ctx: click.Context,
    repo: str,
    branch: str,
    subpath: str,
    prune: bool | None,
    prune_limit: PruneLimit | None,
    workers: int,
    namespaces: tuple[str, ...],
    trusted_keys: tuple[str, ...],
    interval: float,
    resync_interval: float,
    log_format: str,
    listen: str | None,
    webhook_secret_file: str | None,
    dashboard_token_file: str | None,
    repo_web_url: str | None,
    notify_url: str | None,
    notify_secret_file: str | None,
    leader_elect: bool,
    lease_name: str,
    lease_namespace: str | None,
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    sharding: bool,
) -> None:
    """Keep the cluster at what the config repo says, until stopped (SIGTERM/Ctrl-C).

    With several `run` against one cluster, one leads (holds the Lease) and acts; the others stand
    by, read git, and take over when the leader stops renewing or exits. With --sharding, every
    replica acts on the apps it owns (an app moves only after its old owner stopped acting on it);
    the leader alone polls image streams and prunes orphans, and polls git at --interval; a
    webhook push that reaches one replica reaches them all.

    Exit codes: 0 stopped by SIGTERM or Ctrl-C, 1 it cannot start (the repo, the cluster or
    --listen's port; the message says which).

    \b
    Examples:
      gitdeploy run --repo https://github.com/acme/deploy --branch main
      gitdeploy run --repo ./config --interval 2s --prune
    """
    _setup_logging(get_context(ctx).debug, log_format)
    stop = threading.Event()
    wake = threading.Event()
    relay = _Relay(wake)

    def request_stop(signum: int, _frame: Any) -> None:
        logging.getLogger("gitdeploy").info(
            "received %s: finishing the step in progress", signal.Signals(signum).name
        )
        stop.set()
        wake.set()  # the loop may be waiting for the next poll

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    from gitdeploy.server.http import Readiness, WebhookSettings, read_secret_file
    from gitdeploy.server.metrics import Metrics
    from gitdeploy.web.appsource import WatchedApps
    from gitdeploy.web.auth import read_token_file
    from gitdeploy.web.server import DashboardSettings

    metrics = Metrics(version=__version__)
    readiness = Readiness()
    timings = LeaseTimings(lease_duration, renew_deadline, retry_period) if leader_elect else None
    _refuse_options_alone(ctx.params, sharding=sharding)
    server = None
    notifier = (
        Notifier(
            notify_url,
            read_secret_file(notify_secret_file, "--notify-secret-file") if notify_secret_file else None,
        )
        if notify_url
        else None
    )
    cluster = open_cluster(get_context(ctx))
    dashboard_apps = WatchedApps(cluster, lambda: namespaces or (None,))  # listed until the loop watches
    if listen:
        webhook = (
            WebhookSettings(
                secret=read_secret_file(webhook_secret_file, "--webhook-secret-file"),
                repo_url=repo,
                branch=branch,
            )
            if webhook_secret_file
            else None
        )
        settings = DashboardSettings(
            cluster_description=cluster.description,
            token=read_token_file(dashboard_token_file) if dashboard_token_file else None,
            commit_links=commit_links(repo_web_url, repo),
            namespaces=namespaces,
        )
        server = _http_server(
            listen, cluster, (settings, dashboard_apps), metrics, readiness, webhook, relay.on_push
        )
        server.start()
    try:
        with (
            _controller(
                ctx, repo, branch, subpath, prune, workers, namespaces, resync_interval, trusted_keys, cluster
            ) as controller,
            _leadership(
                ctx, controller, (lease_namespace, lease_name, timings), relay, metrics, readiness
            ) as acting,
        ):
            instrument(controller, metrics, notifier, acting)
            watch_records(controller, stop, wake.set)  # rollback/deploy requests made elsewhere
            watch_rollouts(controller, stop, wake.set)  # pods ready: the next wave at once
            watch_streams(controller, stop, wake.set)  # `gitdeploy tag`: followers roll out at once
            dashboard_apps.follow(controller.watch_cache, controller.managed_namespaces)
            source = f"{controller.repo.url.display} ({branch})"
            _loop(controller, stop, relay, interval, readiness, source, acting)
    finally:
        if notifier is not None:
            notifier.close()
        if server is not None:
            server.stop()


def _http_server(
    listen: str,
    cluster: Cluster,
    dashboard: tuple[DashboardSettings, WatchedApps],
    metrics: Metrics,
    readiness: Readiness,
    webhook: WebhookSettings | None,
    on_push: Callable[[PushEvent], None],
) -> HttpServer:
    """The server of ``--listen``: probes, metrics, the webhook, and the dashboard on ``/`` (its
    apps list read from the loop's watches once they hold a namespace)."""
    from gitdeploy.server.http import HttpServer, parse_listen_address
    from gitdeploy.web.server import create_app

    settings, apps = dashboard
    host, port = parse_listen_address(listen)
    return HttpServer(
        metrics=metrics,
        readiness=readiness,
        host=host,
        port=port,
        webhook=webhook,
        on_push=on_push,
        fallback=lambda stopping: create_app(cluster, settings, stopping, apps),
    )


def instrument(
    controller: Controller,
    metrics: Metrics,
    notifier: Notifier | None = None,
    acting: Callable[[], bool] = lambda: True,
) -> None:
    """Feed ``metrics`` (and ``notifier``) from the controller's observers and its API client; the
    apps-by-state gauges are read from the cluster at each scrape, from the watches' cache once they
    run (:func:`live_app_states`), so that a sum over replicas counts each app once: by the leader
    while ``acting()`` (a standby exports zeros) or, with ``run --sharding``, by every replica while
    ``acting()``, each counting the apps it holds (as Argo CD's controller shards each export
    their own apps). While the first commit is being read (unless git could not be reached) a
    scrape counts nothing and the gauges have no series yet: before it, gitdeploy knows neither
    the apps nor their namespaces, and would list every ReplicaSet and app record of the cluster
    at each scrape, which at 30,000 apps took more of the process than the read itself and held
    every ReplicaSet decoded at once (``bench/sharding_scale.py`` scrapes every 0.25 s)."""
    observe_api_requests(controller.cluster.api, metrics.api_request)
    controller.poll_observers.append(metrics.observe_poll)
    controller.reconcile_observers.append(metrics.observe_reconcile)
    controller.runner.observers.append(metrics.observe_rollout)
    controller.runner.event_observers.append(metrics.observe_event)
    tally = AppTally.of_states()  # a scrape works out again only the apps that changed since the last one

    def app_states() -> AppStates | None:
        scope = controller.shard_scope
        if not acting() or (scope is None and not controller.images.leading()):
            return {}, {}, 0
        if controller.head is None and controller.source_error is None:
            return None  # the first commit is being read: nothing is counted yet (see above)
        return live_app_states(controller, tally, None if scope is None else scope.held())

    metrics.follow_app_states(app_states)
    if notifier is not None:
        notifier.start()
        controller.runner.observers.append(notifier)


def live_app_states(
    controller: Controller, tally: AppTally[AppState] | None = None, only: Iterable[AppKey] | None = None
) -> AppStates | None:
    """The apps by state as ``gitdeploy status`` shows them now (with ``only``: those of them among
    ``only``), from what the loop's watches saw (no API request; with ``tally``, see
    :class:`~gitdeploy.controller.inspect.AppTally`) or, in a namespace they have not listed yet,
    from the cluster; None when the cluster cannot be read (the gauges keep their previous values,
    and the log says why)."""
    try:
        namespaces = controller.managed_namespaces()
        counts = count_app_states(controller.cluster, namespaces, controller.watch_cache, tally, only)
    except GitdeployError as problem:
        logging.getLogger("gitdeploy").warning("apps by state for /metrics: %s", problem)
        return None
    return dict(counts.sync), dict(counts.health), counts.triggers_suspended


def publish_app_states(controller: Controller, metrics: Metrics) -> None:
    """Set the apps-by-state gauges from what the cluster shows now (:func:`live_app_states`)."""
    states = live_app_states(controller)
    if states is not None:
        metrics.set_app_states(*states)


def _loop(
    controller: Controller,
    stop: threading.Event,
    relay: _Relay,
    interval: float,
    readiness: Readiness,
    source: str,
    acting: Callable[[], bool],
) -> None:
    """Run the scheduler (:meth:`Scheduler.run`) until stopped, saying so in the log."""
    log = logging.getLogger("gitdeploy")
    where = controller.cluster.description
    shared = ""
    if relay.period is not None:  # --sharding
        others = FOLLOWER_POLL_FACTOR * interval
        shared = f" while it leads (else every {others:.1f} s, while it watches the leader's news)"
    log.info("gitdeploy run: %s on %s, polling every %.1f s%s", source, where, interval, shared)

    def polled(_started: float) -> None:
        if controller.head is not None:
            readiness.set_repo_read()
        for after in relay.after_poll:
            after()

    Scheduler(controller).run(
        stop, relay.wake, interval, pushed=relay.pushed, acting=acting, polled=polled, period=relay.period
    )
    log.info("gitdeploy run: stopped; a restart resumes where this left off")


@click.command("sync")
@click.argument("apps", nargs=-1, metavar="[APP]...")
@repo_options
@click.option("--wait", is_flag=True, help="Keep going until every touched rollout is Complete or Failed.")
@click.option(
    "--timeout", type=Duration(), default="10m", show_default=True, help="With --wait: give up after this."
)
@output_option()
@click.pass_context
def sync(
    ctx: click.Context,
    apps: tuple[str, ...],
    repo: str,
    branch: str,
    subpath: str,
    prune: bool | None,
    prune_limit: PruneLimit | None,
    workers: int,
    namespaces: tuple[str, ...],
    trusted_keys: tuple[str, ...],
    wait: bool,
    timeout: float,
    output: str,
) -> None:
    """One pass at the tracked head; with --wait, until the rollouts end.

    Exit code: 0 when every app (or every APP named) is Synced or Pinned and not Degraded;
    1 otherwise (a rollout failed, a manifest or a file is invalid, the repo is unreachable or its
    head is not signed by a --trusted-key, three passes over an app each found an object changed
    by someone else since the pass read it, or --timeout).

    \b
    Examples:
      gitdeploy sync --repo ./config --wait
      gitdeploy sync shop/web --repo https://github.com/acme/deploy --wait --timeout 5m
    """
    if get_context(ctx).debug:
        _setup_logging(True, "text")
    with _controller(
        ctx, repo, branch, subpath, prune, workers, namespaces, trusted_keys=trusted_keys
    ) as controller:
        controller.poll()
        if controller.source_error is not None:
            raise PermanentError(
                f"cannot read {controller.repo.url.display}: {controller.source_error}",
                hint=controller.source_hint or "check --repo and --branch",
            )
        keys = _select(controller, apps) if apps else None  # none named: every app, orphans too
        deadline = time.monotonic() + timeout
        scheduler = Scheduler(controller)
        reports = scheduler.pass_answering(keys)
        followed: set[AppKey] = set()  # the apps whose rollout --wait waits for
        stop, wake = threading.Event(), threading.Event()
        if wait and not all(r.settled for r in reports.values()):
            watch_rollouts(controller, stop, wake.set)  # pods ready: the next wave at once, as `run`
        with RolloutProgress(err=True, name_apps=True) as progress:
            try:
                if wait:
                    followed = scheduler.follow(
                        reports, deadline, wake, lambda shown: _show_progress(progress, controller, shown)
                    )
            finally:
                stop.set()  # the watch ends before the process does, however the wait ends
            if followed:
                _show_progress(progress, controller, {k: reports[k] for k in followed})
        rows = [reports[k] for k in sorted(reports)]
        refusal = controller.refusal
        unread = file_problems(controller)
    _print_reports(rows, output)
    if refusal is not None:
        click.echo(f"error: {refusal}", err=True)
    for problem in unread:  # files that hold no app gitdeploy could name, and why
        click.echo(f"error: {problem}", err=True)
    # An orphan kept on purpose (prune off, or opted out) needs nothing; a held prune does.
    good = not unread and all(
        r.sync in (Sync.SYNCED, Sync.PINNED) and r.health == Health.HEALTHY
        for r in rows
        if r.sync != Sync.ORPHANED
    )
    if wait and not all(r.settled for r in rows):
        click.echo(
            f"error: timed out after {timeout:.0f} s waiting for the rollouts "
            "(they go on in the cluster: `gitdeploy status` shows where they are; "
            "raise --timeout to wait longer)",
            err=True,
        )
        ctx.exit(1)
    ctx.exit(0 if good and refusal is None else 1)


def _print_reports(rows: list[AppReport], output: str) -> None:
    if output != "text":
        print_data(
            [
                {
                    "app": str(r.key),
                    "sync": r.sync,
                    "health": r.health,
                    "revision": r.revision,
                    "message": r.message,
                }
                for r in rows
            ],
            output,
        )
    else:
        print_table(["app", "sync", "health", "revision", "message"], [_report_row(r) for r in rows])


def file_problems(controller: Controller) -> list[str]:
    """The problems of the desired state that concern a file rather than an app, rendered."""
    desired = controller.desired
    return [d.render() for d in desired.diagnostics if not d.app] if desired is not None else []


def _show_progress(
    progress: RolloutProgress, controller: Controller, reports: dict[AppKey, AppReport]
) -> None:
    """Where each rollout ``sync --wait`` follows stands (two list calls per namespace involved);
    a namespace that cannot be read shows nothing new (the app's report says why)."""
    for namespace in sorted({k.namespace for k in reports}):
        try:
            views = list_app_views(controller.cluster, namespace)
        except GitdeployError:
            continue
        for view in views:
            report = reports.get(view.key)
            if report is not None and report.settled:
                progress.finish(view, report.phase or report.health)
            elif report is not None:
                progress.show(view)


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
