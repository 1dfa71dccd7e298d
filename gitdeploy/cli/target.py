"""Which cluster a command acts on: a real one only when told to, else the embedded cluster.

Order: ``--kubeconfig``/``KUBECONFIG`` (with ``--context``), ``--context`` alone (the default
kubeconfig), the in-cluster service account; otherwise the embedded cluster of the state
directory, started if needed. Every command prints :attr:`ClusterTarget.description`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gitdeploy.cli.context import CliContext
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.cluster.connection import connect, in_cluster_available
from gitdeploy.localcluster import ensure_running

__all__ = ["ClusterTarget", "open_cluster", "resolve_target"]


@dataclass(frozen=True)
class ClusterTarget:
    """Where to connect. ``kubeconfig`` None with ``in_cluster`` True: use the service account."""

    kubeconfig: str | None
    context: str | None
    embedded: bool
    in_cluster: bool
    description: str


def resolve_target(ctx: CliContext, *, start_embedded: bool = True) -> ClusterTarget:
    """The cluster ``ctx`` points at; starts the embedded cluster unless ``start_embedded`` is False."""
    if ctx.kubeconfig:
        where = f"cluster of kubeconfig {ctx.kubeconfig}"
        return ClusterTarget(
            ctx.kubeconfig,
            ctx.kube_context,
            embedded=False,
            in_cluster=False,
            description=where + (f" (context {ctx.kube_context})" if ctx.kube_context else ""),
        )
    if ctx.kube_context:
        default = str(Path.home() / ".kube" / "config")
        return ClusterTarget(
            default, ctx.kube_context, False, False, f"cluster of context {ctx.kube_context} in {default}"
        )
    if in_cluster_available():
        return ClusterTarget(None, None, False, True, "in-cluster service account")
    kubeconfig = ctx.state_dir / "kubeconfig"
    if not start_embedded:
        return ClusterTarget(str(kubeconfig), None, True, False, f"embedded cluster of {ctx.state_dir}")
    info = ensure_running(ctx.state_dir)
    return ClusterTarget(
        str(info.kubeconfig), None, True, False, f"embedded cluster at {info.url} (state dir {ctx.state_dir})"
    )


def open_cluster(ctx: CliContext) -> Cluster:
    """The cluster adapter for the cluster ``ctx`` points at (starting the embedded one if needed)."""
    target = resolve_target(ctx)
    connection = connect(target.kubeconfig, target.context)
    return Cluster(connection.api, target.description)
