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

from gitdeploy.localcluster.config import SimulationConfig
from gitdeploy.localcluster.daemon import ClusterInfo, ensure_running, status, stop
from gitdeploy.localcluster.server import LocalCluster
from gitdeploy.localcluster.stats import RequestStats
from gitdeploy.localcluster.store import WatchWindow

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
