"""``gitdeploy sync`` when a rollout's write meets a ReplicaSet changed since its pass read it, on
the real control plane as deploy/'s ServiceAccount (the embedded cluster's twin is
tests/faults/test_sync_stale_read_faults.py).

To see the requests, gitdeploy talks plain HTTP to ``kubectl proxy`` (the control plane's kubectl,
with the ServiceAccount's kubeconfig: every request reaches kube-apiserver as that account)
through the fault proxy, which answers a write of a ReplicaSet at the resourceVersion its writer
read with 409 Conflict, as kube-apiserver answers one whose object changed since. sync passes over
the app again; it names the app in its answer either way, never exits 0 for a rollout it did not
do, and a refused write changes nothing.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitdeploy.core.observed import APP_LABEL
from tests.fixtures.cli import RunCli
from tests.fixtures.faultproxy import Fault, FaultProxy
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.syncfaults import images, sync, write_at_a_version
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.gitdeploy_cli import ManagedNamespace, wait_for
from tests.realk8s.manifests import deployment, settings

pytestmark = pytest.mark.usefixtures("isolated_git_config")


@pytest.fixture
def proxy(
    control_plane: ControlPlane, gitdeploy_kubeconfig: Path, tmp_path: Path
) -> Iterator[tuple[FaultProxy, Path]]:
    """``kubectl proxy`` as deploy/'s ServiceAccount, the fault proxy in front of it, and a
    kubeconfig that reaches kube-apiserver through both."""
    served = subprocess.Popen(
        [str(control_plane.bin / "kubectl"), "--kubeconfig", str(gitdeploy_kubeconfig), "proxy", "--port=0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert served.stdout is not None
        first = served.stdout.readline()  # "Starting to serve on 127.0.0.1:PORT"
        assert "Starting to serve on" in first, first
        host, port = first.split()[-1].rsplit(":", 1)
        with FaultProxy((host, int(port))) as fault_proxy:
            config = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "proxied", "cluster": {"server": fault_proxy.url}}],
                "users": [{"name": "proxied", "user": {}}],
                "contexts": [{"name": "proxied", "context": {"cluster": "proxied", "user": "proxied"}}],
                "current-context": "proxied",
            }
            through = tmp_path / "through-proxy.kubeconfig"
            through.write_text(json.dumps(config))
            yield fault_proxy, through
    finally:
        served.kill()
        served.wait(timeout=30)


def replica_sets(control_plane: ControlPlane, namespace: str, app: str) -> dict[str, tuple[int, int, int]]:
    """Each ReplicaSet of ``app`` as kube-apiserver holds it: its generation, ``spec.replicas``
    and available pods (read as admin)."""
    listed = control_plane.kubectl("get", "rs", "-n", namespace, "-l", f"{APP_LABEL}={app}", "-o", "json")
    return {
        rs["metadata"]["name"]: (
            rs["metadata"]["generation"],
            rs["spec"].get("replicas", 0),
            rs.get("status", {}).get("availableReplicas", 0),
        )
        for rs in json.loads(listed.stdout)["items"]
    }


@pytest.fixture
def under_way(
    control_plane: ControlPlane,
    run_cli: RunCli,
    git_remote: GitRemote,
    managed_namespace: ManagedNamespace,
    proxy: tuple[FaultProxy, Path],
) -> str:
    """Given web and api of two pods each at revision 1, then web's rollout to a new image begun by
    a ``sync`` without --wait, and its new pod available (gitdeploy's next step scales a
    ReplicaSet, at the version its pass read); returns the namespace."""
    namespace = managed_namespace("stale")
    files = {f"apps/{n}.yaml": deployment(n, f"registry.test/{n}:1.0", 2) for n in ("web", "api")}
    git_remote.commit_and_push("apps", {"gitdeploy.yaml": settings(namespace), **files})
    code, rows, err = sync(run_cli, proxy[1], git_remote, "--wait", "--timeout", "120s")
    assert code == 0 and {row["sync"] for row in rows.values()} == {"Synced"}, (rows, err)
    git_remote.commit_and_push("web 1.1", {"apps/web.yaml": deployment("web", "registry.test/web:1.1", 2)})
    code, rows, err = sync(run_cli, proxy[1], git_remote)
    web = rows[f"{namespace}/web"]
    assert (web["revision"], web["sync"]) == (2, "OutOfSync"), (
        rows,
        err,
    )
    # ... and its new pod available: the rollout waits for gitdeploy's next write, no longer for a pod
    wait_for(
        "web's new pod available",
        lambda: all(
            available == replicas
            for _, replicas, available in replica_sets(control_plane, namespace, "web").values()
        ),
    )
    return namespace


@pytest.mark.parametrize("wait", [True, False], ids=["wait", "no-wait"])
def test_a_write_refused_once_for_a_stale_read_is_passed_over_again(
    run_cli: RunCli,
    gitdeploy_kubeconfig: Path,
    git_remote: GitRemote,
    proxy: tuple[FaultProxy, Path],
    under_way: str,
    wait: bool,
) -> None:
    fault_proxy, kubeconfig = proxy
    web = f"{under_way}/web"
    # When the next sync's first write of a ReplicaSet meets a change since its pass read it
    fault_proxy.set(Fault.ANSWER, status=409, only=write_at_a_version(under_way), times=1)
    waiting = ["--wait", "--timeout", "120s"] if wait else []
    code, rows, err = sync(run_cli, kubeconfig, git_remote, *waiting)

    # Then the refusal happened, and sync passed over web again and names it in its answer
    assert fault_proxy.answered[409] == 1
    assert set(rows) == {f"{under_way}/api", web}, (rows, err)
    assert rows[web]["revision"] == 2, rows
    if wait:  # ... and, waiting, saw its rollout to the end
        assert code == 0 and rows[web]["sync"] == "Synced", (rows, err)
        shown = images(run_cli, gitdeploy_kubeconfig, "-n", under_way)[web]
        assert shown == (2, ["registry.test/web:1.1"], 2)
    else:
        assert code == 1 and rows[web]["sync"] == "OutOfSync", (rows, err)


def test_writes_refused_every_time_make_sync_name_the_app_and_exit_1(
    run_cli: RunCli,
    control_plane: ControlPlane,
    git_remote: GitRemote,
    proxy: tuple[FaultProxy, Path],
    under_way: str,
) -> None:
    fault_proxy, kubeconfig = proxy
    web = f"{under_way}/web"

    def specs() -> dict[str, tuple[int, int]]:  # each ReplicaSet's generation and spec.replicas
        return {name: rs[:2] for name, rs in replica_sets(control_plane, under_way, "web").items()}

    before = specs()
    # When every write of a ReplicaSet meets a change since its pass read it
    fault_proxy.set(Fault.ANSWER, status=409, only=write_at_a_version(under_way))
    code, rows, err = sync(run_cli, kubeconfig, git_remote)

    # Then sync exits 1 with a row for web that says no pass came to a verdict, and why
    assert code == 1, (rows, err)
    assert (rows[web]["sync"], rows[web]["health"]) == ("Unknown", "Unknown"), rows[web]
    assert "ReplicaSet web-" in rows[web]["message"] and "changed since" in rows[web]["message"], rows[web]
    assert rows[f"{under_way}/api"]["sync"] == "Synced"
    # ... and nothing of web changed on kube-apiserver
    assert fault_proxy.answered[409] >= 1
    assert specs() == before
