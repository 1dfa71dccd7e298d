"""``gitdeploy status`` and ``history`` start without the kubernetes client's generated API
classes: importing them (thousands of pydantic-checked methods) was most of their start-up. They
read through ``RawApi.lister`` and ``RawApi.read_namespaced``, still the official client over
HTTP. Speed itself is measured in bench/cli_startup.py, never here."""

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
    "watched = ('kubernetes.client.api.', 'git.', 'gitdeploy.source')\n"
    "loaded = sorted(m for m in sys.modules if m.startswith(watched))\n"
    "print(loaded, file=sys.stderr)\n"
)


def test_status_and_history_load_no_generated_api_class_and_no_git(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path, isolated_git_config: None
) -> None:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    env = {**os.environ, "GITDEPLOY_STATE_DIR": str(tmp_path / "state"), "NO_COLOR": "1"}
    env.pop("KUBECONFIG", None)
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
