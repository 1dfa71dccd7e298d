"""``python -m gitdeploy.localcluster serve --state-dir D [knobs]``: run the embedded cluster daemon.

Normally started by :func:`gitdeploy.localcluster.daemon.ensure_running` (``gitdeploy cluster up``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gitdeploy.localcluster.config import SimulationConfig
from gitdeploy.localcluster.daemon import run_daemon


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m gitdeploy.localcluster")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the embedded cluster of a state directory")
    serve.add_argument("--state-dir", type=Path, required=True)
    serve.add_argument("--pod-start-seconds", type=float, default=None)
    serve.add_argument("--job-seconds", type=float, default=None)
    serve.add_argument("--image-pull-failure", action="append", default=None)
    serve.add_argument("--image-crash", action="append", default=None)
    serve.add_argument("--image-unready", action="append", default=None)
    serve.add_argument("--image-hang", action="append", default=None)
    args = parser.parse_args(argv)
    saved = SimulationConfig.load(args.state_dir / "simulation.json") or SimulationConfig()
    config = SimulationConfig(
        pod_start_seconds=saved.pod_start_seconds
        if args.pod_start_seconds is None
        else args.pod_start_seconds,
        job_seconds=saved.job_seconds if args.job_seconds is None else args.job_seconds,
        image_pull_failure=tuple(args.image_pull_failure or saved.image_pull_failure),
        image_crash=tuple(args.image_crash or saved.image_crash),
        image_unready=tuple(args.image_unready or saved.image_unready),
        image_hang=tuple(args.image_hang or saved.image_hang),
    )
    run_daemon(args.state_dir, config)


if __name__ == "__main__":
    main()
