"""gitdeploy's commands start without the kubernetes client's generated API classes: importing
them (thousands of pydantic-checked methods, about a second) was most of a command's start-up.
Every call goes through ``RawApi.request``, still the official client's ``ApiClient`` over HTTP.
``status`` and ``history`` also skip the package's other parts (dynamic client, streams,
informers) and git. Speed itself is measured in bench/cli_startup.py, never here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import SETTINGS, sync_and_wait, web

PROBE = (
    "import sys\n"
    "from gitdeploy.cli.main import main\n"
    "try:\n"
    "    main(sys.argv[1:])\n"
    "except SystemExit as stop:\n"
    "    assert not stop.code, stop.code\n"
    "import os\n"
    "watched = tuple(os.environ['PROBE_WATCHED'].split())\n"
    "loaded = sorted(m for m in sys.modules if m.startswith(watched))\n"
    "print(loaded, file=sys.stderr)\n"
    "sys.stderr.flush()\n"
    "os._exit(0)  # as the console entry does: watches of sync --wait may still be reading\n"
)


def test_status_and_history_load_no_generated_api_class_and_no_git(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path, isolated_git_config: None
) -> None:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    env = _probe_env(tmp_path, READERS_SKIP)
    for args in (["status"], ["status", "-n", "shop", "-o", "json"], ["history", "shop/web"]):
        done = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "omplete" in done.stdout  # status: "revision 1 complete", history: "Complete"
        assert done.stderr.strip() == "[]", (args, done.stderr)
    # the probe sees what a command loads: history --revision reads git
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "history", "shop/web", "--revision", "1"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert "gitdeploy.source" in done.stderr, done.stderr


def test_a_rollout_and_a_rollback_load_no_generated_api_class(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path, isolated_git_config: None
) -> None:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push("Next", {"apps/web.yaml": web("nginx:1.26")})
    env = _probe_env(tmp_path, "kubernetes.client.api.")
    rollout = ["sync", "--repo", git_remote.url, "--wait", "--timeout", "60s"]
    for args in (rollout, ["rollback", "shop/web"], rollout):
        done = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stderr.strip().endswith("[]"), (args, done.stderr)
    history = run_cli("history", "shop/web")
    assert history.returncode == 0, history.stderr
    assert "Rollback" in history.stdout and "Complete" in history.stdout, history.stdout


READERS_SKIP = (
    "kubernetes.client.api. kubernetes.dynamic kubernetes.stream kubernetes.informer git. gitdeploy.source"
)
"""What ``status`` and ``history`` never load."""


def _probe_env(tmp_path: Path, watched: str) -> dict[str, str]:
    env = {
        **os.environ,
        "GITDEPLOY_STATE_DIR": str(tmp_path / "state"),
        "NO_COLOR": "1",
        "PROBE_WATCHED": watched,
    }
    env.pop("KUBECONFIG", None)
    return env
