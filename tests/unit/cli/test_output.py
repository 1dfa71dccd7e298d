"""Machine output (``-o json|yaml``): the same plain words in both, whatever type holds them."""

from __future__ import annotations

import json

import pytest
import yaml

from gitdeploy.cli.output import print_data
from gitdeploy.core.history.records import Cause
from gitdeploy.core.sync.syncstate import Health, Sync


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_states_print_as_their_words(output: str, capsys: pytest.CaptureFixture[str]) -> None:
    print_data({"sync": Sync.OUT_OF_SYNC, "health": [Health.DEGRADED], "cause": Cause.ROLLBACK}, output)

    text = capsys.readouterr().out
    parsed = yaml.safe_load(text) if output == "yaml" else json.loads(text)
    assert parsed == {"sync": "OutOfSync", "health": ["Degraded"], "cause": "Rollback"}
    assert "!!python" not in text
