"""The embedded cluster: a Kubernetes-API-compatible server on SQLite, with a simulated kubelet.

Public API:

* :class:`LocalCluster` — run one in process (tests): ``LocalCluster(state_dir, clock=...,
  config=...).start()`` → ``.url``, ``.token``, ``.kubeconfig_path``, ``.stats``, ``.stop()``.
* :func:`ensure_running` / :func:`stop` / :func:`status` — the background daemon of a state
  directory (``gitdeploy cluster up|down|status``, and every command with no kubeconfig).
* :class:`SimulationConfig` — pod start delay, job duration, failing image patterns.
* :class:`RequestStats` — API requests counted by ``(verb, resource)``.
* :class:`WatchWindow` — how much watch history each resource keeps (``LocalCluster(watch_window=)``).
"""

from typing import TYPE_CHECKING, Any

from gitdeploy.localcluster.config import SimulationConfig
from gitdeploy.localcluster.daemon import ClusterInfo, ensure_running, status, stop
from gitdeploy.localcluster.stats import RequestStats
from gitdeploy.localcluster.store import WatchWindow

if TYPE_CHECKING:
    from gitdeploy.localcluster.server import LocalCluster


def __getattr__(name: str) -> Any:
    """:class:`LocalCluster` is imported when first used: the commands that only reach the daemon
    (every command on the embedded cluster) do not load the server."""
    if name == "LocalCluster":
        from gitdeploy.localcluster.server import LocalCluster

        return LocalCluster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ClusterInfo",
    "LocalCluster",
    "RequestStats",
    "SimulationConfig",
    "WatchWindow",
    "ensure_running",
    "status",
    "stop",
]
