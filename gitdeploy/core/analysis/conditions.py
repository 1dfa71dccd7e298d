"""An analysis metric's ``successCondition`` and ``failureCondition``, evaluated as Argo Rollouts
does, by the safe expression library simpleeval (never ``eval``).

Argo Rollouts writes conditions in the expr language (``result[0] >= 0.95 && len(result) > 0``);
:func:`to_python` rewrites its operators that Python spells otherwise (``&&``, ``||``, ``!``,
``true``, ``false``, ``nil``), outside string literals, and simpleeval evaluates the rest with
``result`` and upstream's helpers (``len``, ``asInt``, ``asFloat``, ``isNaN``, ``isInf``,
``isNil``, ``default``). What cannot be evaluated (a syntax error, an unknown name, an index out
of range, a result that is not a boolean) raises :class:`ConditionError`: the measurement is then
an Error, as upstream.

>>> evaluate("result[0] >= 0.95 && len(result) == 1", [0.97])
True
>>> evaluate('result == "true" || !(result != "yes")', "yes")
True
>>> assess_measurement("result > 1", "", 0.5), assess_measurement("", "result > 1", 0.5)
(<AnalysisPhase.FAILED: 'Failed'>, <AnalysisPhase.SUCCESSFUL: 'Successful'>)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from simpleeval import EvalWithCompoundTypes

from gitdeploy.core.analysis.phases import AnalysisPhase

MAX_CONDITION_CHARS = 2000
_TOKEN = re.compile(r"""("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)|(&&|\|\||!(?!=))""")
_WORDS = {"true": True, "false": False, "nil": None}


class ConditionError(ValueError):
    """A condition that cannot be evaluated against a result (the message says why)."""


def to_python(condition: str) -> str:
    """``condition`` with expr's ``&&``, ``||`` and ``!`` as Python's ``and``, ``or``, ``not``
    (string literals kept as they are; a backquoted one becomes a Python string).

    >>> to_python('!(result == "a&&b") && result != "x" || false')
    ' not (result == "a&&b")  and  result != "x"  or  false'
    """

    def rewrite(match: re.Match[str]) -> str:
        literal, operator = match.group(1), match.group(2)
        if literal is not None:
            return repr(literal[1:-1]) if literal.startswith("`") else literal
        return {"&&": " and ", "||": " or ", "!": " not "}[operator]

    return _TOKEN.sub(rewrite, condition)


def _as_float(value: Any) -> float:
    return float(value)


def _as_int(value: Any) -> int:
    return int(float(value)) if isinstance(value, str) else int(value)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _is_inf(value: Any) -> bool:
    return isinstance(value, float) and math.isinf(value)


def _default(value: Any, fallback: Any) -> Any:
    return fallback if value is None else value


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "asInt": _as_int,
    "asFloat": _as_float,
    "isNaN": _is_nan,
    "isInf": _is_inf,
    "isNil": lambda value: value is None,
    "default": _default,
}


def evaluate(condition: str, result: Any) -> bool:
    """The truth of ``condition`` with ``result`` bound to ``result``; :class:`ConditionError`
    when it cannot be evaluated or is not a boolean."""
    if len(condition) > MAX_CONDITION_CHARS:
        raise ConditionError(f"condition is {len(condition)} characters, over {MAX_CONDITION_CHARS}")
    evaluator = EvalWithCompoundTypes(functions=dict(FUNCTIONS), names={"result": result, **_WORDS})
    try:
        value = evaluator.eval(to_python(condition).strip())
    except Exception as problem:  # simpleeval's own errors and Python's (TypeError, IndexError, ...)
        raise ConditionError(f"cannot evaluate {condition!r}: {_why(problem)}") from None
    if not isinstance(value, bool):
        raise ConditionError(f"{condition!r} gives {value!r}, not true or false")
    return value


def _why(problem: Exception) -> str:
    text = str(problem).split("\n")[0]
    return f"{type(problem).__name__}: {text}" if text else type(problem).__name__


def assess_measurement(success: str, failure: str, result: Any) -> AnalysisPhase:
    """A measurement's phase from its result (upstream ``EvaluateResult``): with no condition it
    succeeds; with only one, the other is its negation; failure wins over success, and neither
    true is Inconclusive. A condition that cannot be evaluated raises :class:`ConditionError`.

    >>> assess_measurement("result > 1", "result < 0", 0.5)
    <AnalysisPhase.INCONCLUSIVE: 'Inconclusive'>
    """
    succeeded = evaluate(success, result) if success else False
    failed = evaluate(failure, result) if failure else False
    if not success and not failure:
        return AnalysisPhase.SUCCESSFUL
    if not failure:
        failed = not succeeded
    elif not success:
        succeeded = not failed
    if failed:
        return AnalysisPhase.FAILED
    return AnalysisPhase.SUCCESSFUL if succeeded else AnalysisPhase.INCONCLUSIVE
