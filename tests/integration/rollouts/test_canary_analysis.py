"""A canary's ``analysis`` step and background analysis on the embedded cluster and a fake clock,
decided by a real Prometheus scraping an exporter the test sets: a good result walks on to full
size, a bad one aborts by itself (the stable back, the revision Failed naming the metric and its
measurements), and a restart mid-analysis keeps the run. The canary's bounds are checked after
every write."""

from __future__ import annotations

from gitdeploy.core.analysis.runs import AnalysisRun
from gitdeploy.core.analysis.stored import decode_run
from gitdeploy.core.canarystate import CANARY_ANALYSIS_ANNOTATION
from gitdeploy.core.history.records import FailureReason, Outcome
from gitdeploy.core.models import App
from gitdeploy.core.rollout import AppPhase
from tests.fixtures.argorollouts import canary_rollout
from tests.fixtures.canaries import canary_bounds, check_every_write, sizes
from tests.fixtures.prometheus import RunningPrometheus
from tests.fixtures.rollouts import World, commit, load_app

GAUGE = "checkout_success_rate"
STEPS = """\
      - setWeight: 50
      - analysis:
          templates:
          - templateName: success-rate
          args:
          - name: service
            value: web
"""
TEMPLATE = """\
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: success-rate
  namespace: shop
spec:
  args:
  - name: service
  metrics:
  - name: success-rate
    interval: 30s
    count: 2
    successCondition: result[0] >= 0.95
    provider:
      prometheus:
        address: {address}
        query: {gauge}{{job="exporter"}} # service {{{{args.service}}}}
"""
V2 = commit("Bump web to 1.26", 2)


BACKGROUND = """\
      analysis:
        templates:
        - templateName: success-rate
        args:
        - name: service
          value: web
        startingStep: 1
"""
PAUSED = """\
      - setWeight: 50
      - pause: {duration: 5m}
"""


def web(image: str, prometheus: RunningPrometheus, *, background: bool = False) -> App:
    template = TEMPLATE.format(address=prometheus.url, gauge=GAUGE)
    if background:  # measured every 30 s while the canary walks its steps
        rollout = canary_rollout(image, steps=PAUSED, extra=BACKGROUND)
        return load_app(rollout + template.replace("    count: 2\n", ""))
    return load_app(canary_rollout(image, steps=STEPS) + template)


def canary_with_analysis(
    world: World, prometheus: RunningPrometheus, *, background: bool = False
) -> tuple[App, App]:
    """Given web v1 running 4 replicas, and v2 whose canary runs the analysis at 50%."""
    v1 = web("nginx:1.25", prometheus, background=background)
    world.roll(v1, commit("Deploy web", 1))
    v2 = web("nginx:1.26", prometheus, background=background)
    check_every_write(world, canary_bounds(v2))
    return v1, v2


def the_run(world: World, app: App) -> AnalysisRun:
    """The run of revision 2's analysis step (index 1), as its ReplicaSet keeps it."""
    (rs,) = [
        r
        for r in world.adapter.list_replica_sets("shop", "web")
        if r.state.template_hash == app.template_hash
    ]
    run = decode_run(rs.annotation(CANARY_ANALYSIS_ANNOTATION), 2, 1)
    assert run is not None
    return run


def test_a_good_result_walks_on_and_a_restart_keeps_the_run(
    world: World, prometheus: RunningPrometheus
) -> None:
    v1, v2 = canary_with_analysis(world, prometheus)
    prometheus.expose(GAUGE, 0.99)
    check = canary_bounds(v2)

    # When the canary reached its analysis and measured once
    steps = world.roll(v2, V2, check=check, tick=10, until=lambda s: "success-rate: 1 measured" in s.message)
    assert "step 2/2 (analysis success-rate)" in steps[-1].message and sizes(world, v2, v1) == (2, 2)
    measured_before = the_run(world, v2).metrics[0].measurements
    # and gitdeploy restarts (nothing in memory)
    world.restart_gitdeploy()
    steps = world.roll(v2, V2, check=check, tick=10)

    # Then the run goes on where it was: a second measurement 30 s after the first, then full size
    assert steps[-1].phase is AppPhase.COMPLETE and sizes(world, v2, v1) == (4, 0)
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.outcome is Outcome.COMPLETE
    (rs,) = [
        r for r in world.adapter.list_replica_sets("shop", "web") if r.state.template_hash == v2.template_hash
    ]
    run = decode_run(rs.annotation(CANARY_ANALYSIS_ANNOTATION), 2, 1)
    assert run is not None
    (result,) = run.metrics
    assert [(m.phase.value, m.value) for m in result.measurements] == [("Successful", "[0.99]")] * 2
    first, second = result.measurements
    assert (first,) == measured_before and second.finished_at - first.finished_at >= 30
    assert [reason for reason, _ in world.events(v2, "AnalysisSuccessful")] == ["AnalysisSuccessful"]
    assert world.violations == []


def test_a_bad_result_aborts_and_records_the_metric_and_its_measurements(
    world: World, prometheus: RunningPrometheus
) -> None:
    v1, v2 = canary_with_analysis(world, prometheus)
    prometheus.expose(GAUGE, 0.42)

    steps = world.roll(v2, V2, check=canary_bounds(v2), tick=10)

    # Then the canary is gone, the stable back at full size, within the bounds
    assert sizes(world, v2, v1) == (0, 4) and world.violations == []
    # and revision 2 Failed, aborted by the analysis, naming the metric and its measurement
    entry = world.record(v2).entry(2)
    assert entry is not None
    assert (entry.outcome, entry.reason) == (Outcome.FAILED, FailureReason.ROLLOUT_ABORTED)
    assert "aborted by analysis success-rate" in entry.message
    assert "metric 'success-rate' assessed Failed due to failed (1) > failureLimit (0)" in entry.message
    assert "measurements of success-rate: Failed [0.42]" in entry.message, entry.message
    (event,) = world.events(v2, "AnalysisFailed")
    assert "Failed [0.42]" in event[1]
    assert steps[-1].phase is AppPhase.FAILED
    # and with git unchanged it stays so
    assert world.pass_once(v2, V2).actions == ()


def test_a_background_analysis_runs_from_its_starting_step_and_aborts_when_it_fails(
    world: World, prometheus: RunningPrometheus
) -> None:
    v1, v2 = canary_with_analysis(world, prometheus, background=True)
    prometheus.expose(GAUGE, 0.99)
    check = canary_bounds(v2)

    # When the canary is in its 5 minute pause at 50% and the background analysis measured twice
    world.roll(v2, V2, check=check, tick=10, until=lambda s: "paused for" in s.message)
    began = world.clock.now()
    steps = world.roll(v2, V2, check=check, tick=10, until=lambda s: world.clock.now() > began + 40)
    assert "paused for" in steps[-1].message and sizes(world, v2, v1) == (2, 2)
    # and then the success rate drops
    prometheus.expose(GAUGE, 0.42)
    steps = world.roll(v2, V2, check=check, tick=10)

    # Then the rollout aborts before the pause is over: the stable back, revision 2 Failed
    assert world.clock.now() < began + 300 and sizes(world, v2, v1) == (0, 4)
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.outcome is Outcome.FAILED
    assert "aborted by background analysis success-rate" in entry.message
    assert "measurements of success-rate: Successful [0.99] at" in entry.message
    assert entry.message.count("Successful [0.99]") >= 2 and "Failed [0.42]" in entry.message
    assert steps[-1].phase is AppPhase.FAILED and world.violations == []
