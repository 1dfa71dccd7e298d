"""`gitdeploy plan --live` through the installed command: real git repos, the embedded cluster in the
background (fast simulated pods), apps deployed with `gitdeploy sync --wait`, then a plan of a
branch against what the cluster runs. Each test reads Given (deployed) / When (plan) / Then.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from markdown_it import MarkdownIt

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote

SETTINGS = "paths: [apps]\ndefaultNamespace: shop\n"


def web(image: str, *, replicas: int = 2, extra: str = "") -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
{extra}  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: web, image: "{image}"}}]
"""


def worker(image: str = "busybox:1.36") -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: worker}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: worker}}}}
  template:
    metadata: {{labels: {{app: worker}}}}
    spec:
      containers: [{{name: worker, image: "{image}"}}]
"""


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def deploy(run_cli: RunCli, git_remote: GitRemote, files: dict[str, str], subject: str = "Deploy") -> None:
    """Given: ``files`` pushed to main and deployed by ``gitdeploy sync --wait``."""
    git_remote.commit_and_push(subject, files)
    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert synced.returncode == 0, synced.stdout + synced.stderr


def plan_live(run_cli: RunCli, git_remote: GitRemote, head: str, *extra: str) -> tuple[int, dict[str, Any]]:
    done = run_cli("plan", "--live", "--repo", git_remote.url, "--head", head, "-o", "json", *extra)
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def by_app(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["app"]: a for a in report["apps"]}


def test_image_bump_on_a_branch_is_a_rollout_diffed_against_what_runs(
    run_cli: RunCli, git_remote: GitRemote, cluster: None
) -> None:
    # Given web (nginx:1.25) and worker deployed from main
    deploy(run_cli, git_remote, {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25"),
                                 "apps/worker.yaml": worker()})  # fmt: skip
    deployed = git_remote.head_sha()
    # and a feature branch that bumps web and adds api
    git_remote.run_git("checkout", "--quiet", "-b", "feature")
    bump = git_remote.commit_and_push("Bump web to 1.26", {"apps/web.yaml": web("nginx:1.26")}, "feature")
    git_remote.commit_and_push("Add api", {"apps/api.yaml": worker().replace("worker", "api")}, "feature")

    # When the branch is planned against the cluster
    code, report = plan_live(run_cli, git_remote, "feature")

    # Then web rolls out from what runs, api is new, worker is unchanged
    assert code == 0, report
    assert (
        report["live"] is True and report["base"]["sha"] == "" and "embedded cluster" in report["base"]["ref"]
    )
    apps = by_app(report)
    assert sorted(apps) == ["shop/api", "shop/web"]
    assert report["summary"]["unchanged"] == 1
    assert apps["shop/api"]["change"] == "add"
    assert apps["shop/web"]["change"] == "rollout"
    assert apps["shop/web"]["templateChanges"] == [
        {"scope": "container web", "field": "image", "before": "nginx:1.25", "after": "nginx:1.26"}
    ]
    assert apps["shop/web"]["strategy"]["description"].startswith("RollingUpdate, maxSurge 25% (1 pod)")
    assert "runs revision 1 (Complete)" in apps["shop/web"]["notes"]
    # the commits are those since the running revision's commit
    assert [c["sha"] for c in apps["shop/web"]["commits"]] == [bump]
    assert deployed not in {c["sha"] for c in apps["shop/web"]["commits"]}
    assert apps["shop/web"]["drift"] == []

    # and --detailed-exitcode says something changes; main itself is in sync
    assert run_cli("plan", "--live", "--repo", git_remote.url, "--head", "feature",
                   "--detailed-exitcode").returncode == 2  # fmt: skip
    in_sync = run_cli("plan", "--live", "--repo", git_remote.url, "--head", "main", "--detailed-exitcode")
    assert in_sync.returncode == 0, in_sync.stdout + in_sync.stderr
    assert "Plan: no changes; 2 app(s) unchanged." in in_sync.stdout


def test_an_app_pinned_by_an_automatic_rollback_is_manual_with_the_way_out(
    run_cli: RunCli, git_remote: GitRemote, cluster: None
) -> None:
    # Given web at nginx:1.25, then a crashing image that fails its 2 s deadline and rolls back
    settings = SETTINGS + "autoRollback: true\n"
    deploy(run_cli, git_remote, {"gitdeploy.yaml": settings, "apps/web.yaml": web("nginx:1.25")})
    crashing = web("nginx:crash", extra="  progressDeadlineSeconds: 2\n")
    git_remote.commit_and_push("Break web", {"apps/web.yaml": crashing})
    run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")  # fails, then rolls back
    history = json.loads(run_cli("history", "shop/web", "-o", "json").stdout)
    assert [(e["revision"], e["outcome"]) for e in history][:2] == [(1, "Complete"), (2, "Failed")]
    record = run_cli("status", "shop/web", "-o", "json")
    assert json.loads(record.stdout)[0]["sync"] == "Pinned", record.stdout

    # When main (still the crashing manifest) is planned live
    code, report = plan_live(run_cli, git_remote, "main", "--detailed-exitcode")

    # Then web does not roll out by itself: the pin holds, and the plan says how to end it
    assert code == 2
    (app,) = report["apps"]
    assert app["change"] == "manual"
    (reason,) = app["manualReasons"]
    assert reason.startswith(
        "pinned: rolled back to revision 1 by gitdeploy (autoRollback): revision 2 failed"
    )
    assert app["templateChanges"] == [
        {"scope": "container web", "field": "image", "before": "nginx:1.25", "after": "nginx:crash"}
    ]
    assert (
        "to roll forward: `gitdeploy deploy shop/web --latest`, or push a change to apps/web.yaml"
        in app["notes"]
    )

    # And a fix on a branch changes the manifest: the pin ends and the fix rolls out
    git_remote.run_git("checkout", "--quiet", "-b", "fix")
    git_remote.commit_and_push("Fix web", {"apps/web.yaml": web("nginx:1.27")}, "fix")
    _, fixed = plan_live(run_cli, git_remote, "fix")
    (app,) = fixed["apps"]
    assert app["change"] == "rollout"
    assert "the rollback to revision 1 ends: the manifest changed since" in app["notes"]
    assert app["templateChanges"][0]["before"] == "nginx:1.25"


def sized_web(image: str) -> str:
    """web with resources written as a person writes them, not as the API server stores them."""
    resources = "{requests: {cpu: 0.5, memory: 1024Mi}, limits: {cpu: 1000m, memory: 1.5Gi}}"
    return web(image).replace(f'image: "{image}"}}', f'image: "{image}", resources: {resources}}}')


def test_quantities_the_server_rewrote_are_no_template_change(
    run_cli: RunCli, git_remote: GitRemote, cluster: None
) -> None:
    # Given web deployed with cpu 0.5 and memory 1024Mi (which the API server stores as 500m, 1Gi)
    deploy(run_cli, git_remote, {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": sized_web("nginx:1.25")})
    # and a branch that changes only its image
    git_remote.run_git("checkout", "--quiet", "-b", "feature")
    git_remote.commit_and_push("Bump web", {"apps/web.yaml": sized_web("nginx:1.26")}, "feature")

    # When the branch is planned against the cluster
    code, report = plan_live(run_cli, git_remote, "feature")

    # Then the image is the one change: the quantities as stored equal those in git
    assert code == 0, report
    (app,) = report["apps"]
    assert app["templateChanges"] == [
        {"scope": "container web", "field": "image", "before": "nginx:1.25", "after": "nginx:1.26"}
    ]


def kube_apps(state: Path) -> Any:
    api = config.new_client_from_config(config_file=str(state / "kubeconfig"))  # type: ignore[no-untyped-call]
    return client.AppsV1Api(api)


def test_replicas_changed_by_hand_are_reported_as_drift(
    run_cli: RunCli, git_remote: GitRemote, cluster: None, tmp_path: Path
) -> None:
    # Given web deployed with 2 replicas, then scaled to 5 by hand with the kubernetes client
    deploy(run_cli, git_remote, {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    apps = kube_apps(tmp_path / "state")
    (rs,) = apps.list_namespaced_replica_set("shop", label_selector="gitdeploy.io/app=web").items
    apps.patch_namespaced_replica_set_scale(rs.metadata.name, "shop", {"spec": {"replicas": 5}})

    # When main (unchanged) is planned live
    code, report = plan_live(run_cli, git_remote, "main", "--detailed-exitcode")

    # Then web is drift, naming the ReplicaSet and both counts
    assert code == 2
    (app,) = report["apps"]
    assert app["change"] == "drift"
    assert app["drift"] == [
        f"ReplicaSet {rs.metadata.name} has 5 replica(s), revision 1 wants 2 (scaled by hand?)"
    ]
    assert app["reason"] == app["drift"][0]
    assert report["summary"]["drift"] == 1

    # and text and markdown say the same
    text = run_cli("plan", "--live", "--repo", git_remote.url, "--head", "main")
    assert text.returncode == 0, text.stderr
    assert "drift shop/web" in text.stdout and "drift: ReplicaSet" in text.stdout
    assert "Plan: 1 drift; 0 app(s) unchanged." in text.stdout
    markdown = run_cli("plan", "--live", "--repo", git_remote.url, "--head", "main", "-o", "markdown")
    html = MarkdownIt("commonmark").enable("table").render(markdown.stdout)
    assert "<summary><b>drift</b> <code>shop/web</code>" in html
    assert "<strong>Drift</strong>" in html and "has 5 replica(s), revision 1 wants 2" in html


def test_apps_only_in_the_cluster_are_orphans_and_invalid_heads_exit_1(
    run_cli: RunCli, git_remote: GitRemote, cluster: None
) -> None:
    # Given web and worker deployed
    deploy(run_cli, git_remote, {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25"),
                                 "apps/worker.yaml": worker()})  # fmt: skip
    git_remote.run_git("checkout", "--quiet", "-b", "feature")
    git_remote.run_git("rm", "--quiet", "apps/worker.yaml")
    git_remote.commit_all("Drop worker")
    git_remote.push("feature")

    # When a branch without worker is planned live
    code, report = plan_live(run_cli, git_remote, "feature")

    # Then worker is an orphan that keeps running (prune is off)
    assert code == 0
    (orphan,) = report["apps"]
    assert (orphan["app"], orphan["change"], orphan["prune"]) == ("shop/worker", "remove", False)
    assert "keeps running" in orphan["reason"]

    # And an invalid head exits 1 with the validate line
    typo = web("nginx:1.26").replace("replicas: 2", "replicas: two")
    git_remote.commit_and_push("typo", {"apps/web.yaml": typo}, "feature")
    code, report = plan_live(run_cli, git_remote, "feature")
    assert code == 1
    assert by_app(report)["shop/web"]["change"] == "invalid"
    assert by_app(report)["shop/web"]["errors"][0]["text"].startswith(
        "apps/web.yaml:5:3: shop/web: spec.replicas must be an integer"
    )


def test_live_and_base_are_exclusive(run_cli: RunCli, git_remote: GitRemote) -> None:
    git_remote.commit_and_push("Deploy", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    both = run_cli("plan", "--live", "--base", "main", "--repo", git_remote.url)
    neither = run_cli("plan", "--repo", git_remote.url)
    for done in (both, neither):
        assert done.returncode == 2 and "either --base REF" in done.stderr, done.stderr


def test_plan_without_live_needs_no_cluster(run_cli: RunCli, git_remote: GitRemote, tmp_path: Path) -> None:
    """A CI job has no cluster and no credentials: a bogus KUBECONFIG is never read, nothing starts."""
    git_remote.commit_and_push("Deploy", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    git_remote.run_git("checkout", "--quiet", "-b", "feature")
    git_remote.commit_and_push("Bump", {"apps/web.yaml": web("nginx:1.26")}, "feature")
    bogus = tmp_path / "no-such-kubeconfig"

    done = run_cli("--kubeconfig", str(bogus), "plan", "--repo", git_remote.url, "--base", "main",
                   "--head", "feature")  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "rollout shop/web" in done.stdout
    state = tmp_path / "state"
    assert not (state / "kubeconfig").exists()
    # while --live does need the cluster, and says so in one line when it cannot read its kubeconfig
    live = run_cli(
        "--kubeconfig", str(bogus), "plan", "--live", "--repo", git_remote.url, "--head", "feature"
    )
    assert live.returncode == 1 and str(bogus) in live.stderr and "Traceback" not in live.stderr
