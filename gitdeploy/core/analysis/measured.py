"""What a running analysis has measured so far, one line per metric, as ``status`` and
``rollout status`` show it: computed from the run kept in the canary ReplicaSet's annotation
(:mod:`~gitdeploy.core.analysis.stored`), never from the pass that last wrote it.

>>> from gitdeploy.core.analysis.runs import Measurement
>>> ok = Measurement(AnalysisPhase.SUCCESSFUL, 10.0, 11.0, "0.01")
>>> metric_line(MetricResult("error-rate", AnalysisPhase.RUNNING, (ok,), count=2, successful=2, wanted=5))
'error-rate: 2/5 measurements, last 0.01 (Successful)'
>>> metric_line(MetricResult("up", AnalysisPhase.PENDING, wanted=1))
'up: not measured yet'
"""

from __future__ import annotations

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.runs import AnalysisRun, MetricResult

MAX_SHOWN_CHARS = 60
"""A value or an error's message longer than this is cut in a status line."""


def _shown(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 1] + "…"


def metric_line(result: MetricResult) -> str:
    """``name: 2/5 measurements, last VALUE (PHASE)``; without a ``count`` (measured until the
    run ends) ``2 measurements``; an Error measurement shows its message.

    >>> from gitdeploy.core.analysis.runs import Measurement
    >>> failing = Measurement(AnalysisPhase.ERROR, 0.0, 1.0, message="Get http://x: refused")
    >>> metric_line(MetricResult("p95", AnalysisPhase.RUNNING, (failing,), error=1, consecutive_error=1))
    'p95: 0 measurements, 1 error, last error: Get http://x: refused'
    >>> one = Measurement(AnalysisPhase.SUCCESSFUL, 0.0, 1.0, "[3]")
    >>> metric_line(MetricResult("rps", AnalysisPhase.RUNNING, (one,), count=1, successful=1))
    'rps: 1 measurement, last [3] (Successful)'
    """
    if not result.measurements and not result.count:
        return f"{result.name}: not measured yet"
    count = str(result.count) if result.wanted is None else f"{result.count}/{result.wanted}"
    noun = "measurement" if result.count == 1 and result.wanted is None else "measurements"
    parts = [f"{count} {noun}"]
    if result.error:
        parts.append(f"{result.error} error{'s' * (result.error > 1)}")
    last = result.measurements[-1] if result.measurements else None
    if last is not None and last.phase is AnalysisPhase.ERROR:
        parts.append(f"last error: {_shown(last.message)}")
    elif last is not None:
        parts.append(f"last {_shown(last.value) or '(no value)'} ({last.phase.value})")
    return f"{result.name}: {', '.join(parts)}"


def run_lines(run: AnalysisRun, label: str) -> tuple[str, ...]:
    """A line per metric of a run under way, each led by ``label`` (``analysis`` or
    ``background analysis``); nothing once the run is over.

    >>> run = AnalysisRun(0.0, (MetricResult("rate", wanted=3), MetricResult("up", wanted=1)))
    >>> run_lines(run, "background analysis")
    ('background analysis rate: not measured yet', 'background analysis up: not measured yet')
    >>> run_lines(AnalysisRun(0.0, phase=AnalysisPhase.SUCCESSFUL), "analysis")
    ()
    """
    if run.phase.completed:
        return ()
    return tuple(f"{label} {metric_line(result)}" for result in run.metrics)
