"""``gitdeploy demo``: a narrated scenario on a fresh embedded cluster and a throw-away config repo.

Each step runs the real commands in this process through :func:`gitdeploy.cli.main.main`, the
installed command's entry point, so the output is exactly what a user gets (one-line errors and
exit codes included) without paying the interpreter's start-up for each of the ~25 commands, which
keeps the demo under a minute on a busy machine. git runs as the ``git`` program, as the user
would run it, with the machine's git configuration ignored (no signing prompts, no hooks).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import click
from rich.text import Text

from gitdeploy.cli.context import CliContext, get_context
from gitdeploy.cli.main import main
from gitdeploy.cli.output import console
from gitdeploy.errors import PermanentError
from gitdeploy.localcluster import stop

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NGINX = "config/apps/nginx-deployment.yaml"
ROLLOUTS_DEMO = "config/apps/rollouts-demo.yaml"
STREAM_TAG = "demo/origin-ruby-sample:latest"
TYPO = "nginx:1.161"


@dataclass(frozen=True)
class Pace:
    """How fast the simulated pods are, how short the deadline, how long to pause between steps."""

    pod_start_seconds: float
    job_seconds: float
    deadline_seconds: int
    pause_seconds: float


FAST = Pace(pod_start_seconds=0.05, job_seconds=0.1, deadline_seconds=2, pause_seconds=0.0)
NARRATED = Pace(pod_start_seconds=0.4, job_seconds=0.4, deadline_seconds=4, pause_seconds=1.0)


class StepFailed(Exception):
    """A command of the scenario did not end as it should."""


def image_digest(label: str) -> str:
    """A made-up but well-formed image of the example stream, so ``gitdeploy tag`` needs no registry."""
    return f"docker.io/openshift/origin-ruby-sample@sha256:{hashlib.sha256(label.encode()).hexdigest()}"


class Narrator:
    """Runs the scenario's commands in ``work`` and says what it does before each one."""

    def __init__(self, work: Path, pace: Pace, total: int) -> None:
        self.out = console()
        self.work = work
        self.pace = pace
        self.total = total
        self.number = 0
        self.title = "setup"

    def step(self, title: str, why: str) -> None:
        if self.number and self.pace.pause_seconds:
            time.sleep(self.pace.pause_seconds)
        self.number += 1
        self.title = title
        self.out.print()
        self.out.rule(Text(f"Step {self.number}/{self.total}: {title}", style="bold"), align="left")
        self.out.print(Text(why, style="dim"))

    def note(self, text: str) -> None:
        self.out.print(Text(f"# {text}", style="dim"))

    def _say(self, args: Sequence[str]) -> None:
        self.out.print(Text(f"$ {shlex.join(args)}", style="bold cyan"))

    def gitdeploy(self, *args: str, expect: int = 0) -> None:
        """Run ``gitdeploy ARGS`` as the installed command would, in this process; it must exit
        ``expect`` (0 unless the demo shows a command saying that something is not done yet)."""
        self._say(["gitdeploy", *args])
        try:
            main(list(args))
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 1
        if code == 130:  # Ctrl-C inside the command: stop the demo (it still cleans up)
            raise click.Abort
        if code != expect:
            raise StepFailed(f"`gitdeploy {shlex.join(args)}` exited {code}")
        if code:
            self.note(f"exit {code}, as expected")

    def git(self, *args: str, author: tuple[str, str] | None = None) -> None:
        """Run ``git ARGS`` in the config repo, as ``author``, without the machine's git config."""
        command = ["git", "-C", "config", *args]
        self._say(command)
        env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        if author is not None:
            name, email = author
            self.note(f"author: {name} <{email}>")
            env |= {
                "GIT_AUTHOR_NAME": name,
                "GIT_AUTHOR_EMAIL": email,
                "GIT_COMMITTER_NAME": name,
                "GIT_COMMITTER_EMAIL": email,
            }
        done = subprocess.run(command, cwd=self.work, env=env, capture_output=True, text=True, check=False)
        if done.stdout.strip():
            self.out.print(Text(done.stdout.rstrip()))
        if done.returncode != 0:
            raise StepFailed(f"`{shlex.join(command)}` exited {done.returncode}: {done.stderr.strip()}")

    def edit(self, path: str, old: str, new: str, what: str) -> None:
        """Replace ``old`` by ``new`` in ``path`` (under the work dir), saying so."""
        file = self.work / path
        text = file.read_text(encoding="utf-8")
        if old not in text:
            raise StepFailed(f"{path} has no {old.strip()!r} to change (did examples/ change?)")
        file.write_text(text.replace(old, new, 1), encoding="utf-8")
        self.note(f"edit {path.removeprefix('config/')}: {what}")


ADA = ("Ada Lovelace", "ada@example.com")
GRACE = ("Grace Hopper", "grace@example.com")
LINUS = ("Linus Torvalds", "linus@example.com")
KATHERINE = ("Katherine Johnson", "katherine@example.com")


_SYNC = ("sync", "--repo", "./config", "--wait", "--timeout", "1m")


def _scenario(say: Narrator) -> None:
    """The story, step by step; each :meth:`Narrator.step` starts one."""
    _config_and_cluster(say)
    _rollouts(say)
    _image_triggers(say)
    _history_and_plan(say)
    _canary(say)


def _config_and_cluster(say: Narrator) -> None:
    """examples/ as a git repo, and an embedded cluster that cannot pull the typo'd image."""
    pace = say.pace
    say.step(
        "a config repo and an embedded cluster",
        "examples/ becomes a git repo; the cluster simulates pods, and cannot pull nginx:1.161.",
    )
    shutil.copytree(EXAMPLES, say.work / "config")
    say.note("copied examples/ to ./config")
    settings = say.work / "config" / "gitdeploy.yaml"
    settings.write_text(settings.read_text(encoding="utf-8") + "autoRollback: true\n", encoding="utf-8")
    say.note("edit gitdeploy.yaml: autoRollback: true (for the plain Deployment too)")
    say.edit(
        NGINX,
        "spec:\n  replicas: 3\n",
        f"spec:\n  replicas: 3\n  progressDeadlineSeconds: {pace.deadline_seconds}\n",
        f"progressDeadlineSeconds: {pace.deadline_seconds} (a short deadline for the demo)",
    )
    say.git("init", "-q", "-b", "main")
    say.git("add", "-A")
    say.git("commit", "-qm", "Initial config: nine apps", author=ADA)
    say.gitdeploy(
        "cluster",
        "up",
        "--pod-start-seconds",
        f"{pace.pod_start_seconds:g}",
        "--job-seconds",
        f"{pace.job_seconds:g}",
        "--image-pull-failure",
        TYPO,
    )


def _rollouts(say: Narrator) -> None:
    """The initial deploy, an image bump, and a typo rolled back automatically."""
    pace, sync = say.pace, _SYNC
    say.step(
        "the initial deploy",
        "One pass of the loop at git's head; --wait follows every rollout (hooks, Recreate, Custom).",
    )
    say.gitdeploy(*sync)
    say.gitdeploy("status")

    say.step(
        "an image bump rolls out",
        "Grace bumps nginx; gitdeploy scales the new ReplicaSet up and the old one down (25%/25%).",
    )
    say.edit(NGINX, "image: nginx:1.14.2", "image: nginx:1.16.1", "nginx:1.14.2 -> nginx:1.16.1")
    say.git("commit", "-qam", "Bump nginx to 1.16.1", author=GRACE)
    say.gitdeploy(*sync, "demo/nginx-deployment")

    say.step(
        "a typo'd image is rolled back automatically",
        f"Linus types {TYPO}: its pod cannot pull the image, the rollout makes no progress for "
        f"{pace.deadline_seconds} s, fails at its deadline, and gitdeploy brings revision 2 back "
        "(the old pods served all along).",
    )
    say.edit(NGINX, "image: nginx:1.16.1", f"image: {TYPO}", f"nginx:1.16.1 -> {TYPO}")
    say.git("commit", "-qam", "Update nginx for the CVE fix", author=LINUS)
    say.gitdeploy(*sync, "demo/nginx-deployment")
    say.gitdeploy("status", "demo/nginx-deployment")


def _image_triggers(say: Narrator) -> None:
    """An image trigger; a manual rollback that suspends triggers; triggers resumed."""
    sync = _SYNC
    first, second = image_digest("demo v2"), image_digest("demo v3")
    say.step(
        "an image trigger",
        "frontend follows the image stream tag origin-ruby-sample:latest; moving the tag rolls it out.",
    )
    say.gitdeploy("tag", first, STREAM_TAG)
    say.gitdeploy(*sync, "demo/frontend")

    say.step(
        "a manual rollback, with image triggers suspended",
        "Back to revision 1; it sticks (Pinned) while frontend's manifest is unchanged.",
    )
    say.gitdeploy("rollback", "demo/frontend", "--to-revision", "1", "-m", "v2 logs errors at checkout")
    say.gitdeploy(*sync, "demo/frontend")
    say.gitdeploy("status", "demo/frontend")

    say.step(
        "a new image while suspended, then triggers resumed",
        "The tag moves but nothing rolls out until the triggers are enabled again.",
    )
    say.gitdeploy("tag", second, STREAM_TAG)
    say.gitdeploy(*sync, "demo/frontend")
    say.gitdeploy("deploy", "demo/frontend", "--enable-triggers")
    say.gitdeploy(*sync, "demo/frontend")
    say.gitdeploy("history", "demo/frontend")


def _history_and_plan(say: Narrator) -> None:
    """History names each commit; a branch planned before it is merged."""
    say.step(
        "history names each commit",
        "Every revision with the commit, author and cause that made it.",
    )
    say.gitdeploy("history", "demo/nginx-deployment")

    say.step(
        "plan a branch before merging it",
        "Katherine proposes a change on a branch; `gitdeploy plan` says what merging it would roll out.",
    )
    say.git("checkout", "-q", "-b", "scale-api")
    say.edit("config/apps/api.yaml", "replicas: 4", "replicas: 6", "replicas 4 -> 6")
    say.edit("config/apps/worker.yaml", "example/worker:1.0", "example/worker:1.1", "worker 1.0 -> 1.1")
    say.git("commit", "-qam", "Scale api for the launch; worker 1.1", author=KATHERINE)
    say.git("checkout", "-q", "main")
    say.gitdeploy("plan", "--repo", "./config", "--base", "main", "--head", "scale-api")


def _canary(say: Narrator) -> None:
    """An Argo Rollouts canary: its first step, then promoted past the rest."""
    say.step(
        "a canary, promoted",
        "rollouts-demo is an Argo Rollouts Rollout, unedited: a new colour starts a canary at 20% "
        "of the pods (two passes, not done: sync exits 1); promote --full skips its pauses.",
    )
    say.edit(ROLLOUTS_DEMO, "rollouts-demo:blue", "rollouts-demo:yellow", "blue -> yellow")
    say.git("commit", "-qam", "rollouts-demo: yellow", author=GRACE)
    say.gitdeploy("sync", "--repo", "./config", "demo/rollouts-demo", expect=1)
    say.gitdeploy("sync", "--repo", "./config", "demo/rollouts-demo", expect=1)
    say.gitdeploy("status", "demo/rollouts-demo")
    say.gitdeploy("rollout", "promote", "demo/rollouts-demo", "--full")
    say.gitdeploy(*_SYNC, "demo/rollouts-demo")
    say.gitdeploy("history", "demo/rollouts-demo")


def _explore(say: Narrator, state: Path, keep: bool) -> None:
    out = say.out
    out.print()
    out.rule(Text("Explore on your own", style="bold"), align="left")
    if keep:
        lines = [
            f"export GITDEPLOY_STATE_DIR={state}",
            f"cd {say.work}",
            "gitdeploy cluster up               # the demo stopped it; its state is kept",
            "gitdeploy status",
            "gitdeploy history demo/nginx-deployment --revision 3 --repo ./config",
            "gitdeploy rollback demo/nginx-deployment --to-revision 1",
            "gitdeploy sync --repo ./config --wait",
            "gitdeploy deploy demo/frontend --latest",
            "gitdeploy run --repo ./config      # the loop: commit in ./config and watch it deploy",
            f"kubectl --kubeconfig {state / 'kubeconfig'} get rs,pods -n demo",
            f"gitdeploy cluster down && rm -rf {say.work}   # when done",
        ]
    else:
        lines = [
            "gitdeploy demo --keep              # the same, keeping the cluster and repo to explore",
            "gitdeploy validate examples/",
            "gitdeploy sync --repo YOUR-CONFIG-REPO --wait",
            "gitdeploy status; gitdeploy history APP",
            "gitdeploy --help                   # every command, with examples",
        ]
    for line in lines:
        out.print(Text(f"  {line}", style="cyan"))


@contextlib.contextmanager
def _demo_environment(state: Path, cli: CliContext) -> Iterator[None]:
    """Point every command at the demo's embedded cluster, never at a kubeconfig or the pod's;
    pass on the demo's --no-color and --debug."""
    saved = dict(os.environ)
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        os.environ.pop(name, None)
    os.environ["GITDEPLOY_STATE_DIR"] = str(state)
    if not cli.color:
        os.environ["NO_COLOR"] = "1"
    if cli.debug:
        os.environ["GITDEPLOY_DEBUG"] = "1"
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


STEPS = 10


@click.command("demo")
@click.option("--fast", is_flag=True, help="Pods ready almost at once, no pauses between steps.")
@click.option("--keep", is_flag=True, help="Keep the temporary state dir and config repo to explore.")
@click.pass_context
def demo(ctx: click.Context, fast: bool, keep: bool) -> None:
    """Show gitdeploy at work on a fresh embedded cluster, narrated, in under a minute.

    It makes a config repo from examples/ in a temporary directory (real git commits), starts an
    embedded cluster there (never your state dir or a kubeconfig's cluster), and runs the real
    commands: the initial deploy, an image bump, a typo'd image rolled back at its deadline, an
    image trigger, a manual rollback with triggers suspended and resumed, history, a plan and an
    Argo Rollouts canary promoted.

    \b
    Exit codes: 0 the scenario ran to its end, 1 a step failed (named).

    \b
    Examples:
      gitdeploy demo
      gitdeploy demo --fast
      gitdeploy demo --keep      # then explore with the commands it prints
    """
    if shutil.which("git") is None:
        raise PermanentError("the demo needs git", hint="install git and run it again")
    if not EXAMPLES.is_dir():
        raise PermanentError(
            f"the demo needs the examples of a gitdeploy clone, and {EXAMPLES} is missing",
            hint="run it from a clone: scripts/demo",
        )
    work = Path(tempfile.mkdtemp(prefix="gitdeploy-demo-"))
    state = work / "state"
    say = Narrator(work, FAST if fast else NARRATED, STEPS)
    failed: StepFailed | None = None
    here = Path.cwd()
    say.note(f"working in {work}; every command acts on the embedded cluster of {state}")
    try:
        os.chdir(work)
        with _demo_environment(state, get_context(ctx)):
            try:
                _scenario(say)
            except StepFailed as problem:
                failed = problem
    finally:
        os.chdir(here)
        stop(state)
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    if failed is not None:
        click.echo(f"error: demo step {say.number} ({say.title}) failed: {failed}", err=True)
        if keep:
            click.echo(f"kept for a look: {work}", err=True)
        ctx.exit(1)
    _explore(say, state, keep)
