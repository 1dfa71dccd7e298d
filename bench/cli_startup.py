"""How long a person waits for the ``gitdeploy`` command: ``python bench/cli_startup.py [--runs N]``.

Times (wall clock, median of ``--runs``) ``gitdeploy --version``, ``gitdeploy --help``, and
``gitdeploy status``, ``gitdeploy history`` and ``gitdeploy sync`` (one pass at a head already
synced: git read, nothing written) against the embedded cluster (its daemon up, one app synced
from a config repo made here), side by side with kubectl's ``version --client`` and
``get rs`` against the same cluster (kubectl of the real control plane's build, from
``scripts/realk8s bin``, when it was built). Not a test; the figures depend on the machine.
Targets (issue 24): ``--help``/``--version`` ≤ 0.25 s, ``status`` ≤ 0.6 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
"""


def gitdeploy_command() -> str:
    found = shutil.which("gitdeploy", path=str(Path(sys.executable).parent))
    if found is None:
        raise SystemExit("gitdeploy is not installed next to this python (run scripts/setup)")
    return found


def kubectl_command() -> str | None:
    listed = subprocess.run([str(ROOT / "scripts" / "realk8s"), "bin"], capture_output=True, text=True)
    kubectl = Path(listed.stdout.strip()) / "kubectl"
    return str(kubectl) if listed.returncode == 0 and kubectl.exists() else None


def median_seconds(command: Sequence[str], env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def config_repo(path: Path) -> None:
    (path / "apps").mkdir(parents=True)
    (path / "gitdeploy.yaml").write_text("paths: [apps]\ndefaultNamespace: shop\n")
    (path / "apps" / "web.yaml").write_text(APP)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "web"]):
        subprocess.run(["git", *args], cwd=path, check=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    gitdeploy, kubectl = gitdeploy_command(), kubectl_command()
    with tempfile.TemporaryDirectory(prefix="gitdeploy-cli-bench-") as scratch:
        state, repo = Path(scratch) / "state", Path(scratch) / "repo"
        env = {**os.environ, "GITDEPLOY_STATE_DIR": str(state), "NO_COLOR": "1",
               "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.test",
               "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.test"}  # fmt: skip
        env.pop("KUBECONFIG", None)
        config_repo(repo)
        subprocess.run([gitdeploy, "cluster", "up", "--pod-start-seconds", "0.2"], env=env, check=True)
        try:
            sync = [gitdeploy, "sync", "--repo", str(repo), "--wait"]
            subprocess.run(sync, env=env, check=True, stdout=subprocess.DEVNULL)
            rows = [
                ("gitdeploy --version", [gitdeploy, "--version"]),
                ("gitdeploy --help", [gitdeploy, "--help"]),
                ("gitdeploy status", [gitdeploy, "status"]),
                ("gitdeploy history shop/web", [gitdeploy, "history", "shop/web"]),
                ("gitdeploy sync (nothing new)", sync[:-1]),
            ]
            if kubectl is not None:
                kubeconfig = ["--kubeconfig", str(state / "kubeconfig")]
                rows += [
                    ("kubectl version --client", [kubectl, "version", "--client"]),
                    ("kubectl get rs -n shop", [kubectl, *kubeconfig, "get", "rs", "-n", "shop"]),
                ]
            print(f"{'command':<30} median of {args.runs} (s)")
            for label, command in rows:
                print(f"{label:<30} {median_seconds(command, env, args.runs):.3f}", flush=True)
            if kubectl is None:
                print("(kubectl not built: scripts/realk8s build adds its figures)")
        finally:
            subprocess.run([gitdeploy, "cluster", "down"], env=env, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
