"""The worked examples in the docstrings of the rollout modules are tests too."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

from gitdeploy.core import hooks, pruning, records, recovery, rollback, rollout, timestamps


@pytest.mark.parametrize(
    "module", [hooks, pruning, records, recovery, rollback, rollout, timestamps], ids=lambda m: m.__name__
)
def test_docstring_examples(module: ModuleType) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
