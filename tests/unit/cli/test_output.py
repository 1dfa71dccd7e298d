"""Machine output (``-o json|yaml``): the same plain words in both, whatever type holds them."""

from __future__ import annotations

import json
import logging

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


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_fields_print_in_camel_case_and_times_in_rfc3339(
    output: str, capsys: pytest.CaptureFixture[str]
) -> None:
    print_data(
        [{"template_hash": "5d8f", "started_at": 1_700_000_000.0, "finished_at": None,
          "hooks": [{"exit_code": 3}], "labels": {"app.kubernetes.io/name": "web", "MY_VAR": "x"}}],
        output,
    )  # fmt: skip

    text = capsys.readouterr().out
    parsed = yaml.safe_load(text) if output == "yaml" else json.loads(text)
    assert parsed == [
        {"templateHash": "5d8f", "startedAt": "2023-11-14T22:13:20Z", "finishedAt": None,
         "hooks": [{"exitCode": 3}], "labels": {"app.kubernetes.io/name": "web", "MY_VAR": "x"}}
    ]  # fmt: skip


def test_a_json_log_line_has_an_rfc3339_time_and_camel_case_fields() -> None:
    from gitdeploy.cli.run_cmd import _JsonFormatter

    record = logging.LogRecord("gitdeploy.source", logging.INFO, __file__, 1, "moved", None, None)
    record.created = 1_700_000_000.25
    record.previous_commit = "abc"
    line = json.loads(_JsonFormatter().format(record))
    assert line["time"] == "2023-11-14T22:13:20.250Z"
    assert line["previousCommit"] == "abc" and "previous_commit" not in line
