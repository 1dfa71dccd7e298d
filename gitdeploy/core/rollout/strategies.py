"""The strategies by type: what a pass does for a rollout in progress, and what a revision's
start does first. A new strategy (such as canary) is one module with a function from the
context to a Step, and one entry here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gitdeploy.core.models import StrategyType
from gitdeploy.core.rollout.canarywalk import canary
from gitdeploy.core.rollout.context import RolloutContext
from gitdeploy.core.rollout.custom import custom
from gitdeploy.core.rollout.outputs import Step
from gitdeploy.core.rollout.recreate import recreate
from gitdeploy.core.rollout.rolling import rolling, start_rolling


@dataclass(frozen=True)
class RolloutStrategy:
    """How one strategy moves the current revision."""

    step: Callable[[RolloutContext], Step]
    """One pass of a rollout in progress (its revision neither Complete nor held)."""
    start: Callable[[RolloutContext, bool], float] | None = None
    """Scales made in the step that starts a revision (told whether its ReplicaSet is created
    there); returns when to look again. None: nothing at the start, look again at once."""


STRATEGIES: Mapping[StrategyType, RolloutStrategy] = {
    StrategyType.ROLLING_UPDATE: RolloutStrategy(rolling, start_rolling),
    StrategyType.ROLLING: RolloutStrategy(rolling, start_rolling),
    StrategyType.RECREATE: RolloutStrategy(recreate),
    StrategyType.CUSTOM: RolloutStrategy(custom),
    StrategyType.CANARY: RolloutStrategy(canary),
}
"""Every :class:`~gitdeploy.core.models.StrategyType` (a test checks that none is missing); the
canary's steps are :mod:`.canarywalk`, its replica arithmetic :mod:`.canary`."""
