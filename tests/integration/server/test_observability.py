"""Metrics and notifications fed by real rollouts: a git repo, the embedded cluster on a fake clock,
the controller wired as ``gitdeploy run`` wires it, /metrics scraped over HTTP and notifications
received by a real HTTP server."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client

from gitdeploy.cli.run_cmd import instrument, publish_app_states
from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.inspect import AppView, list_app_views
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.notify import Notifier
from gitdeploy.controller.watcher import watch_records, watch_rollouts
from gitdeploy.controller.workers import PassHooks
from gitdeploy.core.models import AppKey
from gitdeploy.localcluster import LocalCluster
from gitdeploy.server.http import HttpServer, Readiness
from gitdeploy.server.metrics import Metrics
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import settle as shared_settle
from tests.fixtures.waiting import eventually
from tests.integration.server.notify_receiver import Receiver
from tests.integration.server.scrape import Samples, parse, total

SECRET = b"notify-secret-0123"
SETTINGS = "paths: [apps]\ndefaultNamespace: shop\n"
WEB = AppKey("shop", "web")


def web(image: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {{gitdeploy.io/auto-rollback: "true"}}
spec:
  replicas: 2
  progressDeadlineSeconds: 30
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: main, image: "{image}"}}]
"""


pytestmark = pytest.mark.usefixtures("isolated_git_config")  # git without the machine's configuration


@pytest.fixture
def controller(
    git_remote: GitRemote, kube_client: Any, fake_clock: FakeClock, tmp_path: Path
) -> Iterator[Controller]:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        yield Controller(repo, Cluster(kube_client, "embedded"), fake_clock, workers=2)


def settle(controller: Controller, clock: FakeClock, metrics: Metrics, limit: float = 600) -> None:
    """What ``run`` does, with the fake clock following the requeue delays, until nothing is due;
    the apps-by-state gauges are published after each pass."""
    hooks = PassHooks(after_pass=lambda _reports, _seconds: publish_app_states(controller, metrics))
    shared_settle(controller, clock, limit, hooks)


def status_views(controller: Controller) -> list[AppView]:
    """What ``gitdeploy status -n shop`` shows."""
    return list_app_views(controller.cluster, "shop")


def scrape(metrics: Metrics) -> Samples:
    """GET /metrics over HTTP, parsed."""
    with HttpServer(metrics=metrics, readiness=Readiness(), host="127.0.0.1", port=0) as server:
        return parse(httpx.get(f"{server.url}/metrics", timeout=10).text)


def test_metrics_and_notifications_follow_a_rollout_a_failure_and_its_automatic_rollback(
    git_remote: GitRemote,
    controller: Controller,
    fake_clock: FakeClock,
    embedded_cluster: LocalCluster,
) -> None:
    # Given gitdeploy wired as `run --notify-url ... --notify-secret-file ...` wires it
    metrics = Metrics(version="test", process_collectors=False)
    embedded_cluster.stats.reset()
    with Receiver() as receiver:
        notifier = Notifier(receiver.url, SECRET)
        instrument(controller, metrics, notifier)
        try:
            # When web deploys, then a typo'd image fails at its deadline and is rolled back
            git_remote.commit_and_push("Deploy web", {"apps/web.yaml": web("nginx:1.25")})
            settle(controller, fake_clock, metrics)
            git_remote.commit_and_push("Typo", {"apps/web.yaml": web("nginx:missing")})
            settle(controller, fake_clock, metrics)
            messages = receiver.wait_for(6)
        finally:
            notifier.close()

    # Then every rollout is counted by cause
    samples = scrape(metrics)
    assert total(samples, "gitdeploy_rollouts_started_total", cause="ConfigChange") == 2
    assert total(samples, "gitdeploy_rollouts_started_total", cause="AutoRollback") == 1
    assert total(samples, "gitdeploy_rollouts_completed_total", cause="ConfigChange") == 1
    assert total(samples, "gitdeploy_rollouts_completed_total", cause="AutoRollback") == 1
    assert total(samples, "gitdeploy_rollouts_failed_total", cause="ConfigChange") == 1
    assert total(samples, "gitdeploy_rollouts_failed_total") == 1
    assert total(samples, "gitdeploy_rollbacks_total") == 1
    assert total(samples, "gitdeploy_rollout_duration_seconds_count", outcome="completed") == 2
    assert total(samples, "gitdeploy_rollout_duration_seconds_count", outcome="failed") == 1
    assert total(samples, "gitdeploy_rollout_duration_seconds_sum", outcome="failed") >= 30

    # ... every API request by verb and code, as many as the cluster served
    served = embedded_cluster.stats.snapshot()
    for verb in ("list", "create", "patch", "update"):
        counted = total(samples, "gitdeploy_kube_api_requests_total", verb=verb)
        assert counted > 0, verb
        assert counted == sum(n for (v, _), n in served.items() if v == verb), verb
    assert total(samples, "gitdeploy_kube_api_requests_total") == sum(served.values())
    assert total(samples, "gitdeploy_kube_api_requests_total", verb="create", code="201") > 0

    # ... the reconcile passes, the polls, and where the app stands now
    passes = total(samples, "gitdeploy_reconcile_duration_seconds_count", result="success")
    assert passes >= 6
    assert (
        total(samples, "gitdeploy_reconcile_duration_seconds_bucket", result="success", le="+Inf") == passes
    )
    assert total(samples, "gitdeploy_source_poll_duration_seconds_count") == 2
    assert total(samples, "gitdeploy_source_poll_errors_total") == 0
    assert total(samples, "gitdeploy_source_last_successful_poll_timestamp_seconds") > 0
    assert total(samples, "gitdeploy_apps_sync_state", state="Pinned") == 1
    assert total(samples, "gitdeploy_apps_sync_state", state="Synced") == 0
    assert total(samples, "gitdeploy_apps_health_state", state="Healthy") == 1
    assert total(samples, "gitdeploy_leader") == 0  # set by leader election, exported from the start

    # And the receiver got each transition, in order, signed, with the revision record
    assert all(m.signed_with(SECRET) for m in messages)
    bodies = [m.message for m in messages]
    assert [(b["event"], b["revision"]["revision"], b["revision"]["cause"]) for b in bodies] == [
        ("started", 1, "ConfigChange"),
        ("completed", 1, "ConfigChange"),
        ("started", 2, "ConfigChange"),
        ("failed", 2, "ConfigChange"),
        ("rolled_back", 3, "AutoRollback"),
        ("completed", 3, "AutoRollback"),
    ]
    assert [m.headers["x-gitdeploy-event"] for m in messages] == [b["event"] for b in bodies]
    assert all(b["app"] == {"namespace": "shop", "name": "web"} for b in bodies)
    failed = bodies[3]["revision"]
    assert (failed["outcome"], failed["reason"], failed["commit"]["subject"]) == (
        "Failed",
        "ProgressDeadlineExceeded",
        "Typo",
    )
    assert failed["images"] == [{"container": "main", "image": "nginx:missing"}]
    assert bodies[3]["durationSeconds"] >= 30
    assert (bodies[4]["revision"]["rolledBackFrom"], bodies[4]["revision"]["rolledBackTo"]) == (2, 1)
    assert len({m.headers["x-gitdeploy-delivery"] for m in messages}) == 6


def test_a_receiver_that_is_down_does_not_stop_rollouts(
    git_remote: GitRemote, controller: Controller, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    metrics = Metrics(version="test", process_collectors=False)
    notifier = Notifier(f"http://127.0.0.1:{port}/hook", retries=1, backoff=0.01)
    instrument(controller, metrics, notifier)
    with caplog.at_level(logging.WARNING, logger="gitdeploy.notify"):
        git_remote.commit_and_push("Deploy web", {"apps/web.yaml": web("nginx:1.25")})
        settle(controller, fake_clock, metrics)
        notifier.close(timeout=10)
    assert controller.reports[WEB].sync == "Synced"
    assert controller.reports[WEB].health == "Healthy"
    assert notifier.delivered == 0
    assert "not delivered: ConnectError" in caplog.text


def test_the_app_state_gauges_follow_the_cluster_as_status_does_not_the_last_pass(
    git_remote: GitRemote, controller: Controller, fake_clock: FakeClock, kube_client: Any
) -> None:
    # Given web settled, with gitdeploy wired as `run` wires it
    metrics = Metrics(version="test", process_collectors=False)
    instrument(controller, metrics)
    git_remote.commit_and_push("Deploy web", {"apps/web.yaml": web("nginx:1.25")})
    settle(controller, fake_clock, metrics)
    samples = scrape(metrics)
    assert total(samples, "gitdeploy_apps_sync_state", state="Synced") == 1
    assert total(samples, "gitdeploy_apps_health_state", state="Healthy") == 1

    # When its ReplicaSet is scaled to 0 by hand, and no pass has run since
    apps = client.AppsV1Api(kube_client)
    [name] = [rs.name for rs in controller.cluster.list_replica_sets("shop", "web")]
    apps.patch_namespaced_replica_set_scale(name, "shop", {"spec": {"replicas": 0}})
    eventually(lambda: not any(s.ready for s in status_views(controller)), "the pods to go")

    # Then the gauges say what `gitdeploy status` says, not the last pass's Synced Healthy
    [shown] = status_views(controller)
    assert (shown.sync, shown.health) == ("OutOfSync", "Degraded")
    samples = scrape(metrics)
    assert total(samples, "gitdeploy_apps_sync_state", state="OutOfSync") == 1
    assert total(samples, "gitdeploy_apps_sync_state", state="Synced") == 0
    assert total(samples, "gitdeploy_apps_health_state", state="Degraded") == 1
    assert total(samples, "gitdeploy_apps_health_state", state="Healthy") == 0

    # And once a pass scales it back and the pods are ready, they are green again
    controller.mark_due()
    settle(controller, fake_clock, metrics)
    samples = scrape(metrics)
    assert total(samples, "gitdeploy_apps_sync_state", state="Synced") == 1
    assert total(samples, "gitdeploy_apps_health_state", state="Healthy") == 1


def test_a_scrape_before_the_first_commit_is_read_counts_nothing_and_lists_nothing(
    git_remote: GitRemote, controller: Controller, fake_clock: FakeClock, embedded_cluster: LocalCluster
) -> None:
    # Given web running, and a new gitdeploy wired as `run` wires it that has not read git yet
    git_remote.commit_and_push("Deploy web", {"apps/web.yaml": web("nginx:1.25")})
    settle(controller, fake_clock, Metrics(version="test", process_collectors=False))
    restarted = Controller(controller.repo, controller.cluster, fake_clock, workers=2)
    metrics = Metrics(version="test", process_collectors=False)
    instrument(restarted, metrics)

    # When /metrics is scraped
    embedded_cluster.stats.reset()
    samples = scrape(metrics)

    # Then the apps-by-state gauges have no series (not known yet), and it asked the API server nothing
    assert not [name for name, _ in samples if name.endswith(("_sync_state", "_health_state"))]
    assert requests_but_watches(embedded_cluster) == {}

    # When it has read the commit, then a scrape counts web
    restarted.poll()
    samples = scrape(metrics)
    assert total(samples, "gitdeploy_apps_sync_state", state="Synced") == 1
    assert total(samples, "gitdeploy_apps_health_state", state="Healthy") == 1


def test_once_the_watches_run_a_scrape_counts_the_apps_from_them_with_no_api_request(
    git_remote: GitRemote,
    controller: Controller,
    fake_clock: FakeClock,
    kube_client: Any,
    embedded_cluster: LocalCluster,
) -> None:
    # Given web settled, with gitdeploy wired as `run` wires it and its watches running
    metrics = Metrics(version="test", process_collectors=False)
    instrument(controller, metrics)
    git_remote.commit_and_push("Deploy web", {"apps/web.yaml": web("nginx:1.25")})
    settle(controller, fake_clock, metrics)
    stop = threading.Event()
    watch_records(controller, stop, lambda: None)
    watch_rollouts(controller, stop, lambda: None)
    try:
        eventually(lambda: controller.watch_cache.contents("shop") is not None, "the watches to list shop")

        # When /metrics is scraped
        embedded_cluster.stats.reset()
        samples = scrape(metrics)

        # Then web is counted Synced Healthy, and the scrape asked the API server nothing
        assert total(samples, "gitdeploy_apps_sync_state", state="Synced") == 1
        assert total(samples, "gitdeploy_apps_health_state", state="Healthy") == 1
        assert requests_but_watches(embedded_cluster) == {}

        # When its ReplicaSet's image is edited by hand, then it is scaled to 0 (and no pass runs)
        [name] = [rs.name for rs in controller.cluster.list_replica_sets("shop", "web")]
        apps = client.AppsV1Api(kube_client)
        embedded_cluster.stats.reset()
        edited = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:9"}]}}}}
        apps.patch_namespaced_replica_set(name, "shop", edited)

        # Then the scrapes say so as soon as the watch tells it, still with no request of their own
        eventually(lambda: gauges(metrics) == ("OutOfSync", "Healthy"), "the gauges to show the edit")
        apps.patch_namespaced_replica_set_scale(name, "shop", {"spec": {"replicas": 0}})
        eventually(lambda: gauges(metrics) == ("OutOfSync", "Degraded"), "the gauges to show the scale")
        assert {verb for verb, _ in requests_but_watches(embedded_cluster)} == {"patch"}  # the test's
        [shown] = status_views(controller)
        assert (shown.sync, shown.health) == ("OutOfSync", "Degraded")
    finally:
        stop.set()


def gauges(metrics: Metrics) -> tuple[str, str] | None:
    """The sync and health state of the one app, as one scrape counts it."""
    samples = scrape(metrics)
    [sync] = [
        dict(labels)["state"] for (n, labels), v in samples.items() if n == "gitdeploy_apps_sync_state" and v
    ]
    [health] = [
        dict(labels)["state"]
        for (n, labels), v in samples.items()
        if n == "gitdeploy_apps_health_state" and v
    ]
    return sync, health


def requests_but_watches(cluster: LocalCluster) -> dict[tuple[str, str], int]:
    """The API requests the cluster served since its stats were reset, watches left out."""
    return {key: n for key, n in cluster.stats.snapshot().items() if key[0] != "watch" and n}
