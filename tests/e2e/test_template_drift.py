"""Hand edits of a ReplicaSet's pod template (issue 21), through the real CLI on the embedded
cluster: ``status`` tells them as the cluster shows them (OutOfSync), a pass restores the template
git's revision recorded and replaces the pods made from the edited one, with a ``DriftCorrected``
event naming what it undid; a rollback to a revision whose ReplicaSet was edited by hand deploys
the revision's recorded template, not the edited one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.drift import deploy_web, drift_events, run_on_watches, state_apis, web_view
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import web
from tests.fixtures.waiting import eventually


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def _replica_set(tmp_path: Path, image: str) -> str:
    """The ReplicaSet of shop/web whose template runs ``image``."""
    with state_apis(tmp_path) as (apps, _):
        found: Any = apps.list_namespaced_replica_set("shop", label_selector="gitdeploy.io/app=web")
        [named] = [r.metadata.name for r in found.items if r.spec.template.spec.containers[0].image == image]
        return str(named)


def _edit_template(tmp_path: Path, name: str, patch: dict[str, Any]) -> None:
    """``kubectl edit rs NAME``: a strategic merge patch of its pod template."""
    with state_apis(tmp_path) as (apps, _):
        apps.patch_namespaced_replica_set(name, "shop", {"spec": {"template": patch}})


def _template(tmp_path: Path, name: str) -> Any:
    with state_apis(tmp_path) as (apps, _):
        return apps.read_namespaced_replica_set(name, "shop").spec.template


def _pod_images(tmp_path: Path) -> list[str]:
    """The images of shop/web's pods that are not being deleted."""
    with state_apis(tmp_path) as (_, core):
        found: Any = core.list_namespaced_pod("shop", label_selector="app=web")
        return sorted(
            str(p.spec.containers[0].image) for p in found.items if p.metadata.deletion_timestamp is None
        )


def _replace_a_pod(tmp_path: Path) -> None:
    """Delete one pod: the ReplicaSet controller makes its replacement from the template it has now."""
    with state_apis(tmp_path) as (_, core):
        found: Any = core.list_namespaced_pod("shop", label_selector="app=web")
        core.delete_namespaced_pod(found.items[0].metadata.name, "shop", grace_period_seconds=0)


def _sync(run_cli: RunCli, git_remote: GitRemote) -> subprocess.CompletedProcess[str]:
    done = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_a_hand_edited_image_is_out_of_sync_then_restored_and_its_pods_replaced(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    # Given shop/web deployed from git at nginx:1.25
    deploy_web(git_remote, run_cli)
    name = _replica_set(tmp_path, "nginx:1.25")

    # When someone edits its ReplicaSet's image and one pod is made from the edited template
    _edit_template(tmp_path, name, {"spec": {"containers": [{"name": "web", "image": "nginx:9.9"}]}})
    _replace_a_pod(tmp_path)
    eventually(lambda: "nginx:9.9" in _pod_images(tmp_path), "a pod made from the edited template")

    # Then status says the cluster does not run what git says, and why
    view = web_view(run_cli)
    assert view["sync"] == "OutOfSync", view
    assert f"{name}: its pod template was changed by hand" in view["message"]

    # And a pass restores the recorded template, replaces the edited pod and says what it undid
    _sync(run_cli, git_remote)
    assert _template(tmp_path, name).spec.containers[0].image == "nginx:1.25"
    eventually(lambda: _pod_images(tmp_path) == ["nginx:1.25", "nginx:1.25"], "the edited pod replaced")
    [event] = drift_events(tmp_path)
    assert event.startswith(f"{name}: its pod template was changed by hand (container web image: "
                            "nginx:1.25 -> nginx:9.9); restored"), event  # fmt: skip
    view = eventually(lambda: (v := web_view(run_cli))["ready"] == 2 and v, "the pods ready")
    assert (view["sync"], view["health"]) == ("Synced", "Healthy")


def test_run_undoes_a_hand_edited_label_and_env_at_once(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    deploy_web(git_remote, run_cli)
    name = _replica_set(tmp_path, "nginx:1.25")
    with run_on_watches(git_remote, tmp_path):
        _edit_template(
            tmp_path,
            name,
            {
                "metadata": {"labels": {"tier": "edited"}},
                "spec": {"containers": [{"name": "web", "env": [{"name": "MODE", "value": "hand"}]}]},
            },
        )
        [event] = eventually(lambda: drift_events(tmp_path), "a DriftCorrected event", 30)
        assert "labels.tier: (none) -> edited" in event and "env.MODE: (none) -> hand" in event, event
        template = _template(tmp_path, name)
        assert "tier" not in template.metadata.labels and not template.spec.containers[0].env
        view = eventually(lambda: (v := web_view(run_cli))["sync"] == "Synced" and v, "status Synced", 30)
        assert view["health"] == "Healthy"


def test_rollback_to_a_hand_edited_replica_set_deploys_the_recorded_template(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    # Given revision 1 (nginx:1.25) and revision 2 (nginx:1.26), and revision 1's ReplicaSet edited
    deploy_web(git_remote, run_cli)
    old = _replica_set(tmp_path, "nginx:1.25")
    git_remote.commit_and_push("web 1.26", {"apps/web.yaml": web("nginx:1.26")})
    _sync(run_cli, git_remote)
    _edit_template(tmp_path, old, {"spec": {"containers": [{"name": "web", "image": "nginx:6.6"}]}})

    # When the app is rolled back to revision 1
    done = run_cli("rollback", "shop/web", "--to-revision", "1", "--repo", git_remote.url)
    assert done.returncode == 0, done.stdout + done.stderr
    _sync(run_cli, git_remote)

    # Then its pods run the template revision 1 recorded, in the ReplicaSet it had
    assert _template(tmp_path, old).spec.containers[0].image == "nginx:1.25"
    eventually(lambda: _pod_images(tmp_path) == ["nginx:1.25", "nginx:1.25"], "revision 1's pods")
    view = web_view(run_cli)
    assert (view["sync"], view["revision"]) == ("Pinned", 3), view
