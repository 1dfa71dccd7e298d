"""A canary's running analysis through the real CLI: a Rollout whose analysis step measures a real
HTTP server (the ``web`` provider), a real `gitdeploy run`, and `gitdeploy status` / `gitdeploy
rollout status` showing the measurements so far, read from the canary ReplicaSet's annotations;
and the canary's steps and analysis runs counted on /metrics of a real `gitdeploy run --listen`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.argorollouts import canary_rollout
from tests.fixtures.cli import RunCli, gitdeploy_executable
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


ONCE = TEMPLATE.replace("    interval: 1h\n    count: 3\n", "")  # measured once


@contextmanager
def listening_loop(git_remote: GitRemote, tmp_path: Path) -> Iterator[str]:
    """A real `gitdeploy run --listen` (polling git hourly) for the block: its base URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "GITDEPLOY_STATE_DIR": str(tmp_path / "state"), "NO_COLOR": "1"}
    env.pop("KUBECONFIG", None)
    command = [gitdeploy_executable(), "run", "--repo", git_remote.url, "--interval", "1h"]
    command += ["--no-leader-elect", "--listen", f"127.0.0.1:{port}"]
    loop = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        loop.send_signal(signal.SIGTERM)
        _, stderr = loop.communicate(timeout=30)
    assert loop.returncode == 0, stderr


def scraped(base: str, name: str, **labels: str) -> float:
    """The sum of the samples ``name`` with ``labels`` on ``base``/metrics (0 when it cannot be read yet)."""
    try:
        text = httpx.get(f"{base}/metrics", timeout=10).text
    except httpx.TransportError:
        return 0.0
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and set(labels.items()) <= set(sample.labels.items())
    )


def test_metrics_count_the_canary_steps_and_analysis_runs_by_phase(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    with web_check(rate=0.01) as check:
        # Given shop/web deployed, its canary's analysis step measuring a real HTTP server once
        git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
        manifest = rollout("nginx:1.25", check.url).replace(TEMPLATE.format(), ONCE.format())
        git_remote.commit_and_push("web 1.25", {"apps/web.yaml": manifest})
        sync_and_wait(run_cli, git_remote)

        # When 1.26's canary passes its analysis (an error rate of 0.01) and completes
        manifest = rollout("nginx:1.26", check.url).replace(TEMPLATE.format(), ONCE.format())
        git_remote.commit_and_push("web 1.26", {"apps/web.yaml": manifest})
        with listening_loop(git_remote, tmp_path) as base:
            wait_for(lambda: scraped(base, "gitdeploy_rollouts_completed_total") == 1)

            # Then /metrics counts its 2 steps reached and 1 successful analysis run
            assert scraped(base, "gitdeploy_rollouts_completed_total") == 1
            assert scraped(base, "gitdeploy_canary_steps_total") == 2
            assert scraped(base, "gitdeploy_analysis_runs_total", phase="Successful") == 1
            assert scraped(base, "gitdeploy_analysis_runs_total", phase="Failed") == 0

        # When 1.27's canary measures an error rate of 0.5 (a new `gitdeploy run`: new counters)
        check.rate = 0.5
        manifest = rollout("nginx:1.27", check.url).replace(TEMPLATE.format(), ONCE.format())
        git_remote.commit_and_push("web 1.27", {"apps/web.yaml": manifest})
        with listening_loop(git_remote, tmp_path) as base:
            wait_for(lambda: scraped(base, "gitdeploy_rollouts_failed_total") == 1)

            # Then the failed run is counted, and the canary aborted by itself
            assert scraped(base, "gitdeploy_rollouts_failed_total") == 1
            assert scraped(base, "gitdeploy_analysis_runs_total", phase="Failed") == 1
            assert scraped(base, "gitdeploy_analysis_runs_total", phase="Successful") == 0
            assert scraped(base, "gitdeploy_canary_steps_total") == 1
        assert len(check.requests) == 2
        assert web_status(run_cli)["phase"] == "Failed"
