"""``gitdeploy cluster up|down|status``: the embedded cluster of the state directory."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import click

from gitdeploy.cli.context import get_context
from gitdeploy.cli.output import MACHINE_FORMATS, output_option, print_data
from gitdeploy.localcluster import ClusterInfo, SimulationConfig, ensure_running, status, stop
from gitdeploy.localcluster.daemon import ssl_context


@click.group("cluster")
def cluster() -> None:
    """Run the embedded cluster (a local Kubernetes API with simulated pods).

    \b
    Examples:
      gitdeploy cluster up --pod-start-seconds 0.5
      gitdeploy cluster status -o json
      gitdeploy cluster down
    """


@cluster.command("up")
@click.option(
    "--pod-start-seconds", type=float, default=None, help="Pending → Ready delay of a pod (default 2)."
)
@click.option(
    "--job-seconds", type=float, default=None, help="Lifetime of a run-to-completion pod (default 5)."
)
@click.option(
    "--image-pull-failure", multiple=True, metavar="PATTERN", help="Images that fail to pull (glob)."
)
@click.option("--image-crash", multiple=True, metavar="PATTERN", help="Images that crash.")
@click.option(
    "--image-unready", multiple=True, metavar="PATTERN", help="Images never passing readiness (glob)."
)
@click.option(
    "--image-hang", multiple=True, metavar="PATTERN", help="Hook/deployer images that never end (glob)."
)
@click.pass_context
def up(
    ctx: click.Context,
    pod_start_seconds: float | None,
    job_seconds: float | None,
    image_pull_failure: tuple[str, ...],
    image_crash: tuple[str, ...],
    image_unready: tuple[str, ...],
    image_hang: tuple[str, ...],
) -> None:
    """Start the embedded cluster in the background (does nothing when it already runs).

    Exit codes: 0 it runs, 1 it could not start.

    \b
    Examples:
      gitdeploy cluster up
      gitdeploy cluster up --pod-start-seconds 0.2 --image-pull-failure '*:missing'
    """
    state_dir = get_context(ctx).state_dir
    saved = SimulationConfig.load(state_dir / "simulation.json") or SimulationConfig()
    wanted = SimulationConfig(
        pod_start_seconds=saved.pod_start_seconds if pod_start_seconds is None else pod_start_seconds,
        job_seconds=saved.job_seconds if job_seconds is None else job_seconds,
        image_pull_failure=image_pull_failure or saved.image_pull_failure,
        image_crash=image_crash or saved.image_crash,
        image_unready=image_unready or saved.image_unready,
        image_hang=image_hang or saved.image_hang,
    )
    info = ensure_running(state_dir, wanted)
    click.echo(f"embedded cluster {'started' if info.started else 'already running'} at {info.url}")
    click.echo(f"state dir:  {state_dir}")
    click.echo(f"kubeconfig: {info.kubeconfig}")
    if info.config != wanted:
        click.echo(
            "note: it runs with other simulation settings; `gitdeploy cluster down` then `up` to apply them",
            err=True,
        )


@cluster.command("down")
@click.pass_context
def down(ctx: click.Context) -> None:
    """Stop the embedded cluster, keeping its state.

    Exit codes: 0 stopped or not running.

    \b
    Example:
      gitdeploy cluster down
    """
    state_dir = get_context(ctx).state_dir
    if stop(state_dir):
        click.echo(f"embedded cluster of {state_dir} stopped (state kept)")
    else:
        click.echo(f"embedded cluster of {state_dir} was not running")


def _info(running: ClusterInfo) -> dict[str, Any]:
    token = (running.state_dir / "token").read_text(encoding="utf-8").strip()
    request = urllib.request.Request(
        f"{running.url}/gitdeploy/v1/info", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=5, context=ssl_context(running.state_dir)) as response:
        data = json.loads(response.read())
    return data if isinstance(data, dict) else {}


@cluster.command("status")
@output_option()
@click.pass_context
def cluster_status(ctx: click.Context, output: str) -> None:
    """Say whether the embedded cluster runs, where, and what it holds.

    Exit codes: 0 it runs, 1 it does not run.

    \b
    Examples:
      gitdeploy cluster status
      gitdeploy --state-dir /tmp/demo cluster status -o json
    """
    state_dir = get_context(ctx).state_dir
    running = status(state_dir)
    if running is None:
        if output in MACHINE_FORMATS:
            print_data({"running": False, "stateDir": str(state_dir)}, output)
        else:
            click.echo(f"embedded cluster of {state_dir}: not running (start it with `gitdeploy cluster up`)")
        ctx.exit(1)
    info = _info(running)
    if output in MACHINE_FORMATS:
        print_data({"running": True, "pid": running.pid, **info}, output)
        return
    click.echo(f"embedded cluster of {state_dir}: running at {running.url} (pid {running.pid})")
    click.echo(f"kubeconfig: {running.kubeconfig}")
    config = running.config
    click.echo(f"pods ready after {config.pod_start_seconds:g} s, jobs end after {config.job_seconds:g} s")
    for label, patterns in (
        ("image pull failures", config.image_pull_failure),
        ("crashing images", config.image_crash),
        ("never-ready images", config.image_unready),
        ("hanging hook/deployer images", config.image_hang),
    ):
        if patterns:
            click.echo(f"{label}: {', '.join(patterns)}")
    objects = info.get("objects") or {}
    click.echo("objects: " + ", ".join(f"{name} {count}" for name, count in sorted(objects.items())))
