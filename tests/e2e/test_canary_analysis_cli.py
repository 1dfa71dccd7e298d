"""A canary's running analysis through the real CLI: a Rollout whose analysis step measures a real
HTTP server (the ``web`` provider), a real `gitdeploy run`, and `gitdeploy status` / `gitdeploy
rollout status` showing the measurements so far, read from the canary ReplicaSet's annotations."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.argorollouts import canary_rollout
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import SETTINGS, running_loop, sync_and_wait, wait_for, web_status
from tests.fixtures.webcheck import web_check

STEPS = """\
      - setWeight: 50
      - analysis:
          templates:
          - templateName: error-rate
          args:
          - name: address
            value: {address}
"""
TEMPLATE = """\
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: error-rate
spec:
  args:
  - name: address
  metrics:
  - name: error-rate
    interval: 1h
    count: 3
    successCondition: result < 0.05
    provider:
      web:
        url: "{{{{args.address}}}}/error-rate?service=web"
        jsonPath: "{{$.errorRate}}"
"""


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def rollout(image: str, address: str) -> str:
    manifest = canary_rollout(image, replicas=2, steps=STEPS.format(address=address))
    return manifest.replace("  namespace: shop\n", "") + TEMPLATE.format()


def test_status_shows_the_running_analysis_and_its_measurements(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    with web_check(rate=0.01) as check:
        # Given shop/web deployed, its canary analysed by a real HTTP server every hour, 3 times
        git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
        git_remote.commit_and_push("web 1.25", {"apps/web.yaml": rollout("nginx:1.25", check.url)})
        sync_and_wait(run_cli, git_remote)

        # When 1.26 is pushed and the loop reaches the analysis step, measuring once
        git_remote.commit_and_push("web 1.26", {"apps/web.yaml": rollout("nginx:1.26", check.url)})
        expected = (
            "revision 2: step 2/2, analysis error-rate; "
            "analysis error-rate: 1/3 measurements, last 0.01 (Successful)"
        )
        with running_loop(git_remote, tmp_path):
            wait_for(lambda: web_status(run_cli)["canary"] == expected)

            # Then `gitdeploy status` shows the run under way, with its measurement so far
            view = web_status(run_cli)
            assert view["canary"] == expected, view
            assert check.requests == ["/error-rate?service=web"]
            # and `gitdeploy rollout status` waits there, saying so
            waited = run_cli("rollout", "status", "shop/web", "--timeout", "2s")
            assert waited.returncode == 1, waited.stdout
            assert f"Waiting for rollout to finish: {expected}" in waited.stdout
            # and the table of `gitdeploy status` says it too
            table = run_cli("status")
            assert "analysis error-rate: 1/3 measurements" in table.stdout, table.stdout
