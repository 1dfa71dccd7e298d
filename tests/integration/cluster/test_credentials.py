"""A kubeconfig's credentials are looked at again now and then, not before every request.

The client's kubeconfig loader re-reads a token that expires (an exec plugin's, an auth
provider's) 5 minutes before it does, and by itself would do so, and re-read the environment's
proxy settings, before every request. The user here is an exec plugin whose tokens have always
expired, and which counts its runs.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.cluster import connection
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.localcluster import LocalCluster

PLUGIN = """\
import json, sys
with open(sys.argv[1], "a") as runs:
    runs.write("run\\n")
print(json.dumps({
    "apiVersion": "client.authentication.k8s.io/v1beta1",
    "kind": "ExecCredential",
    "status": {"token": sys.argv[2], "expirationTimestamp": "2000-01-01T00:00:00Z"},
}))
"""


def exec_kubeconfig(tmp_path: Path, cluster: LocalCluster) -> tuple[Path, Path]:
    """A kubeconfig of ``cluster`` whose user is the counting plugin; and the file it counts in."""
    plugin, runs = tmp_path / "plugin.py", tmp_path / "runs"
    plugin.write_text(PLUGIN, encoding="utf-8")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        f"""\
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {{server: "{cluster.url}"}}
users:
- name: plugin
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: {sys.executable}
      args: ["{plugin}", "{runs}", "{cluster.token}"]
contexts:
- name: local
  context: {{cluster: local, user: plugin}}
current-context: local
""",
        encoding="utf-8",
    )
    return kubeconfig, runs


def plugin_runs(runs: Path) -> int:
    return len(runs.read_text(encoding="utf-8").splitlines())


def test_an_expiring_token_is_renewed_once_per_period_not_per_request(
    tmp_path: Path, embedded_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a kubeconfig whose exec plugin hands out tokens that have expired, renewed every 0.5 s
    monkeypatch.setattr(connection, "CREDENTIALS_REFRESH_SECONDS", 0.5)
    kubeconfig, runs = exec_kubeconfig(tmp_path, embedded_cluster)
    api: Any = connection.connect(kubeconfig).api  # the client is untyped
    try:
        cluster = Cluster(api, "plugin")
        assert plugin_runs(runs) == 1  # loading the kubeconfig

        # When gitdeploy makes ten requests in a row
        for _ in range(10):
            assert cluster.list_app_records("shop") == []

        # Then the plugin ran once more (the first request), not before each request
        assert plugin_runs(runs) == 2

        # When the period has passed, the next request renews the token again, and it works
        time.sleep(0.6)
        assert cluster.list_app_records("shop") == []
        assert plugin_runs(runs) == 3
    finally:
        api.close()
