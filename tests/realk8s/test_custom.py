"""The Custom strategy on the real control plane: a deployer pod of the user's performs the rollout,
as the ServiceAccount ``deployer`` that deploy/deployer.yaml ships in the managed namespace.

kwok cannot run a deployer image, so the test plays the deployer: once gitdeploy's deployer pod
runs, the test takes a token of that pod's ServiceAccount (``kubectl create token``, as the pod's
projected token is made), scales the ReplicaSet named by ``GITDEPLOY_DEPLOYMENT_NAME`` to the app's
size and the app's other ReplicaSets to 0 with kubectl, then ends the pod as its kubelet would
(a status write as admin: the deployer pod's ``EXIT_CODE`` is ``hang``, so kwok never ends it).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.core.observed import APP_LABEL, POD_ROLE_LABEL
from gitdeploy.core.rollout.hooks import DEPLOYER_ROLE, DEPLOYER_SERVICE_ACCOUNT
from gitdeploy.core.scaling.replicasets import DESIRED_REPLICAS_ANNOTATION
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.waiting import eventually
from tests.realk8s.controlplane import ControlPlane, apply_to_namespace, service_account_kubeconfig
from tests.realk8s.gitdeploy_cli import ManagedNamespace, history, synced
from tests.realk8s.kwok_stages import EXIT_CODE_VAR, HANG
from tests.realk8s.manifests import deployment_config, settings

pytestmark = pytest.mark.usefixtures("isolated_git_config")

REPLICAS = 2


def custom(exit_code: str = HANG) -> dict[str, Any]:
    """A Custom strategy whose deployer pod kwok ends by ``exit_code`` (``hang``: the test ends it)."""
    environment = [{"name": EXIT_CODE_VAR, "value": exit_code}]
    return {
        "type": "Custom",
        "customParams": {
            "image": "registry.test/deployer:1",
            "command": ["/deploy"],
            "environment": environment,
        },
    }


def worker(version: int, strategy: dict[str, Any]) -> dict[str, str]:
    return {
        "apps/worker.yaml": deployment_config("worker", f"registry.test/worker:{version}", REPLICAS, strategy)
    }


def app_pods(plane: ControlPlane, namespace: str) -> list[dict[str, Any]]:
    pods: Any = plane.get_json("pods", "-n", namespace, "-l", f"app=worker,!{POD_ROLE_LABEL}")
    return [p for p in pods["items"] if not p["metadata"].get("deletionTimestamp")]


def running_images(plane: ControlPlane, namespace: str) -> list[str]:
    return sorted(p["spec"]["containers"][0]["image"] for p in app_pods(plane, namespace))


def running_deployer(plane: ControlPlane, namespace: str) -> dict[str, Any] | None:
    pods: Any = plane.get_json("pods", "-n", namespace, "-l", f"{POD_ROLE_LABEL}={DEPLOYER_ROLE}")
    running = [p for p in pods["items"] if (p.get("status") or {}).get("phase") == "Running"]
    return running[0] if running else None


def end_pod(plane: ControlPlane, pod: dict[str, Any], exit_code: int) -> None:
    """What the kubelet writes when the pod's only container exits with ``exit_code``."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    container = pod["spec"]["containers"][0]
    terminated = {
        "exitCode": exit_code,
        "reason": "Completed" if exit_code == 0 else "Error",
        "startedAt": pod["status"].get("startTime", now),
        "finishedAt": now,
    }
    status = {
        "phase": "Succeeded" if exit_code == 0 else "Failed",
        "containerStatuses": [
            {
                "name": container["name"],
                "image": container["image"],
                "imageID": "",
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {"terminated": terminated},
            }
        ],
    }
    meta = pod["metadata"]
    plane.kubectl(
        "patch", "pod", meta["name"], "-n", meta["namespace"], "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": status}),
    )  # fmt: skip


@dataclass(frozen=True)
class Deployer:
    """kubectl as the ServiceAccount a deployer pod runs as, with a token of that account."""

    plane: ControlPlane
    namespace: str
    kubeconfig: Path

    @classmethod
    def of(cls, plane: ControlPlane, pod: dict[str, Any], directory: Path) -> Deployer:
        namespace = pod["metadata"]["namespace"]
        account = pod["spec"]["serviceAccountName"]
        kubeconfig = service_account_kubeconfig(
            plane, directory / f"{account}.kubeconfig", account, namespace
        )
        return cls(plane, namespace, kubeconfig)

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.plane.kubectl(*args, "-n", self.namespace, kubeconfig=self.kubeconfig, check=check)

    def replica_set(self, name: str) -> dict[str, Any]:
        return json.loads(self.kubectl("get", "replicaset", name, "-o", "json").stdout)  # type: ignore[no-any-return]

    def can(self, *request: str) -> bool:
        """``kubectl auth can-i VERB RESOURCE [-n NS]`` as the account: yes (0) or no (1)."""
        done = self.plane.kubectl("auth", "can-i", *request, kubeconfig=self.kubeconfig, check=False)
        assert done.returncode in (0, 1), done.stderr
        return done.returncode == 0

    def roll_out(self, pod: dict[str, Any]) -> None:
        """What a simple deployer does: the named ReplicaSet up to the app's size, once its pods
        are available the app's other ReplicaSets down to 0."""
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        new = env["GITDEPLOY_DEPLOYMENT_NAME"]
        assert env["GITDEPLOY_DEPLOYMENT_NAMESPACE"] == self.namespace
        size = self.replica_set(new)["metadata"]["annotations"][DESIRED_REPLICAS_ANNOTATION]
        self.kubectl("scale", "replicaset", new, f"--replicas={size}")
        eventually(
            lambda: self.replica_set(new).get("status", {}).get("availableReplicas") == int(size),
            f"{new} to have {size} available pods",
        )
        app = pod["metadata"]["labels"][APP_LABEL]
        listed = json.loads(
            self.kubectl("get", "replicasets", "-l", f"{APP_LABEL}={app}", "-o", "json").stdout
        )
        for old in listed["items"]:
            if old["metadata"]["name"] != new and old["spec"]["replicas"] > 0:
                self.kubectl("scale", "replicaset", old["metadata"]["name"], "--replicas=0")


@contextmanager
def syncing(gitdeploy: RunCli, repo: GitRemote, expect: int = 0) -> Iterator[None]:
    """``gitdeploy sync --wait`` running in the background while the block plays the deployer."""
    with ThreadPoolExecutor(1) as pool:
        done = pool.submit(synced, gitdeploy, repo, expect=expect, timeout="120s")
        yield
        done.result()


def play_the_deployer(plane: ControlPlane, namespace: str, directory: Path) -> dict[str, Any]:
    """Wait for the deployer pod, roll out as its ServiceAccount, end it with exit code 0."""
    pod = eventually(lambda: running_deployer(plane, namespace), "the deployer pod to run", timeout=90)
    assert pod["spec"]["serviceAccountName"] == DEPLOYER_SERVICE_ACCOUNT
    Deployer.of(plane, pod, directory).roll_out(pod)
    end_pod(plane, pod, 0)
    return pod


def deploy_version_1(
    plane: ControlPlane, namespace: str, repo: GitRemote, gitdeploy: RunCli, directory: Path
) -> None:
    repo.commit_and_push(
        "worker 1", {"gitdeploy.yaml": settings(namespace, autoRollback=False)} | worker(1, custom())
    )
    with syncing(gitdeploy, repo):
        play_the_deployer(plane, namespace, directory)


def test_a_custom_deployer_rolls_out_as_the_deployer_service_account(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    tmp_path: Path,
) -> None:
    # Given a DeploymentConfig with the Custom strategy, rolled out once by its deployer
    namespace = managed_namespace("custom")
    deploy_version_1(control_plane, namespace, git_remote, gitdeploy, tmp_path)
    assert running_images(control_plane, namespace) == ["registry.test/worker:1"] * REPLICAS

    # When a new image is committed and the deployer pod scales the new ReplicaSet up, the old down
    git_remote.commit_and_push("worker 2", worker(2, custom()))
    with syncing(gitdeploy, git_remote):
        pod = play_the_deployer(control_plane, namespace, tmp_path)

    # Then gitdeploy calls the rollout Complete, and the pods run the new image
    revisions = history(gitdeploy, f"{namespace}/worker")
    assert [r["outcome"] for r in revisions] == ["Complete", "Complete"]
    assert pod["metadata"]["name"].startswith("worker-") and pod["metadata"]["name"].endswith("-deploy")
    assert running_images(control_plane, namespace) == ["registry.test/worker:2"] * REPLICAS


def test_a_deployer_that_exits_1_fails_the_rollout_and_the_old_pods_keep_serving(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    tmp_path: Path,
) -> None:
    # Given version 1 rolled out by its deployer
    namespace = managed_namespace("custom-fail")
    deploy_version_1(control_plane, namespace, git_remote, gitdeploy, tmp_path)
    serving = sorted(p["metadata"]["name"] for p in app_pods(control_plane, namespace))

    # When version 2's deployer exits 1 without scaling anything
    git_remote.commit_and_push("worker 2", worker(2, custom(exit_code="1")))
    synced(gitdeploy, git_remote, expect=1)

    # Then the rollout failed with DeployerFailed, and the very same old pods serve
    last = history(gitdeploy, f"{namespace}/worker")[-1]
    assert (last["outcome"], last["reason"]) == ("Failed", "DeployerFailed"), last
    assert "exit code 1" in last["message"]
    assert sorted(p["metadata"]["name"] for p in app_pods(control_plane, namespace)) == serving
    assert running_images(control_plane, namespace) == ["registry.test/worker:1"] * REPLICAS


def test_the_deployer_account_may_scale_replica_sets_and_nothing_more(
    control_plane: ControlPlane, managed_namespace: ManagedNamespace, tmp_path: Path
) -> None:
    # Given a managed namespace with deploy/deployer.yaml, and another one
    namespace, other = managed_namespace("can-i"), managed_namespace("can-i-other")
    account = {"metadata": {"namespace": namespace}, "spec": {"serviceAccountName": DEPLOYER_SERVICE_ACCOUNT}}
    deployer = Deployer.of(control_plane, account, tmp_path)
    here = ("-n", namespace)

    # Then, as its ServiceAccount, it may do what a deployer does in its namespace
    for allowed in (
        ("patch", "replicasets", "--subresource=scale"),
        ("update", "replicasets", "--subresource=scale"),
        ("get", "replicasets"),
        ("patch", "replicasets"),
        ("watch", "pods"),
        ("create", "events"),
    ):
        assert deployer.can(*allowed, *here), allowed
    # And nothing more: no deletes, no new pods, no secrets, nothing in another namespace
    for refused in (
        ("delete", "pods", *here),
        ("create", "pods", *here),
        ("delete", "replicasets", *here),
        ("create", "replicasets", *here),
        ("get", "secrets", *here),
        ("get", "configmaps", *here),
        ("patch", "replicasets", "--subresource=scale", "-n", other),
        ("get", "pods", "-n", other),
        ("list", "replicasets", "-n", "gitdeploy"),
        ("list", "namespaces"),
    ):
        assert not deployer.can(*refused), refused


def test_a_missing_deployer_account_is_reported_with_the_fix(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    tmp_path: Path,
) -> None:
    # Given a managed namespace without deploy/deployer.yaml
    namespace = managed_namespace("no-deployer", deployer=False)
    git_remote.commit_and_push("worker 1", {"gitdeploy.yaml": settings(namespace)} | worker(1, custom()))

    # When gitdeploy starts the Custom rollout, the API server refuses the deployer pod
    refused = gitdeploy(
        "sync", "--repo", git_remote.url, "--wait", "--timeout", "15s", "-o", "json", timeout=120
    )

    # Then the app's status names the missing account and the command that creates it
    assert refused.returncode == 1, refused.stdout + refused.stderr
    (report,) = json.loads(refused.stdout)
    assert report["app"] == f"{namespace}/worker"
    message = report["message"]
    assert f"the ServiceAccount {namespace}/{DEPLOYER_SERVICE_ACCOUNT} it runs as does not exist" in message
    assert (
        f"sed 's/namespace: apps$/namespace: {namespace}/' deploy/deployer.yaml | kubectl apply -f -"
        in message
    )
    assert "lacks a permission" not in message  # not gitdeploy's RBAC
    assert running_deployer(control_plane, namespace) is None

    # And once the account is applied as told, the rollout goes on
    apply_to_namespace(control_plane, "deployer.yaml", namespace)
    with syncing(gitdeploy, git_remote):
        play_the_deployer(control_plane, namespace, tmp_path)
    assert [r["outcome"] for r in history(gitdeploy, f"{namespace}/worker")] == ["Complete"]
