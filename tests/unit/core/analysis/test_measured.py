"""What a running analysis has measured, as `status` shows it (pure): a line per metric with its
count against the count that completes it, and the last measurement's value or error."""

from __future__ import annotations

import pytest

from gitdeploy.core.analysis.measured import metric_line, run_lines
from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.runs import AnalysisRun, Measurement, MetricResult, advance
from gitdeploy.core.analysis.stored import decode_run, encode_run
from gitdeploy.core.analysistemplates import Metric, WebProvider

P = AnalysisPhase


def measured(phase: AnalysisPhase, value: str = "", message: str = "") -> Measurement:
    return Measurement(phase, 0.0, 1.0, value, message)


@pytest.mark.parametrize(
    ("result", "line"),
    [
        (MetricResult("rate", wanted=5), "rate: not measured yet"),
        (
            MetricResult(
                "rate", P.RUNNING, (measured(P.SUCCESSFUL, "0.01"),) * 2, count=2, successful=2, wanted=5
            ),
            "rate: 2/5 measurements, last 0.01 (Successful)",
        ),
        (
            MetricResult("rate", P.RUNNING, (measured(P.FAILED, "0.42"),), count=1, failed=1, wanted=5),
            "rate: 1/5 measurements, last 0.42 (Failed)",
        ),
        # measured until the run ends (an interval, no count): no total
        (
            MetricResult("rate", P.RUNNING, (measured(P.SUCCESSFUL, "[1]"),) * 3, count=3, successful=3),
            "rate: 3 measurements, last [1] (Successful)",
        ),
        # an Error does not count; its message shows, cut to a status line
        (
            MetricResult(
                "rate",
                P.RUNNING,
                (measured(P.SUCCESSFUL, "1"), measured(P.ERROR, message="refused\n" + "x" * 100)),
                count=1,
                successful=1,
                error=1,
                wanted=3,
            ),
            "rate: 1/3 measurements, 1 error, last error: refused " + "x" * 51 + "…",
        ),
        (
            MetricResult(
                "rate", P.RUNNING, (measured(P.INCONCLUSIVE, ""),), count=1, inconclusive=1, wanted=2
            ),
            "rate: 1/2 measurements, last (no value) (Inconclusive)",
        ),
    ],
)
def test_a_metric_line(result: MetricResult, line: str) -> None:
    assert metric_line(result) == line


def test_the_count_wanted_is_kept_with_the_run_in_the_cluster() -> None:
    # Given a run advanced by one measurement of a metric measured 5 times
    metric = Metric("rate", WebProvider("http://x"), interval_seconds=60, count=5)
    run = advance((metric,), AnalysisRun(0.0), {"rate": measured(P.SUCCESSFUL, "0.99")})

    # When it is kept in an annotation and read back
    kept = decode_run(encode_run(3, 1, run), 3, 1)

    # Then status can say 1/5 from it alone
    assert kept is not None and run_lines(kept, "analysis") == (
        "analysis rate: 1/5 measurements, last 0.99 (Successful)",
    )


def test_a_run_kept_before_the_count_was_kept_reads_without_a_total() -> None:
    run = AnalysisRun(0.0, (MetricResult("rate", P.RUNNING, (measured(P.SUCCESSFUL, "1"),), count=1),))
    older = encode_run(3, 1, run).replace(',"wanted":null', "")
    assert '"wanted"' not in older
    kept = decode_run(older, 3, 1)
    assert kept == run and run_lines(kept, "analysis") == (
        "analysis rate: 1 measurement, last 1 (Successful)",
    )


@pytest.mark.parametrize("phase", [P.SUCCESSFUL, P.FAILED, P.ERROR, P.INCONCLUSIVE])
def test_a_run_that_is_over_shows_nothing(phase: AnalysisPhase) -> None:
    assert run_lines(AnalysisRun(0.0, (MetricResult("rate", wanted=1),), phase), "analysis") == ()
