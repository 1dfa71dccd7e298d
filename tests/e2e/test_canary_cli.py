"""A canary through the real CLI: a Rollout in git, a real `gitdeploy run`, and
`gitdeploy rollout promote` / `gitdeploy rollout abort` on the embedded cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from gitdeploy.core.canarystate import CANARY_STEP_ANNOTATION
from tests.fixtures.argorollouts import canary_rollout
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import SETTINGS, running_loop, sync_and_wait, wait_for, web_history, web_status

STEPS = """\
      - setWeight: 50
      - pause: {}
"""


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def rollout(image: str) -> str:
    return canary_rollout(image, replicas=2, steps=STEPS).replace("  namespace: shop\n", "")


def replica_sets(tmp_path: Path) -> dict[str, tuple[int, str]]:
    """``{name: (spec.replicas, canary step annotation)}`` of shop's ReplicaSets, read with
    the official client (what `kubectl get rs -o yaml` shows)."""
    api = config.new_client_from_config(str(tmp_path / "state" / "kubeconfig"))  # type: ignore[no-untyped-call]
    try:
        found: Any = client.AppsV1Api(api).list_namespaced_replica_set("shop")
    finally:
        api.close()
    return {
        rs.metadata.name: (rs.spec.replicas, (rs.metadata.annotations or {}).get(CANARY_STEP_ANNOTATION, ""))
        for rs in found.items
    }


def at_pause(tmp_path: Path, revision: int) -> bool:
    """The canary of ``revision`` reached its `pause: {}` (step index 1) at 50%: 1 pod and 1."""
    found = replica_sets(tmp_path).values()
    return (1, f"{revision}:1") in found and sum(size for size, _ in found) == 2


def test_promote_and_abort_a_canary_with_the_cli(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    # Given shop/web, a Rollout, deployed (its first revision goes to full size at once)
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    git_remote.commit_and_push("web 1.25", {"apps/web.yaml": rollout("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    assert web_status(run_cli)["phase"] == "Complete"

    # Nothing to promote while no canary runs
    refused = run_cli("rollout", "promote", "shop/web")
    assert refused.returncode == 1 and "no canary in progress to promote" in refused.stderr

    # When 1.26 is pushed, the loop walks the canary to its `pause: {}`
    git_remote.commit_and_push("web 1.26", {"apps/web.yaml": rollout("nginx:1.26")})
    with running_loop(git_remote, tmp_path):
        wait_for(lambda: at_pause(tmp_path, 2) and web_status(run_cli)["health"] == "Suspended")
        assert at_pause(tmp_path, 2)
        # and `gitdeploy status` says where it waits (Suspended, as Argo CD tells a paused Rollout)
        view = web_status(run_cli)
        assert view["health"] == "Suspended", view
        assert view["message"].startswith("revision 2: step 2/2, paused (waiting for promote)"), view
        assert view["canary"] == view["message"]
        # and `gitdeploy rollout status` keeps waiting there, saying so, until its timeout
        waited = run_cli("rollout", "status", "shop/web", "--timeout", "2s")
        assert waited.returncode == 1, waited.stdout
        assert (
            "Waiting for rollout to finish: revision 2: step 2/2, paused (waiting for promote)"
            in waited.stdout
        )
        assert "successfully rolled out" not in waited.stdout
        assert "timed out waiting for the rollout of shop/web at revision 2: step 2/2" in waited.stderr

        # and someone promotes it
        done = run_cli("rollout", "promote", "web", "-n", "shop")
        assert done.returncode == 0, done.stderr
        assert "shop/web: revision 2's canary promoted past step 2" in done.stdout

        # Then the canary completes
        wait_for(lambda: web_status(run_cli)["phase"] == "Complete")
    assert [(e["revision"], e["outcome"]) for e in web_history(run_cli)] == [(1, "Complete"), (2, "Complete")]
    # and history says who promoted its pause
    shown = run_cli("history", "shop/web")
    assert "promoted step 2 by" in shown.stdout and web_history(run_cli)[1]["canary"].startswith(
        "all 2 steps"
    )

    # When 1.27 is pushed and its canary aborted at the pause
    pushed = git_remote.commit_and_push("web 1.27", {"apps/web.yaml": rollout("nginx:1.27")})
    with running_loop(git_remote, tmp_path):
        wait_for(lambda: at_pause(tmp_path, 3))
        assert at_pause(tmp_path, 3)
        done = run_cli("rollout", "abort", "shop/web")
        assert done.returncode == 0, done.stderr
        assert "aborting revision 3's canary at step 2" in done.stdout
        wait_for(lambda: web_status(run_cli)["phase"] == "Failed")

    # Then revision 3 failed as aborted, 1.26 runs at full size, and git is unchanged
    last = web_history(run_cli)[-1]
    assert (last["revision"], last["outcome"]) == (3, "Failed")
    assert "aborted by" in last["message"]
    assert "; aborted by" in last["canary"]
    names = {e["revision"]: e["replicaSet"] for e in web_history(run_cli)}
    sizes = {name: size for name, (size, _) in replica_sets(tmp_path).items()}
    assert (sizes[names[1]], sizes[names[2]], sizes[names[3]]) == (0, 2, 0)
    assert git_remote.remote_sha() == pushed
