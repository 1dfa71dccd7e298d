"""A revision in people's words, as `gitdeploy history` and the dashboard both print it."""

from __future__ import annotations

from typing import Any

import pytest

from gitdeploy.core.history.records import Cause, CommitRef, Outcome, RevisionEntry
from gitdeploy.core.history.wording import describe_cause, describe_outcome


def _entry(**fields: Any) -> RevisionEntry:
    return RevisionEntry(5, "hash", "web-hash", CommitRef("abc"), **fields)


@pytest.mark.parametrize(
    ("fields", "cause"),
    [
        ({}, "ConfigChange"),
        ({"cause": Cause.AUTO_ROLLBACK, "rolled_back_from": 4}, "Automatic rollback after revision 4 failed"),
        ({"cause": Cause.ROLLBACK, "rolled_back_to": 2}, "Rollback to revision 2"),
        ({"returns_to": 3}, "ConfigChange (template of revision 3)"),
    ],
)
def test_the_cause_names_the_revision_it_returns_to(fields: dict[str, object], cause: str) -> None:
    assert describe_cause(_entry(**fields)) == cause


@pytest.mark.parametrize(
    ("fields", "outcome"),
    [
        ({"outcome": Outcome.COMPLETE}, "Complete"),
        ({"outcome": Outcome.FAILED}, "Failed"),
        (
            {"outcome": Outcome.FAILED, "reason": "DeadlineExceeded"},
            "Failed (DeadlineExceeded)",
        ),
    ],
)
def test_a_failure_says_its_reason(fields: dict[str, object], outcome: str) -> None:
    assert describe_outcome(_entry(**fields)) == outcome
