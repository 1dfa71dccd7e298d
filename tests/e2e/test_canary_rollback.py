"""Rollback and ``git revert`` of an Argo Rollouts canary, as for a Deployment, through the real
CLI on a real git repo and the embedded cluster: the rollback is a revision of its own that runs
the earlier template (pinned against git until the manifest changes), and a revert commit rolls
the earlier template out as a new canary."""

from __future__ import annotations

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import SETTINGS, sync_and_wait, web_history, web_status


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def rollout(image: str) -> str:
    """shop/web as a Rollout whose canary walks two weights without pauses (so `sync --wait`
    follows it to its end)."""
    return f"""\
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {{name: web}}
spec:
  replicas: 4
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: web, image: "{image}"}}]
  strategy:
    canary:
      steps:
      - setWeight: 25
      - setWeight: 50
"""


def two_releases(git_remote: GitRemote, run_cli: RunCli) -> None:
    """Given shop/web's Rollout deployed at nginx 1.25, then canaried to 1.26 and complete."""
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    for tag in ("1.25", "1.26"):
        git_remote.commit_and_push(f"web {tag}", {"apps/web.yaml": rollout(f"nginx:{tag}")})
        sync_and_wait(run_cli, git_remote)
    assert [(e["revision"], e["outcome"]) for e in web_history(run_cli)] == [(1, "Complete"), (2, "Complete")]


def images(entry: dict[str, object]) -> object:
    return entry["images"]


def test_a_canary_rolls_back_to_the_earlier_template_and_stays_pinned_until_git_changes(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    two_releases(git_remote, run_cli)
    before = web_history(run_cli)

    # When the canary app is rolled back
    done = run_cli("rollback", "shop/web", "-m", "1.26 breaks checkout")
    assert done.returncode == 0, done.stderr
    assert "image: nginx:1.26 -> nginx:1.25" in done.stdout
    sync_and_wait(run_cli, git_remote)

    # Then revision 3 runs revision 1's template on revision 1's ReplicaSet, and is pinned
    last = web_history(run_cli)[-1]
    assert (last["revision"], last["cause"], last["outcome"]) == (3, "Rollback", "Complete")
    assert (last["rolledBackFrom"], last["rolledBackTo"]) == (2, 1)
    assert last["replicaSet"] == before[0]["replicaSet"]
    assert images(last) == [{"container": "web", "image": "nginx:1.25"}]
    view = web_status(run_cli)
    assert (view["revision"], view["sync"], view["health"]) == (3, "Pinned", "Healthy")
    assert (view["ready"], view["replicas"]) == (4, 4)

    # and a pass over the unchanged manifest does not roll forward
    git_remote.commit_and_push("unrelated", {"README.md": "docs\n"})
    sync_and_wait(run_cli, git_remote)
    assert [e["revision"] for e in web_history(run_cli)] == [1, 2, 3]

    # When a commit changes the Rollout, it rolls forward as a canary again
    git_remote.commit_and_push("web 1.27", {"apps/web.yaml": rollout("nginx:1.27")})
    sync_and_wait(run_cli, git_remote)
    last = web_history(run_cli)[-1]
    assert (last["revision"], last["cause"], last["outcome"]) == (4, "ConfigChange", "Complete")
    assert images(last) == [{"container": "web", "image": "nginx:1.27"}]
    # and, as in Argo Rollouts without a rollbackWindow, the rollback and the roll forward each
    # walked the canary's steps (the first revision went to full size at once)
    assert [(e["revision"], e["canary"]) for e in web_history(run_cli)] == [
        (1, ""),
        (2, "all 2 steps"),
        (3, "all 2 steps"),
        (4, "all 2 steps"),
    ]
    assert web_status(run_cli)["sync"] == "Synced"


def test_git_revert_of_a_canary_rolls_the_earlier_template_out_as_a_new_revision(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    two_releases(git_remote, run_cli)
    before = web_history(run_cli)

    # When the rollback is written to git as a revert commit and the loop deploys it
    done = run_cli("rollback", "shop/web", "--git-revert", "--repo", git_remote.url, "--push")
    assert done.returncode == 0, done.stdout + done.stderr
    sync_and_wait(run_cli, git_remote)

    # Then the revert is a ConfigChange revision back on revision 1's template, not pinned
    last = web_history(run_cli)[-1]
    assert (last["revision"], last["cause"], last["outcome"]) == (3, "ConfigChange", "Complete")
    assert images(last) == [{"container": "web", "image": "nginx:1.25"}]
    assert last["replicaSet"] == before[0]["replicaSet"]
    view = web_status(run_cli)
    assert (view["revision"], view["sync"], view["ready"]) == (3, "Synced", 4)
