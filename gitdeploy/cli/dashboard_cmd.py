"""``gitdeploy dashboard``: the read-only web dashboard of the cluster the command points at."""

from __future__ import annotations

import click

from gitdeploy.cli.context import get_context
from gitdeploy.cli.target import open_cluster
from gitdeploy.errors import PermanentError
from gitdeploy.server.http import parse_listen_address
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
@click.pass_context
def dashboard(ctx: click.Context, listen: str) -> None:
    """Serve a read-only web dashboard: every app's SYNC and HEALTH, and per app its revisions,
    rollout and events, updated live as the cluster changes.

    It reads what `status` and `history` read (the cluster), from any machine whose kubeconfig
    reaches it. Read-only: change apps with commits or the CLI. Stop it with Ctrl-C.

    \b
    Examples:
      gitdeploy dashboard
      gitdeploy dashboard --listen :8484 --kubeconfig ~/.kube/config
    """
    try:
        host, port = parse_listen_address(listen)
    except ValueError as bad:
        raise PermanentError(str(bad), hint="for example --listen 127.0.0.1:8484") from bad
    cluster = open_cluster(get_context(ctx))
    sock = bind(host, port)
    click.echo(f"Dashboard of the {cluster.description} at {url_of(sock)} (read-only; Ctrl-C stops it)")
    settings = DashboardSettings(cluster_description=cluster.description)
    serve(lambda stopping: create_app(cluster, settings, stopping), sock)
