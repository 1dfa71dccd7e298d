"""``gitdeploy sync`` when a rollout's write meets a ReplicaSet changed since its pass read it: the
real command, on the embedded cluster through a fault proxy that answers the ReplicaSet writes the
way kube-apiserver answers a write at an outdated resourceVersion (409 Conflict). Such a pass
comes to no verdict; sync passes over the app again, and names it in its answer either way, so it
never leaves an app out or exits 0 for a rollout it did not do."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gitdeploy.localcluster import LocalCluster, SimulationConfig
from tests.fixtures.cli import RunCli
from tests.fixtures.faultproxy import Fault, FaultProxy
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.manifests import deployment
from tests.fixtures.syncfaults import images, sync, write_at_a_version

pytestmark = pytest.mark.usefixtures("isolated_git_config")

SETTINGS = "paths: [apps]\ndefaultNamespace: shop\nallowedNamespaces: [shop]\n"
AT_A_VERSION = write_at_a_version("shop")


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[FaultProxy, Path, Path]]:
    """An embedded cluster on the system clock (pods ready in 0.2 s), a fault proxy in front of it,
    and two kubeconfigs: through the proxy, and straight to the cluster."""
    config = SimulationConfig(pod_start_seconds=0.2)
    with LocalCluster(tmp_path / "cluster", config=config) as cluster:
        kubeconfig = yaml.safe_load(cluster.kubeconfig_path.read_text())
        server = urllib.parse.urlsplit(cluster.url)
        assert server.hostname and server.port, cluster.url
        with FaultProxy((server.hostname, server.port)) as fault_proxy:
            kubeconfig["clusters"][0]["cluster"]["server"] = fault_proxy.url
            through = tmp_path / "through-proxy.kubeconfig"
            through.write_text(yaml.safe_dump(kubeconfig))
            yield fault_proxy, through, cluster.kubeconfig_path


@pytest.fixture
def under_way(run_cli: RunCli, git_remote: GitRemote, proxy: tuple[FaultProxy, Path, Path]) -> None:
    """Given web and api of two pods each at revision 1, then web's rollout to nginx:1.26 begun by a
    ``sync`` without --wait (its next step scales a ReplicaSet, at the version its pass read)."""
    files = {f"apps/{n}.yaml": deployment(n, "shop", "nginx:1.25", replicas=2) for n in ("web", "api")}
    git_remote.commit_and_push("apps", {"gitdeploy.yaml": SETTINGS, **files})
    code, rows, err = sync(run_cli, proxy[1], git_remote, "--wait", "--timeout", "60s")
    assert code == 0 and {row["sync"] for row in rows.values()} == {"Synced"}, (rows, err)
    bumped = deployment("web", "shop", "nginx:1.26", replicas=2)
    git_remote.commit_and_push("web: 1.26", {"apps/web.yaml": bumped})
    code, rows, err = sync(run_cli, proxy[1], git_remote)
    assert (rows["shop/web"]["revision"], rows["shop/web"]["sync"]) == (2, "OutOfSync"), (rows, err)


@pytest.mark.usefixtures("under_way")
@pytest.mark.parametrize("wait", [True, False], ids=["wait", "no-wait"])
def test_a_write_refused_once_for_a_stale_read_is_passed_over_again(
    run_cli: RunCli, git_remote: GitRemote, proxy: tuple[FaultProxy, Path, Path], wait: bool
) -> None:
    fault_proxy, kubeconfig, direct = proxy
    # When the next sync's first write of a ReplicaSet meets a change since its pass read it
    fault_proxy.set(Fault.ANSWER, status=409, only=AT_A_VERSION, times=1)
    code, rows, err = sync(run_cli, kubeconfig, git_remote, *(["--wait", "--timeout", "60s"] if wait else []))

    # Then the refusal happened, and sync passed over web again and names it in its answer
    assert fault_proxy.answered[409] == 1
    assert set(rows) == {"shop/api", "shop/web"}, (rows, err)
    assert rows["shop/web"]["revision"] == 2, rows
    if wait:  # ... and, waiting, saw its rollout to the end
        assert code == 0 and rows["shop/web"]["sync"] == "Synced", (rows, err)
        assert images(run_cli, direct)["shop/web"] == (2, ["nginx:1.26"], 2)
    else:
        assert code == 1 and rows["shop/web"]["sync"] == "OutOfSync", (rows, err)


@pytest.mark.usefixtures("under_way")
@pytest.mark.parametrize("wait", [True, False], ids=["wait", "no-wait"])
def test_writes_refused_every_time_make_sync_name_the_app_and_exit_1(
    run_cli: RunCli, git_remote: GitRemote, proxy: tuple[FaultProxy, Path, Path], wait: bool
) -> None:
    fault_proxy, kubeconfig, direct = proxy
    before = images(run_cli, direct)["shop/web"]
    # When every write of a ReplicaSet meets a change since its pass read it
    fault_proxy.set(Fault.ANSWER, status=409, only=AT_A_VERSION)
    code, rows, err = sync(run_cli, kubeconfig, git_remote, *(["--wait", "--timeout", "8s"] if wait else []))

    # Then sync exits 1 with a row for web that says no pass came to a verdict, and why
    assert code == 1, (rows, err)
    assert set(rows) == {"shop/api", "shop/web"}, (rows, err)
    web = rows["shop/web"]
    assert (web["sync"], web["health"]) == ("Unknown", "Unknown"), web
    assert "ReplicaSet web-" in web["message"] and "changed since" in web["message"], web
    assert rows["shop/api"]["sync"] == "Synced"
    # ... and nothing of web changed
    fault_proxy.set(Fault.PASS)
    assert images(run_cli, direct)["shop/web"] == before
