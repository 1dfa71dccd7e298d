"""An Argo Rollouts ``Rollout``'s ``spec.strategy.canary``, validated by
``schemas/rollout.schema.json``, as :class:`~gitdeploy.core.canarysteps.CanaryParams`, with the
checks a schema cannot make (one action per step, a starting step that exists, bounds that let
the rollout move).

>>> parse_duration("1h30m"), parse_duration(45), parse_duration("45")
(5400, 45, 45)
"""

from __future__ import annotations

import re
from typing import Any

from gitdeploy.core.canarysteps import (
    AnalysisArg,
    AnalysisRef,
    AnalysisStep,
    BackgroundAnalysis,
    CanaryParams,
    CanaryStep,
    Pause,
    SetWeight,
)
from gitdeploy.core.models import Strategy, StrategyType
from gitdeploy.manifests.problems import Problems, check_bounds, get_field

CANARY_PATH = ("spec", "strategy", "canary")
STEP_ACTIONS = ("setWeight", "pause", "analysis")
_UNITS = {"s": 1, "m": 60, "h": 3600}
_DURATION_PART = re.compile(r"([0-9]+)([smh])")


def parse_duration(value: int | str) -> int:
    """Seconds of an Argo Rollouts duration as the schema admits it: an integer (seconds), or
    parts such as ``30s``, ``5m``, ``1h``, ``1h30m``."""
    if isinstance(value, int) or value.isdigit():
        return int(value)
    return sum(int(number) * _UNITS[unit] for number, unit in _DURATION_PART.findall(value))


def _analysis_ref(raw: dict[str, Any]) -> AnalysisRef:
    args = tuple(
        AnalysisArg(
            str(arg["name"]),
            value=None if "value" not in arg else str(arg["value"]),
            pod_template_hash=get_field(arg, "valueFrom", "podTemplateHashValue"),
        )
        for arg in raw.get("args") or ()
    )
    return AnalysisRef(tuple(str(t["templateName"]) for t in raw["templates"]), args)


def _step(raw: dict[str, Any]) -> CanaryStep:
    if "setWeight" in raw:
        return SetWeight(int(raw["setWeight"]))
    if "pause" in raw:
        duration = (raw["pause"] or {}).get("duration")
        return Pause(None if duration is None else parse_duration(duration))
    return AnalysisStep(_analysis_ref(raw["analysis"]))


def canary_strategy(spec: dict[str, Any]) -> Strategy:
    """The Strategy of a valid Rollout's ``spec`` (Argo Rollouts' defaults filled in)."""
    canary: dict[str, Any] = get_field(spec, "strategy", "canary") or {}
    defaults = CanaryParams()
    background = canary.get("analysis")
    params = CanaryParams(
        steps=tuple(_step(step) for step in canary.get("steps") or ()),
        max_surge=canary.get("maxSurge", defaults.max_surge),
        max_unavailable=canary.get("maxUnavailable", defaults.max_unavailable),
        analysis=None
        if background is None
        else BackgroundAnalysis(_analysis_ref(background), int(background.get("startingStep", 0))),
        abort_scale_down_delay_seconds=None
        if canary.get("abortScaleDownDelaySeconds") is None
        else int(canary["abortScaleDownDelaySeconds"]),
        progress_deadline_abort=bool(spec.get("progressDeadlineAbort", False)),
    )
    return Strategy(StrategyType.CANARY, canary=params)


def check_canary(strategy_raw: Any, strategy: Strategy, problems: Problems) -> None:
    """What the schema cannot say of a canary: each step does one thing, the background
    analysis starts at a step that exists, and the bounds let the rollout move."""
    params = strategy.canary
    assert params is not None
    check_bounds(CANARY_PATH, params.max_surge, params.max_unavailable, problems)
    steps = get_field(strategy_raw, "canary", "steps") or []
    for index, step in enumerate(steps):
        actions = [name for name in STEP_ACTIONS if name in step]
        if len(actions) > 1:
            problems.add(
                (*CANARY_PATH, "steps", index),
                f"{'.'.join(CANARY_PATH)}.steps[{index}] has {' and '.join(actions)}: a step does one thing",
                "split it into two steps, in the order they should run",
            )
    background = params.analysis
    if background is not None and steps and background.starting_step >= len(steps):
        problems.add(
            (*CANARY_PATH, "analysis", "startingStep"),
            f"startingStep {background.starting_step} is past the last step ({len(steps) - 1})",
            "use the index of a step (the first is 0), or remove startingStep to start at once",
        )
