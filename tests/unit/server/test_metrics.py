"""Metrics: every series of issue 10 is exposed, with the values the calls imply, in its own registry."""

from __future__ import annotations

import threading
import time

import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from gitdeploy.core.rollout.outputs import Event
from gitdeploy.server.metrics import AppStates, HealthState, Metrics, SyncState


def samples(metrics: Metrics) -> list[Sample]:
    text = metrics.render().decode("utf-8")
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def value(metrics: Metrics, name: str, **labels: str) -> float:
    found = [s.value for s in samples(metrics) if s.name == name and s.labels == labels]
    assert len(found) == 1, f"{name}{labels}: {len(found)} samples"
    return found[0]


def has_series(metrics: Metrics, name: str, **labels: str) -> bool:
    return any(s.name == name and s.labels == labels for s in samples(metrics))


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(version="9.9.9", clock=lambda: 1_700_000_000.0, process_collectors=False)


def test_reconcile_histogram_counts_and_sums_by_result(metrics: Metrics) -> None:
    metrics.observe_reconcile(0.02, "success")
    metrics.observe_reconcile(0.3, "success")
    metrics.observe_reconcile(2.0, "error")

    assert value(metrics, "gitdeploy_reconcile_duration_seconds_count", result="success") == 2
    assert value(metrics, "gitdeploy_reconcile_duration_seconds_sum", result="success") == pytest.approx(0.32)
    assert value(metrics, "gitdeploy_reconcile_duration_seconds_bucket", result="success", le="0.025") == 1
    assert value(metrics, "gitdeploy_reconcile_duration_seconds_bucket", result="success", le="+Inf") == 2
    assert value(metrics, "gitdeploy_reconcile_duration_seconds_count", result="error") == 1


def test_a_negative_duration_is_recorded_as_zero(metrics: Metrics) -> None:
    metrics.observe_reconcile(-0.5, "success")

    assert value(metrics, "gitdeploy_reconcile_duration_seconds_sum", result="success") == 0


def test_app_states_are_a_snapshot_with_every_known_state(metrics: Metrics) -> None:
    # not known before the apps are first counted: no series
    assert not has_series(metrics, "gitdeploy_apps_sync_state", state=SyncState.SYNCED.value)
    assert not has_series(metrics, "gitdeploy_apps_health_state", state=HealthState.HEALTHY.value)

    metrics.set_app_states(
        sync={SyncState.SYNCED: 40, SyncState.OUT_OF_SYNC: 2},
        health={HealthState.HEALTHY: 39, HealthState.PROGRESSING: 2, "Custom": 1},
    )
    for state in set(SyncState) - {SyncState.SYNCED, SyncState.OUT_OF_SYNC}:
        assert value(metrics, "gitdeploy_apps_sync_state", state=state.value) == 0
    for health in set(HealthState) - {HealthState.HEALTHY, HealthState.PROGRESSING}:
        assert value(metrics, "gitdeploy_apps_health_state", state=health.value) == 0
    assert value(metrics, "gitdeploy_apps_sync_state", state="Synced") == 40
    assert value(metrics, "gitdeploy_apps_sync_state", state="OutOfSync") == 2
    assert value(metrics, "gitdeploy_apps_health_state", state="Custom") == 1

    metrics.set_app_states(sync={"Synced": 42}, health={"Healthy": 42})
    assert value(metrics, "gitdeploy_apps_sync_state", state="OutOfSync") == 0
    assert value(metrics, "gitdeploy_apps_health_state", state="Progressing") == 0
    assert value(metrics, "gitdeploy_apps_health_state", state="Custom") == 0
    assert value(metrics, "gitdeploy_apps_health_state", state="Healthy") == 42


def test_negative_app_counts_are_refused_and_change_nothing(metrics: Metrics) -> None:
    metrics.set_app_states(sync={"Synced": 3}, health={"Healthy": 3})

    with pytest.raises(ValueError, match="negative"):
        metrics.set_app_states(sync={"Synced": 5}, health={"Healthy": -1})

    assert value(metrics, "gitdeploy_apps_sync_state", state="Synced") == 3


def test_rollout_counters_by_cause(metrics: Metrics) -> None:
    metrics.rollout_started("config-change")
    metrics.rollout_started("config-change")
    metrics.rollout_started("image-change")
    metrics.rollout_completed("config-change", seconds=42.0)
    metrics.rollout_failed("image-change", seconds=600.0)
    metrics.rollout_failed("config-change")
    metrics.rollback_requested()

    assert value(metrics, "gitdeploy_rollouts_started_total", cause="config-change") == 2
    assert value(metrics, "gitdeploy_rollouts_started_total", cause="image-change") == 1
    assert value(metrics, "gitdeploy_rollouts_completed_total", cause="config-change") == 1
    assert value(metrics, "gitdeploy_rollouts_failed_total", cause="image-change") == 1
    assert value(metrics, "gitdeploy_rollouts_failed_total", cause="config-change") == 1
    assert value(metrics, "gitdeploy_rollout_duration_seconds_count", outcome="completed") == 1
    assert value(metrics, "gitdeploy_rollout_duration_seconds_count", outcome="failed") == 1
    assert value(metrics, "gitdeploy_rollout_duration_seconds_sum", outcome="failed") == 600
    assert value(metrics, "gitdeploy_rollbacks_total") == 1


def test_polls_errors_and_last_success(metrics: Metrics) -> None:
    assert value(metrics, "gitdeploy_source_last_successful_poll_timestamp_seconds") == 0

    metrics.observe_poll(0.2)
    metrics.observe_poll(5.0, error=True)

    assert value(metrics, "gitdeploy_source_poll_duration_seconds_count") == 2
    assert value(metrics, "gitdeploy_source_poll_duration_seconds_sum") == pytest.approx(5.2)
    assert value(metrics, "gitdeploy_source_poll_errors_total") == 1
    assert value(metrics, "gitdeploy_source_last_successful_poll_timestamp_seconds") == 1_700_000_000.0


def test_api_requests_by_verb_and_code(metrics: Metrics) -> None:
    metrics.api_request("PATCH", 200)
    metrics.api_request("patch", 200)
    metrics.api_request("patch", 409)
    metrics.api_request("list", 200)

    assert value(metrics, "gitdeploy_kube_api_requests_total", verb="patch", code="200") == 2
    assert value(metrics, "gitdeploy_kube_api_requests_total", verb="patch", code="409") == 1
    assert value(metrics, "gitdeploy_kube_api_requests_total", verb="list", code="200") == 1


def test_leader_gauge_follows_the_lease(metrics: Metrics) -> None:
    assert value(metrics, "gitdeploy_leader") == 0
    metrics.set_leader(True)
    assert value(metrics, "gitdeploy_leader") == 1
    metrics.set_leader(False)
    assert value(metrics, "gitdeploy_leader") == 0


def test_build_info_and_webhook_deliveries(metrics: Metrics) -> None:
    metrics.webhook_delivery("github", "triggered")

    assert value(metrics, "gitdeploy_build_info", version="9.9.9") == 1
    assert value(metrics, "gitdeploy_webhook_deliveries_total", provider="github", outcome="triggered") == 1


def test_instances_do_not_share_series_or_touch_the_global_registry() -> None:
    first = Metrics(process_collectors=False)
    second = Metrics(process_collectors=False)

    first.rollout_started("config-change")

    assert value(first, "gitdeploy_rollouts_started_total", cause="config-change") == 1
    assert not has_series(second, "gitdeploy_rollouts_started_total", cause="config-change")
    assert REGISTRY.get_sample_value("gitdeploy_rollouts_started_total", {"cause": "config-change"}) is None


def test_process_collectors_are_on_by_default() -> None:
    names = {s.name for s in samples(Metrics())}

    assert "python_info" in names
    assert "python_gc_collections_total" in names


def test_followed_app_states_are_read_at_each_render_and_none_keeps_the_last(metrics: Metrics) -> None:
    answers: list[tuple[dict[str, int], dict[str, int], int] | None] = [
        ({"Synced": 2}, {"Healthy": 2}, 0),
        None,  # the cluster could not be read
        ({"Synced": 1, "OutOfSync": 1}, {"Healthy": 1, "Degraded": 1}, 1),
    ]
    metrics.follow_app_states(lambda: answers.pop(0))

    def scraped() -> dict[tuple[str, str], float]:
        return {(s.name, s.labels.get("state", "")): s.value for s in samples(metrics)}

    assert scraped()[("gitdeploy_apps_sync_state", "Synced")] == 2
    assert scraped()[("gitdeploy_apps_sync_state", "Synced")] == 2  # kept: nothing could be read
    last = scraped()
    assert last[("gitdeploy_apps_sync_state", "Synced")] == 1
    assert last[("gitdeploy_apps_health_state", "Degraded")] == 1
    assert last[("gitdeploy_apps_image_triggers_suspended", "")] == 1
    assert answers == []


def test_scrapes_that_come_while_the_app_states_are_read_take_that_reads_answer(metrics: Metrics) -> None:
    reads: list[int] = []
    started, release = threading.Event(), threading.Event()

    def read() -> AppStates:
        reads.append(len(reads) + 1)
        started.set()
        release.wait(5)  # a read that takes a while: a fleet of thousands of apps
        return {"Synced": len(reads)}, {"Healthy": 1}, 0

    metrics.follow_app_states(read)
    bodies: list[bytes] = []
    # Given a scrape whose read of the app states is under way
    first = threading.Thread(target=lambda: bodies.append(metrics.render()))
    first.start()
    assert started.wait(5)
    # When three more scrapes come before it ends
    more = [threading.Thread(target=lambda: bodies.append(metrics.render())) for _ in range(3)]
    for scrape in more:
        scrape.start()
    time.sleep(0.1)
    release.set()
    for scrape in (first, *more):
        scrape.join(5)
    # Then the four share its one read
    assert reads == [1]
    assert len(bodies) == 4
    assert all(b'gitdeploy_apps_sync_state{state="Synced"} 1.0' in body for body in bodies)
    # And a scrape after it reads again
    assert value(metrics, "gitdeploy_apps_sync_state", state="Synced") == 2
    assert reads == [1, 2]


def test_a_scrape_does_not_wait_past_its_budget_for_a_slow_read() -> None:
    metrics = Metrics(process_collectors=False, states_wait=0.05)
    release = threading.Event()
    reads: list[int] = []

    def read() -> AppStates:
        reads.append(len(reads) + 1)
        if len(reads) == 2:
            release.wait(5)  # thousands of apps changed at once: a handover
        synced = 1 if len(reads) == 1 else 5
        return {"Synced": synced}, {"Healthy": synced}, 0

    metrics.follow_app_states(read)
    assert value(metrics, "gitdeploy_apps_sync_state", state="Synced") == 1
    metrics.set_shard(owned=5, moves=4)
    # Given a read of the app states that outlasts a scrape's budget
    # When scrapes come meanwhile: they answer with the last read's counts and the other series
    # as they are now, and start no read of their own
    began = time.monotonic()
    assert value(metrics, "gitdeploy_apps_sync_state", state="Synced") == 1
    assert value(metrics, "gitdeploy_shard_apps_owned") == 5
    assert time.monotonic() - began < 2
    assert reads == [1, 2]
    # Then, the read ended, a scrape has its counts
    release.set()
    deadline = time.monotonic() + 5
    while value(metrics, "gitdeploy_apps_sync_state", state="Synced") != 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert value(metrics, "gitdeploy_apps_sync_state", state="Synced") == 5


def test_a_failed_read_of_the_app_states_fails_the_scrapes_sharing_it_and_the_next_reads_anew(
    metrics: Metrics,
) -> None:
    answers: list[AppStates | Exception] = [RuntimeError("a bug"), ({"Synced": 3}, {}, 0)]

    def read() -> AppStates:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    metrics.follow_app_states(read)
    with pytest.raises(RuntimeError):
        metrics.render()
    assert value(metrics, "gitdeploy_apps_sync_state", state="Synced") == 3


def test_canary_steps_and_analysis_runs_by_phase_count_from_the_passes_events(metrics: Metrics) -> None:
    # every phase a run ends in is exported at 0 from the start
    for phase in ("Successful", "Inconclusive", "Error", "Failed"):
        assert value(metrics, "gitdeploy_analysis_runs_total", phase=phase) == 0
    assert value(metrics, "gitdeploy_canary_steps_total") == 0

    for reason in ("CanaryStep", "CanaryStep", "AnalysisSuccessful", "AnalysisFailed", "AnalysisError"):
        metrics.observe_event(Event(reason, "Revision 2: ..."))
    for other in ("ScalingReplicaSet", "RolloutComplete", "AnalysisRunning", "Analysis"):
        metrics.observe_event(Event(other, "not counted"))

    assert value(metrics, "gitdeploy_canary_steps_total") == 2
    assert value(metrics, "gitdeploy_analysis_runs_total", phase="Successful") == 1
    assert value(metrics, "gitdeploy_analysis_runs_total", phase="Failed") == 1
    assert value(metrics, "gitdeploy_analysis_runs_total", phase="Error") == 1
    assert value(metrics, "gitdeploy_analysis_runs_total", phase="Inconclusive") == 0
    assert not has_series(metrics, "gitdeploy_analysis_runs_total", phase="Running")
