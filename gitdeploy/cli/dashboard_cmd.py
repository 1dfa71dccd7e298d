"""``gitdeploy dashboard``: the web dashboard of the cluster the command points at (read-only
unless a token file lets people who log in act)."""

from __future__ import annotations

import click

from gitdeploy.cli.context import get_context
from gitdeploy.cli.dashboard_options import commit_links, dashboard_token_option, repo_web_url_option
from gitdeploy.cli.target import open_cluster
from gitdeploy.errors import PermanentError
from gitdeploy.server.http import parse_listen_address
from gitdeploy.web.auth import read_token_file
from gitdeploy.web.following import followed_apps
from gitdeploy.web.server import DashboardSettings, create_app
from gitdeploy.web.serving import bind, serve, url_of


@click.command("dashboard")
@click.option(
    "--listen",
    default="127.0.0.1:8484",
    show_default=True,
    metavar="[HOST]:PORT",
    help="Where to serve the dashboard (port 0: any free port; the URL is printed).",
)
@click.option(
    "-n",
    "--namespace",
    "namespaces",
    multiple=True,
    metavar="NS",
    help="Show the apps of this namespace only (repeat for more); what a namespaced Role allows. "
    "Default: every namespace that has gitdeploy apps.",
)
@dashboard_token_option
@repo_web_url_option
@click.pass_context
def dashboard(
    ctx: click.Context,
    listen: str,
    namespaces: tuple[str, ...],
    dashboard_token_file: str | None,
    repo_web_url: str | None,
) -> None:
    """Serve a web dashboard: every app's SYNC and HEALTH, and per app its revisions,
    rollout and events, updated live as the cluster changes.

    It reads what `status` and `history` read (the cluster), from any machine whose kubeconfig
    reaches it: it lists the apps once, then watches them (a kubeconfig that may not watch every
    namespace: it lists them at each refresh, or use -n). Read-only unless --dashboard-token-file
    is given: then whoever logs in with the token can act on an app's page, and each action is
    recorded as an event naming them. Stop it with Ctrl-C.

    Exit codes: 0 stopped, 1 it cannot listen or read the cluster.

    \b
    Examples:
      gitdeploy dashboard
      gitdeploy dashboard --listen :8484 --kubeconfig ~/.kube/config
      gitdeploy dashboard -n shop -n payments
      gitdeploy dashboard --dashboard-token-file ~/.config/gitdeploy/dashboard-token
      gitdeploy dashboard --repo-web-url https://github.com/org/config
    """
    try:
        host, port = parse_listen_address(listen)
    except ValueError as bad:
        raise PermanentError(str(bad), hint="for example --listen 127.0.0.1:8484") from bad
    token = read_token_file(dashboard_token_file) if dashboard_token_file else None
    links = commit_links(repo_web_url)
    cluster = open_cluster(get_context(ctx))
    sock = bind(host, port)
    mode = "actions on, after a login" if token is not None else "read-only"
    click.echo(f"Dashboard of the {cluster.description} at {url_of(sock)} ({mode}; Ctrl-C stops it)")
    settings = DashboardSettings(
        cluster_description=cluster.description, token=token, commit_links=links, namespaces=namespaces
    )
    apps = followed_apps(cluster, namespaces)
    serve(lambda stopping: create_app(cluster, settings, stopping, apps), sock)
