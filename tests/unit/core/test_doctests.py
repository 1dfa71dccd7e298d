"""The worked examples in the docstrings of the rollout modules are tests too."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

from gitdeploy.core import (
    commitwait,
    drift,
    hooks,
    pruning,
    records,
    recovery,
    rollback,
    rollout,
    syncstate,
    timestamps,
)
from gitdeploy.core.rollout import context as rollout_context
from gitdeploy.core.rollout import inputs as rollout_inputs


@pytest.mark.parametrize(
    "module",
    [
        commitwait,
        drift,
        hooks,
        pruning,
        records,
        recovery,
        rollback,
        rollout,
        rollout_context,
        rollout_inputs,
        syncstate,
        timestamps,
    ],
    ids=lambda m: m.__name__,
)
def test_docstring_examples(module: ModuleType) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
