"""Rollout progress for ``rollout status`` and ``sync --wait``: live bars on a terminal, else one
line per change in ``kubectl rollout status``'s words."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from gitdeploy.cli.output import console
from gitdeploy.controller.inspect import AppView
from gitdeploy.core.history.records import Outcome

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


def waiting_line(v: AppView) -> str:
    """What the rollout waits for, as ``kubectl rollout status`` says it; for a canary, the step
    it is at (a line per step, as ``kubectl argo rollouts status`` prints)."""
    if v.canary_steady:
        return f"Waiting for rollout to finish: {v.canary_steady}..."
    if not v.phase:  # no ReplicaSet yet: a new app
        return "Waiting for rollout to start..."
    if v.up_to_date < v.replicas:
        done = f"{v.up_to_date} out of {v.replicas}"
        return f"Waiting for rollout to finish: {done} new replicas have been updated..."
    if v.available < v.replicas:
        return (
            f"Waiting for rollout to finish: {v.available} of {v.replicas} updated replicas are available..."
        )
    if v.ready > v.up_to_date:
        old = v.ready - v.up_to_date
        return f"Waiting for rollout to finish: {old} old replicas are pending termination..."
    return (
        f"Waiting for rollout to finish: {v.message}..." if v.message else "Waiting for rollout to finish..."
    )


class RolloutProgress:
    """Shows rollouts as they go, on stdout (``err`` False) or stderr.

    On a terminal: one live bar per app (updated and available replicas of the desired count).
    Otherwise: a line each time what an app waits for changes, prefixed with the app when
    ``name_apps`` (several apps at once), so logs and CI show every step and nothing else.
    """

    def __init__(self, *, err: bool = False, name_apps: bool = False) -> None:
        self._console = console(err)
        self._name_apps = name_apps
        self._said: dict[str, str] = {}
        self._tasks: dict[str, TaskID] = {}
        self._bars: Progress | None = None
        if self._console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._bars = Progress(
                TextColumn("{task.fields[app]}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.description}"),
                console=self._console,
                transient=False,
            )

    def __enter__(self) -> RolloutProgress:
        if self._bars is not None:
            self._bars.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, _tb: TracebackType | None
    ) -> None:
        if self._bars is not None:
            self._bars.stop()

    def show(self, view: AppView) -> None:
        """The app's rollout as it stands now."""
        app = str(view.key)
        line = waiting_line(view)
        if self._bars is None:
            if self._said.get(app) != line:
                self._console.print(f"{app}: {line}" if self._name_apps else line, markup=False)
            self._said[app] = line
            return
        updated_and_available = min(view.up_to_date, view.available)
        short = line.removeprefix("Waiting for rollout to finish: ")
        if app not in self._tasks:
            self._tasks[app] = self._bars.add_task(short, total=view.replicas or 1, app=app)
        self._bars.update(
            self._tasks[app], description=short, total=view.replicas or 1, completed=updated_and_available
        )

    def finish(self, view: AppView, text: str) -> None:
        """The app's rollout ended: fill or stop its bar with ``text``; say ``text`` off a terminal."""
        app = str(view.key)
        if self._bars is None:
            return
        task = self._tasks.get(app)
        if task is None:
            task = self._tasks[app] = self._bars.add_task(text, app=app)
        total = view.replicas or 1
        completed = total if view.phase == Outcome.COMPLETE else min(view.up_to_date, view.available)
        self._bars.update(task, description=text, total=total, completed=completed)
