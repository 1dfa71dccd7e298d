"""successCondition and failureCondition as Argo Rollouts evaluates them (its evaluate tests)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from gitdeploy.core.analysis.conditions import ConditionError, assess_measurement, evaluate
from gitdeploy.core.analysis.phases import AnalysisPhase

TRUTHS: list[tuple[str, Any, bool]] = [
    ("result == true", True, True),
    ("result == false", True, False),
    ("result[0] >= 0.95", [0.97], True),
    ("result[0] >= 0.95", [0.5], False),
    ("result[0] >= 0.95 && len(result) == 1", [0.97, 1.0], False),
    ("len(result) == 0 || result[0] > 1", [], True),
    ("!(result[0] < 1)", [2.0], True),
    ("not (result < 1) and result != 3", 2, True),
    ('result == "true"', "true", True),
    ("result == 'ok' || result == `fine`", "fine", True),
    ('result != "a && b"', "a && b", False),
    ("asInt(result) == 1", "1", True),
    ("asFloat(result) == 1.5", "1.5", True),
    ("isNaN(result)", math.nan, True),
    ("isInf(result)", math.inf, True),
    ("isNil(result)", None, True),
    ("result == nil", None, True),
    ("default(result, 0) > 1", None, False),
    ("result.ok == true && result.rate > 0.9", {"ok": True, "rate": 0.95}, True),
    ("result in [200, 204]", 204, True),
]


@pytest.mark.parametrize(("condition", "result", "truth"), TRUTHS)
def test_a_condition_is_evaluated_with_argos_operators(condition: str, result: Any, truth: bool) -> None:
    assert evaluate(condition, result) is truth


UNEVALUABLE: list[tuple[str, Any, str]] = [
    ("result[0] >= 0.95", [], "IndexError"),
    ("result > 0.5", "high", "TypeError"),
    ("result", 1, "gives 1, not true or false"),
    ("resutl > 1", 2, "resutl"),
    ("result >", 2, "cannot evaluate"),
    ("__import__('os').system('true')", 1, "cannot evaluate"),
    ("result.__class__ == 1", 1, "cannot evaluate"),
    ("result ? true : false", 1, "cannot evaluate"),
    ("result == 1 " * 300, 1, "over 2000"),
]


@pytest.mark.parametrize(("condition", "result", "why"), UNEVALUABLE)
def test_a_condition_that_cannot_be_evaluated_is_a_clear_error(condition: str, result: Any, why: str) -> None:
    with pytest.raises(ConditionError, match=None) as raised:
        evaluate(condition, result)
    assert why in str(raised.value)


S, F, INC = AnalysisPhase.SUCCESSFUL, AnalysisPhase.FAILED, AnalysisPhase.INCONCLUSIVE
PHASES: list[tuple[str, str, Any, AnalysisPhase]] = [
    ("", "", 0, S),  # no condition: any result succeeds
    ("result > 1", "", 2, S),
    ("result > 1", "", 0, F),  # only success: not success is failure
    ("", "result > 1", 0, S),  # only failure: not failure is success
    ("", "result > 1", 2, F),
    ("result > 5", "result < 1", 3, INC),  # neither
    ("result > 5", "result < 1", 0, F),
    ("result > 1", "result > 2", 3, F),  # both true: failure wins
]


@pytest.mark.parametrize(("success", "failure", "result", "phase"), PHASES)
def test_a_measurement_phase_follows_its_conditions(
    success: str, failure: str, result: Any, phase: AnalysisPhase
) -> None:
    assert assess_measurement(success, failure, result) is phase


def test_an_unevaluable_success_condition_is_an_error_even_with_a_failure_condition() -> None:
    with pytest.raises(ConditionError, match="IndexError"):
        assess_measurement("result[3] > 1", "result[0] > 1", [0.0])
