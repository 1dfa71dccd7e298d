"""A canary's steps as a reviewer reads them in ``gitdeploy plan``: the pods each weight runs
(canary beside stable, as the rollout sizes them without a traffic router), the pauses and how
long they hold, and the end at full size.

>>> steps = (SetWeight(25), Pause(30), SetWeight(75), Pause())
>>> for line in canary_timeline(steps, 4):
...     print(line)
1. setWeight 25 → canary 1, stable 3
2. pause 30s
3. setWeight 75 → canary 3, stable 1
4. pause until promoted (`gitdeploy rollout promote`)
then full size → canary 4, stable 0
>>> canary_timeline(steps, 4, first=True)
('first revision: full size at once, no steps (as Argo Rollouts) → 4 pods',)
>>> pauses_summary(steps)
'timed pauses 30s in all, 1 pause until promoted'
"""

from __future__ import annotations

from collections.abc import Sequence

from gitdeploy.core.canarysteps import CanaryStep, Pause, SetWeight
from gitdeploy.core.scaling.canaryshares import canary_shares


def _pods_at(replicas: int, weight: int) -> str:
    canary, stable, _ = canary_shares(replicas, weight)
    return f"canary {canary}, stable {stable}"


def _duration(seconds: int) -> str:
    """``90s``, ``5m``, ``1h30m``: a pause as a reviewer reads it.

    >>> _duration(45), _duration(300), _duration(5400), _duration(3601)
    ('45s', '5m', '1h30m', '1h1s')
    """
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if n]
    return "".join(parts) or "0s"


def _line(step: CanaryStep, replicas: int) -> str:
    if isinstance(step, SetWeight):
        return f"setWeight {step.weight} → {_pods_at(replicas, step.weight)}"
    if isinstance(step, Pause):
        if step.duration_seconds is None:
            return "pause until promoted (`gitdeploy rollout promote`)"
        return f"pause {_duration(step.duration_seconds)}"
    return step.describe()


def canary_timeline(steps: Sequence[CanaryStep], replicas: int, *, first: bool = False) -> tuple[str, ...]:
    """One line per step, numbered as ``status`` numbers them, then the end; an app's first
    revision walks no steps (there is no stable to keep beside it)."""
    if first:
        return (f"first revision: full size at once, no steps (as Argo Rollouts) → {replicas} pods",)
    lines = [f"{index}. {_line(step, replicas)}" for index, step in enumerate(steps, 1)]
    return (*lines, f"then full size → {_pods_at(replicas, 100)}")


def abort_line(delay_seconds: int | None) -> str:
    """What an abort does to a canary without a traffic router, as Argo Rollouts' basic canary:
    the stable comes back to full size and the canary goes, within maxSurge and maxUnavailable,
    at once. ``abortScaleDownDelaySeconds`` (``delay_seconds``) only applies with a traffic
    router upstream (there, the canary's pods take no traffic while they wait); with every pod
    behind one Service here, a canary kept up after an abort would go on serving, so a value
    written is named as having no effect, never silently dropped.

    >>> abort_line(None)
    'on abort: back to the stable at once, within maxSurge and maxUnavailable'
    >>> abort_line(0).split("; ")[1]
    'abortScaleDownDelaySeconds 0 has no effect without a traffic router (as in Argo Rollouts)'
    """
    line = "on abort: back to the stable at once, within maxSurge and maxUnavailable"
    if delay_seconds is None:
        return line
    return (
        f"{line}; abortScaleDownDelaySeconds {delay_seconds} has no effect without a traffic "
        "router (as in Argo Rollouts)"
    )


def pauses_summary(steps: Sequence[CanaryStep]) -> str:
    """How long the pauses hold a canary in all, and how many wait for someone."""
    timed = sum(s.duration_seconds or 0 for s in steps if isinstance(s, Pause))
    manual = sum(1 for s in steps if isinstance(s, Pause) and s.duration_seconds is None)
    parts = [f"timed pauses {_duration(timed)} in all"] if timed else []
    if manual:
        parts.append(f"{manual} pause{'s' * (manual > 1)} until promoted")
    return ", ".join(parts) or "no pauses"
