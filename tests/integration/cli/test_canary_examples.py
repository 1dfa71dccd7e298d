"""The Argo Rollouts examples (examples/apps, written as Argo Rollouts' docs write them) through the
real `gitdeploy` command on the embedded cluster, with no edits: they deploy at full size, and a
commit that changes one walks its canary to its `pause: {}`, where `status` says so. The examples
with analysis measure what the test stands up: a real HTTP server (``web``) and a real Prometheus,
their addresses given as Argo Rollouts users give them, as an argument's value in the Rollout."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import EXAMPLES, RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.prometheus import RunningPrometheus
from tests.fixtures.shopweb import running_loop, wait_for
from tests.fixtures.webcheck import web_check

ROLLOUTS = ("demo/example-rollout", "demo/rollouts-demo")


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def views(run_cli: RunCli) -> dict[str, dict[str, Any]]:
    shown = run_cli("status", "-o", "json")
    assert shown.returncode == 0, shown.stderr
    return {v["key"]: v for v in json.loads(shown.stdout)}


def test_the_rollout_examples_deploy_unedited_then_a_change_walks_the_canary(
    run_cli: RunCli, cluster: None, git_remote: GitRemote
) -> None:
    # Given the Rollout examples, as they are, in a git repo (test_image_tags deploys them all)
    for name in ("gitdeploy.yaml", *(f"apps/{k.split('/')[1]}.yaml" for k in ROLLOUTS)):
        (git_remote.work / name).parent.mkdir(exist_ok=True)
        shutil.copy(EXAMPLES / name, git_remote.work / name)
    git_remote.commit_all("Examples")
    git_remote.push()

    # When synced, the Rollouts deploy at full size (a first revision walks no steps)
    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "2m")
    assert synced.returncode == 0, synced.stdout + synced.stderr
    shown = views(run_cli)
    assert [(shown[k]["phase"], shown[k]["ready"], shown[k]["canary"]) for k in ROLLOUTS] == [
        ("Complete", 10, ""),
        ("Complete", 5, ""),
    ]

    # When rollouts-demo's image changes (as the getting-started guide does, blue to yellow)
    path = git_remote.work / "apps" / "rollouts-demo.yaml"
    path.write_text(path.read_text().replace("rollouts-demo:blue", "rollouts-demo:yellow"))
    git_remote.commit_all("rollouts-demo: yellow")
    git_remote.push()

    def paused_after_a_pass() -> bool:
        run_cli("sync", "--repo", git_remote.url)  # one pass (exit 1 once Suspended)
        return "paused" in views(run_cli)["demo/rollouts-demo"]["canary"]

    wait_for(paused_after_a_pass)

    # Then its canary runs 1 pod of 5 and waits at its `pause: {}`
    demo = views(run_cli)["demo/rollouts-demo"]
    assert demo["canary"].startswith("revision 2: step 2/8, paused (waiting for promote)"), demo
    assert (demo["health"], demo["upToDate"], demo["ready"]) == ("Suspended", 1, 5)


ANALYSED = ("demo/guestbook", "demo/checkout")
FILES = {"demo/guestbook": "canary-analysis.yaml", "demo/checkout": "background-analysis.yaml"}
RATIO = 'success_ratio{service="checkout"}'


def until(check: Callable[[], bool], what: str, limit: float = 300.0) -> None:
    """Wait until ``check()`` holds (a bound against a hung test, not a speed check)."""
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.5)


def recolour(work: Path, before: str, after: str) -> None:
    """Change both analysed Rollouts' image (a new template, so a canary)."""
    for name in FILES.values():
        path = work / "apps" / name
        path.write_text(path.read_text().replace(f"rollouts-demo:{before}", f"rollouts-demo:{after}"))


def phases(run_cli: RunCli) -> tuple[str, ...]:
    shown = views(run_cli)
    return tuple(shown[key]["phase"] for key in ANALYSED)


def outcomes(run_cli: RunCli) -> tuple[tuple[int, str], ...]:
    """The revision and outcome of each analysed app's last revision."""
    return tuple((e["revision"], e["outcome"]) for e in (last_revision(run_cli, k) for k in ANALYSED))


def last_revision(run_cli: RunCli, key: str) -> dict[str, Any]:
    shown = run_cli("history", key, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    entries: list[dict[str, Any]] = json.loads(shown.stdout)
    return entries[-1]


def test_the_analysis_examples_deploy_unedited_and_their_analysis_decides(
    run_cli: RunCli, cluster: None, git_remote: GitRemote, prometheus: RunningPrometheus, tmp_path: Path
) -> None:
    with web_check(rate=0.01) as check:
        # Given the analysis examples in a git repo, as they are but for the address each
        # Rollout gives its AnalysisTemplate (the args value a user sets for their cluster)
        addresses = {
            "canary-analysis.yaml": ("http://error-checker.demo:8080", check.url),
            "background-analysis.yaml": ("http://prometheus.monitoring:9090", prometheus.url),
        }
        (git_remote.work / "apps").mkdir()
        shutil.copy(EXAMPLES / "gitdeploy.yaml", git_remote.work / "gitdeploy.yaml")
        for name, (theirs, ours) in addresses.items():
            text = (EXAMPLES / "apps" / name).read_text()
            assert text.count(f"value: {theirs}\n") == 1 and text.count(theirs) == 1
            (git_remote.work / "apps" / name).write_text(text.replace(theirs, ours))
        git_remote.commit_all("Examples")
        git_remote.push()

        # When synced, both deploy at full size (a first revision walks no steps, no analysis)
        synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "2m")
        assert synced.returncode == 0, synced.stdout + synced.stderr
        assert phases(run_cli) == ("Complete", "Complete")
        assert check.requests == []

        # When both images change while the error rate is 1% and the success ratio 99%
        prometheus.expose(RATIO, 0.99)
        recolour(git_remote.work, "blue", "yellow")
        git_remote.commit_all("yellow")
        git_remote.push()
        with running_loop(git_remote, tmp_path):
            until(lambda: outcomes(run_cli) == ((2, "Complete"),) * 2, "both canaries complete")

        # Then both canaries walked their steps and their analysis to full size: the web
        # endpoint was asked its 3 times, and the background analysis measured from step 3
        assert check.requests == ["/error-rate?service=guestbook"] * 3
        for key in ANALYSED:
            entry = last_revision(run_cli, key)
            assert (entry["revision"], entry["outcome"]) == (2, "Complete"), entry

        # When the images change again while the error rate is 50% and the success ratio 50%
        check.rate = 0.5
        prometheus.expose(RATIO, 0.5)
        recolour(git_remote.work, "yellow", "green")
        git_remote.commit_all("green")
        git_remote.push()
        with running_loop(git_remote, tmp_path):
            until(lambda: outcomes(run_cli) == ((3, "Failed"),) * 2, "both canaries aborted")

        # Then each aborted by itself, naming the metric that failed and its measurements
        guestbook = last_revision(run_cli, "demo/guestbook")
        assert (guestbook["revision"], guestbook["outcome"]) == (3, "Failed")
        assert "metric 'error-rate' assessed Failed" in guestbook["message"], guestbook
        assert "measurements of error-rate: Failed 0.5" in guestbook["message"], guestbook
        checkout = last_revision(run_cli, "demo/checkout")
        assert (checkout["revision"], checkout["outcome"]) == (3, "Failed")
        assert (
            "metric 'success-rate' assessed Failed due to failed (4) > failureLimit (3)"
            in checkout["message"]
        )
        # and the stable runs at full size again
        shown = views(run_cli)
        assert [(shown[k]["ready"], shown[k]["canary"].startswith("aborted")) for k in ANALYSED] == [
            (4, True),
            (5, True),
        ], shown
