"""An analysis run as it is kept in the cluster: one annotation of the canary ReplicaSet, its value
prefixed, as the canary walk's, with the revision and the step it belongs to (``3:4:{json}``).

Bounded: a metric keeps its last :data:`~.runs.MEASUREMENT_HISTORY_LIMIT` measurements, each with
a value of at most :data:`~.values.MAX_VALUE_CHARS` characters and a message cut to
:data:`MAX_MESSAGE_CHARS`. A value that cannot be read is no run (the step starts one again).

>>> from gitdeploy.core.analysis.phases import AnalysisPhase
>>> run = AnalysisRun(10.0, (MetricResult("ok", AnalysisPhase.RUNNING,
...     (Measurement(AnalysisPhase.SUCCESSFUL, 10.0, 11.0, "[1.0]"),), count=1, successful=1),),
...     args=(("svc", "web"),))
>>> text = encode_run(3, 4, run)
>>> decode_run(text, 3, 4) == run, decode_run(text, 3, 5), decode_run("garbage", 3, 4)
(True, None, None)
"""

from __future__ import annotations

import json
from typing import Any

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.runs import AnalysisRun, Measurement, MetricResult

MAX_MESSAGE_CHARS = 300
_COUNTS = ("count", "successful", "failed", "inconclusive", "error", "consecutive_error")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 1] + "…"


def _measurement(m: Measurement) -> list[Any]:
    return [m.phase.value, m.started_at, m.finished_at, m.value, _cut(m.message)]


def encode_run(revision: int, step: int, run: AnalysisRun) -> str:
    data = {
        "started": run.started_at,
        "phase": run.phase.value,
        "message": _cut(run.message),
        "args": [list(pair) for pair in run.args],
        "metrics": [
            {
                "name": r.name,
                "phase": r.phase.value,
                "message": _cut(r.message),
                "counts": [getattr(r, name) for name in _COUNTS],
                "wanted": r.wanted,
                "measurements": [_measurement(m) for m in r.measurements],
            }
            for r in run.metrics
        ],
    }
    return f"{revision}:{step}:{json.dumps(data, separators=(',', ':'), ensure_ascii=False)}"


def _metric(raw: dict[str, Any]) -> MetricResult:
    return MetricResult(
        name=str(raw["name"]),
        phase=AnalysisPhase(raw["phase"]),
        measurements=tuple(
            Measurement(AnalysisPhase(p), float(s), float(f), str(v), str(m))
            for p, s, f, v, m in raw["measurements"]
        ),
        message=str(raw["message"]),
        wanted=None if raw.get("wanted") is None else int(raw["wanted"]),
        **{name: int(n) for name, n in zip(_COUNTS, raw["counts"], strict=True)},
    )


def decode_run(value: str, revision: int, step: int) -> AnalysisRun | None:
    """The run of ``revision``'s step ``step`` kept in ``value`` (None: another's, or none)."""
    prefix = f"{revision}:{step}:"
    if not value.startswith(prefix):
        return None
    try:
        data = json.loads(value[len(prefix) :])
        return AnalysisRun(
            started_at=float(data["started"]),
            metrics=tuple(_metric(raw) for raw in data["metrics"]),
            phase=AnalysisPhase(data["phase"]),
            message=str(data["message"]),
            args=tuple((str(name), str(arg)) for name, arg in data["args"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
