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
from gitdeploy.cluster.connection import Connection, connect, connect_with_token, in_cluster_available
from gitdeploy.localcluster import ClusterInfo, ensure_running
from gitdeploy.localcluster.kubeconfig import load_or_create_token

__all__ = ["ClusterTarget", "open_cluster", "resolve_target"]


@dataclass(frozen=True)
class ClusterTarget:
    """Where to connect. ``kubeconfig`` None with ``in_cluster`` True: use the service account."""

    kubeconfig: str | None
    context: str | None
    embedded: bool
    in_cluster: bool
    description: str
    running: ClusterInfo | None = None
    """The embedded cluster, when this call found it running or started it."""


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
    where = f"embedded cluster at {info.url} (state dir {ctx.state_dir})"
    return ClusterTarget(str(info.kubeconfig), None, True, False, where, info)


def open_cluster(ctx: CliContext) -> Cluster:
    """The cluster adapter for the cluster ``ctx`` points at (starting the embedded one if needed)."""
    return cluster_at(resolve_target(ctx))


def cluster_at(target: ClusterTarget) -> Cluster:
    """The cluster adapter for ``target``."""
    return Cluster(_connect(target).api, target.description)


def _connect(target: ClusterTarget) -> Connection:
    """A client for ``target``; for the running embedded cluster, straight from the address, token
    and certificate its kubeconfig holds (the kubeconfig loaders' imports are a tenth of a second
    of a command's start-up)."""
    info = target.running
    if info is None:
        return connect(target.kubeconfig, target.context)
    ca_file = info.state_dir / "tls.crt" if info.url.startswith("https:") else None
    return connect_with_token(info.url, load_or_create_token(info.state_dir), ca_file, target.description)
