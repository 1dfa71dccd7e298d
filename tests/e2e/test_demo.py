"""``gitdeploy demo`` through the installed command: the whole narrated scenario, and a failing step."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.fixtures.cli import RunCli

HEADINGS = [
    "Step 1/10: a config repo and an embedded cluster",
    "Step 2/10: the initial deploy",
    "Step 3/10: an image bump rolls out",
    "Step 4/10: a typo'd image is rolled back automatically",
    "Step 5/10: an image trigger",
    "Step 6/10: a manual rollback, with image triggers suspended",
    "Step 7/10: a new image while suspended, then triggers resumed",
    "Step 8/10: history names each commit",
    "Step 9/10: plan a branch before merging it",
    "Step 10/10: a canary, promoted",
    "Explore on your own",
]


def _sections(stdout: str) -> dict[str, str]:
    """The demo's output cut at its headings: heading -> what follows it, up to the next one."""
    positions = []
    for heading in HEADINGS:
        at = stdout.find(heading)
        assert at >= 0, f"missing heading {heading!r} in:\n{stdout}"
        positions.append(at)
    assert positions == sorted(positions), "the steps are out of order"
    ends = [*positions[1:], len(stdout)]
    return {h: stdout[start:end] for h, start, end in zip(HEADINGS, positions, ends, strict=True)}


def _line(text: str, *patterns: str) -> bool:
    """Whether a table line holds cells matching these patterns in this order (separated by blanks)."""
    pattern = r"\s+".join(patterns)
    return re.search(rf"^{pattern}(\s|$)", text, re.MULTILINE) is not None


def _row(text: str, *cells: str) -> bool:
    return _line(text, *map(re.escape, cells))


def _revision(text: str, revision: int, subject: str, author: str, cause: str, outcome: str) -> bool:
    """Whether ``gitdeploy history`` printed this revision (the commit, then any age)."""
    commit = rf"[0-9a-f]{{7}} {re.escape(subject)}"
    return _line(text, str(revision), commit, re.escape(author), r"\S+", re.escape(cause), re.escape(outcome))


def _git_log(repo: Path, *args: str) -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(repo), "log", "--format=%an|%s", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def _work_dir(stdout: str) -> Path:
    found = re.search(r"# working in (\S+);", stdout)
    assert found, stdout
    return Path(found.group(1))


def test_demo_fast_runs_every_step_and_keeps_its_repo_when_asked(run_cli: RunCli, tmp_path: Path) -> None:
    # Given a user's state dir (from GITDEPLOY_STATE_DIR), when the demo runs
    done = run_cli("demo", "--fast", "--keep", env={"TMPDIR": str(tmp_path)}, timeout=180)

    # Then it ends well, and each step shows what it is about
    assert done.returncode == 0, done.stdout + done.stderr
    step = _sections(done.stdout)
    assert not (tmp_path / "state").exists(), "the demo touched the user's state dir"

    first = step[HEADINGS[0]]
    assert (
        "$ gitdeploy cluster up --pod-start-seconds 0.05 --job-seconds 0.1 --image-pull-failure nginx:1.161"
        in first
    )
    assert "embedded cluster started" in first

    initial = step[HEADINGS[1]]
    assert "$ gitdeploy sync --repo ./config --wait --timeout 1m" in initial
    for app in ("api", "frontend", "nginx-deployment", "reports", "worker"):
        assert _row(initial, f"demo/{app}", "Synced", "Healthy", "1", "revision 1 complete"), initial

    bump = step[HEADINGS[2]]
    assert "Waiting for rollout to finish" in done.stderr  # sync --wait's progress, on stderr
    assert _row(bump, "demo/nginx-deployment", "Synced", "Healthy", "2", "revision 2 complete"), bump

    typo = step[HEADINGS[3]]
    assert _row(typo, "demo/nginx-deployment", "Pinned", "Healthy", "4"), typo
    assert "by automatic rollback (revision 3 failed: no progress for 2 s" in typo

    trigger = step[HEADINGS[4]]
    assert "$ gitdeploy tag docker.io/openshift/origin-ruby-sample@sha256:" in trigger
    assert _row(trigger, "demo/frontend", "Synced", "Healthy", "2", "revision 2 complete"), trigger

    rollback = step[HEADINGS[5]]
    assert "$ gitdeploy rollback demo/frontend --to-revision 1" in rollback
    assert "image triggers: suspended" in rollback
    assert _row(rollback, "demo/frontend", "5/5", "3", "Pinned", "Healthy"), rollback
    assert "Pinned" in rollback and "pinned to revision 1's template by rollback" in rollback

    resumed = step[HEADINGS[6]]
    suspended_sync, _, after = resumed.partition("$ gitdeploy deploy demo/frontend --enable-triggers")
    assert _row(suspended_sync, "demo/frontend", "Pinned", "Healthy", "3"), "the tag moved a suspended app"
    assert "image triggers resumed" in after
    assert _row(after, "demo/frontend", "Synced", "Healthy", "4", "revision 4 complete"), after
    initial_commit = ("Initial config: nine apps", "Ada Lovelace")
    assert _revision(after, 1, *initial_commit, "ConfigChange", "Complete"), after
    assert _revision(after, 2, *initial_commit, "ImageChange", "Complete"), after
    assert _revision(after, 3, *initial_commit, "Rollback to revision 1", "Complete"), after
    assert _revision(after, 4, *initial_commit, "ImageChange", "Complete"), after

    history = step[HEADINGS[7]]
    assert _revision(history, 1, *initial_commit, "ConfigChange", "Complete"), history
    assert _revision(history, 2, "Bump nginx to 1.16.1", "Grace Hopper", "ConfigChange", "Complete")
    assert _revision(
        history,
        3,
        "Update nginx for the CVE fix",
        "Linus Torvalds",
        "ConfigChange",
        "Failed (ProgressDeadlineExceeded)",
    )
    assert _revision(
        history,
        4,
        "Bump nginx to 1.16.1",
        "Grace Hopper",
        "Automatic rollback after revision 3 failed",
        "Complete",
    )

    plan = step[HEADINGS[8]]
    assert "$ gitdeploy plan --repo ./config --base main --head scale-api" in plan
    assert _row(
        plan, "demo/worker", "rollout", "worker", "image", "example/worker:1.0", "->", "example/worker:1.1"
    )
    assert _row(plan, "demo/api", "scale", "replicas", "4", "->", "6,", "no", "new", "revision")
    assert "Plan: 1 rollout, 1 scale" in plan

    canary = step[HEADINGS[9]]
    first_pass, _, rest = canary.partition("# exit 1, as expected")
    assert _row(first_pass, "demo/rollouts-demo", "OutOfSync", "Progressing", "2", "revision 2 started")
    assert "revision 2: step 1/8 (setWeight 20%)" in rest, canary
    assert "revision 2: step 1/8, setWeight 20" in rest, canary  # status, from the ReplicaSet
    assert "demo/rollouts-demo: revision 2's canary promoted past every remaining step" in canary
    assert _row(canary, "demo/rollouts-demo", "Synced", "Healthy", "2", "revision 2 complete"), canary
    assert _revision(canary, 2, "rollouts-demo: yellow", "Grace Hopper", "ConfigChange", "Complete")
    assert "promoted all steps by" in canary

    # And with --keep, the repo and state are left to explore, the cluster stopped
    work = _work_dir(done.stdout)
    assert work.parent == tmp_path
    assert f"export GITDEPLOY_STATE_DIR={work / 'state'}" in step[HEADINGS[10]]
    assert (work / "state" / "kubeconfig").is_file() and not (work / "state" / "cluster.pid").exists()
    assert _git_log(work / "config", "main") == [
        "Grace Hopper|rollouts-demo: yellow",
        "Linus Torvalds|Update nginx for the CVE fix",
        "Grace Hopper|Bump nginx to 1.16.1",
        "Ada Lovelace|Initial config: nine apps",
    ]
    assert _git_log(work / "config", "main..scale-api") == [
        "Katherine Johnson|Scale api for the launch; worker 1.1"
    ]


def test_a_failing_step_is_named_and_the_demo_cleans_up(run_cli: RunCli, tmp_path: Path) -> None:
    # Given git that cannot commit (an invalid author date in the environment)
    env = {"TMPDIR": str(tmp_path), "GIT_AUTHOR_DATE": "not-a-date"}

    # When the demo runs
    done = run_cli("demo", "--fast", env=env, timeout=120)

    # Then it stops at its first step, names it and the command in one line, and leaves nothing
    assert done.returncode == 1
    assert (
        "error: demo step 1 (a config repo and an embedded cluster) failed: "
        "`git -C config commit -qm 'Initial config: nine apps'` exited 128: fatal: invalid date format"
    ) in done.stderr
    assert "Traceback" not in done.stderr
    assert "Explore on your own" not in done.stdout
    assert not _work_dir(done.stdout).exists()
