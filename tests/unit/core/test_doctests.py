"""The worked examples in the docstrings of the rollout modules are tests too."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

from gitdeploy.core import (
    analysistemplates,
    canarystate,
    canarysteps,
    canaryview,
    pruning,
    rollout,
    timestamps,
)
from gitdeploy.core.analysis import conditions, jsonpath, measured, phases, runs, stored, templates, values
from gitdeploy.core.history import control as rollback
from gitdeploy.core.history import records, recovery
from gitdeploy.core.planning import canarytimeline
from gitdeploy.core.rollout import canaryanalysis, drift, hooks
from gitdeploy.core.rollout import context as rollout_context
from gitdeploy.core.rollout import inputs as rollout_inputs
from gitdeploy.core.scaling import canaryshares
from gitdeploy.core.sync import commitwait, syncstate


@pytest.mark.parametrize(
    "module",
    [
        analysistemplates,
        canarysteps,
        conditions,
        jsonpath,
        measured,
        phases,
        runs,
        stored,
        templates,
        values,
        canaryanalysis,
        canaryshares,
        canarystate,
        canarytimeline,
        canaryview,
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
