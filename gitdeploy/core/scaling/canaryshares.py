"""The pod counts a canary weight asks for, without a traffic router (the first rule of
:func:`~gitdeploy.core.rollout.canary.basic_canary_replicas`): here, below the rollout engine,
so that PR plans and ``status`` count a step's pods the way the rollout does."""

from __future__ import annotations

from gitdeploy.core.scaling.rollingmath import check_count


def canary_shares(replicas: int, weight: int) -> tuple[int, int, bool]:
    """``(canary, stable, rounded)``: the sizes a weight asks for, and whether both were rounded
    up (so that together they hold ``replicas + 1`` pods).

    >>> canary_shares(10, 30)
    (3, 7, False)
    >>> canary_shares(10, 5)     # 0.5 and 9.5 pods: one each way up
    (1, 10, True)
    >>> canary_shares(100, 7)    # exact, unlike upstream's floating point (8, 93)
    (7, 93, False)
    """
    check_count("replicas", replicas)
    if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 100:
        raise ValueError(f"weight must be an integer from 0 to 100, got {weight!r}")
    canary = -(-replicas * weight // 100)
    stable = -(-replicas * (100 - weight) // 100)
    return canary, stable, replicas * weight % 100 != 0
