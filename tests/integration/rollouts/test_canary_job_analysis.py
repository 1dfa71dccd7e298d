"""A canary's ``analysis`` step whose metric is a ``job`` (Argo Rollouts' job provider) on the
embedded cluster and a fake clock: the measurement is a pod built from the Job's template, in
flight while it runs (a restart of gitdeploy then picks the same pod up, never starting a second
one), Successful when the pod succeeds (the canary walks on to full size) and Failed when it fails
(the canary aborts by itself, the history naming the metric and the pod). The simulated kubelet
decides the pod's outcome as it does a hook's: an image it is told crashes fails. The canary's
bounds are checked after every write."""

from __future__ import annotations

from typing import Any

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.stored import decode_run
from gitdeploy.core.canarystate import CANARY_ANALYSIS_ANNOTATION
from gitdeploy.core.history.records import FailureReason, Outcome
from gitdeploy.core.models import App
from gitdeploy.core.observed import POD_ROLE_LABEL
from gitdeploy.core.rollout import AppPhase
from gitdeploy.core.rollout.analysisjobs import ANALYSIS_ANNOTATION, ANALYSIS_ROLE
from tests.fixtures.argorollouts import canary_rollout
from tests.fixtures.canaries import canary_bounds, check_every_write, sizes
from tests.fixtures.rollouts import World, commit, load_app

STEPS = """\
      - setWeight: 50
      - analysis:
          templates:
          - templateName: smoke-test
          args:
          - name: service
            value: web
"""
TEMPLATE = """\
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: smoke-test
  namespace: shop
spec:
  args:
  - name: service
  metrics:
  - name: smoke
    provider:
      job:
        metadata:
          labels:
            team: checkout
        spec:
          backoffLimit: 0
          activeDeadlineSeconds: 600
          template:
            metadata:
              annotations:
                purpose: smoke test of {{args.service}}
            spec:
              restartPolicy: Never
              securityContext:
                runAsNonRoot: true
                runAsUser: 1000
              containers:
              - name: smoke
                image: {image}
                args: ["http://{{args.service}}.shop/healthz"]
"""
V2 = commit("Bump web to 1.26", 2)
GOOD, BROKEN = "example/smoke:1", "example/smoke:broken"


def web(image: str, smoke_image: str) -> App:
    return load_app(canary_rollout(image, steps=STEPS) + TEMPLATE.replace("{image}", smoke_image))


def canary_with_job(world: World, smoke_image: str) -> tuple[App, App]:
    """Given web v1 running 4 replicas, and v2 whose canary runs the smoke job at 50%."""
    v1 = web("nginx:1.25", smoke_image)
    world.roll(v1, commit("Deploy web", 1))
    v2 = web("nginx:1.26", smoke_image)
    check_every_write(world, canary_bounds(v2))
    return v1, v2


def analysis_pods(world: World) -> list[Any]:
    items = world.core.list_namespaced_pod("shop", label_selector=f"{POD_ROLE_LABEL}={ANALYSIS_ROLE}").items
    return sorted(items, key=lambda p: p.metadata.name)


def test_a_job_that_succeeds_walks_on_and_a_restart_mid_measurement_keeps_its_pod(world: World) -> None:
    v1, v2 = canary_with_job(world, GOOD)
    check = canary_bounds(v2)

    # When the canary reached its analysis and its job's pod runs
    steps = world.roll(
        v2, V2, check=check, tick=1, until=lambda s: "smoke: not measured yet, measuring" in s.message
    )
    assert "step 2/2 (analysis smoke-test)" in steps[-1].message and sizes(world, v2, v1) == (2, 2)
    assert steps[-1].requeue_after == 1.0  # looked at again as a running hook pod is, not at once
    (pod,) = analysis_pods(world)
    assert pod.status.phase not in ("Succeeded", "Failed")
    # it is the Job's template, resolved with the step's arguments, labelled as an analysis pod
    assert pod.metadata.labels["team"] == "checkout" and pod.metadata.labels["gitdeploy.io/app"] == "web"
    assert pod.metadata.annotations["purpose"] == "smoke test of web"
    assert pod.metadata.annotations[ANALYSIS_ANNOTATION] == "2:1:smoke:1"
    assert pod.spec.containers[0].args == ["http://web.shop/healthz"]
    assert (pod.spec.restart_policy, pod.spec.active_deadline_seconds) == ("Never", 600)
    (owner,) = pod.metadata.owner_references
    assert owner.kind == "ReplicaSet" and owner.name.endswith(v2.template_hash) and not owner.controller
    # and gitdeploy restarts (nothing in memory) before the pod ended
    world.restart_gitdeploy()
    steps = world.roll(v2, V2, check=check, tick=1)

    # Then the same pod's success is the measurement, and the canary walks on to full size
    assert steps[-1].phase is AppPhase.COMPLETE and sizes(world, v2, v1) == (4, 0)
    (kept,) = analysis_pods(world)  # one pod for the one measurement, kept for its log
    assert (kept.metadata.name, kept.status.phase) == (pod.metadata.name, "Succeeded")
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.outcome is Outcome.COMPLETE
    assert entry.hooks == ()  # an analysis pod is not a hook
    (rs,) = [
        r for r in world.adapter.list_replica_sets("shop", "web") if r.state.template_hash == v2.template_hash
    ]
    run = decode_run(rs.annotation(CANARY_ANALYSIS_ANNOTATION), 2, 1)
    assert run is not None and run.phase is AnalysisPhase.SUCCESSFUL
    ((measurement,),) = [r.measurements for r in run.metrics]
    assert (measurement.phase, measurement.value) == (AnalysisPhase.SUCCESSFUL, "pod Succeeded")
    assert [reason for reason, _ in world.events(v2, "AnalysisSuccessful")] == ["AnalysisSuccessful"]
    assert world.violations == []


def test_a_job_that_fails_aborts_and_records_the_metric_and_its_pod(world: World) -> None:
    world.set_crashing_images(BROKEN)
    v1, v2 = canary_with_job(world, BROKEN)

    steps = world.roll(v2, V2, check=canary_bounds(v2), tick=1)

    # Then the canary is gone, the stable back at full size, within the bounds
    assert sizes(world, v2, v1) == (0, 4) and world.violations == []
    # and revision 2 Failed, aborted by the analysis, naming the metric and the pod that failed
    (pod,) = analysis_pods(world)
    assert pod.status.phase == "Failed"
    entry = world.record(v2).entry(2)
    assert entry is not None
    assert (entry.outcome, entry.reason) == (Outcome.FAILED, FailureReason.ROLLOUT_ABORTED)
    assert "aborted by analysis smoke-test" in entry.message
    assert "metric 'smoke' assessed Failed due to failed (1) > failureLimit (0)" in entry.message
    failed = f"measurements of smoke: Failed pod {pod.metadata.name} Failed (exit code 1, Error)"
    assert failed in entry.message, entry.message
    assert entry.hooks == ()
    (event,) = world.events(v2, "AnalysisFailed")
    assert pod.metadata.name in event[1]
    assert steps[-1].phase is AppPhase.FAILED
    # and with git unchanged it stays so, starting no other pod
    assert world.pass_once(v2, V2).actions == () and len(analysis_pods(world)) == 1


def test_an_abort_while_the_job_runs_deletes_its_pod(world: World) -> None:
    hanging = "example/smoke:hang"
    config = world.cluster.config.__class__(**{**vars(world.cluster.config), "image_hang": (hanging,)})
    world.cluster.config = world.cluster.registry.config = config
    v1, v2 = canary_with_job(world, hanging)
    check = canary_bounds(v2)
    world.roll(v2, V2, check=check, tick=1, until=lambda s: "measuring" in s.message)
    (pod,) = analysis_pods(world)

    # When someone aborts the canary while its job runs
    world.adapter.scale_replica_set(
        "shop", pod.metadata.owner_references[0].name, None, {"gitdeploy.io/canary-abort": "2:alice"}
    )
    aborting = world.pass_once(v2, V2)

    # Then the pass that begins the abort deletes the job's pod (it would run to its deadline)
    assert aborting.phase is AppPhase.PROGRESSING and "aborting" in aborting.message
    left = [p for p in analysis_pods(world) if p.metadata.deletion_timestamp is None]
    assert left == [], [p.metadata.name for p in left]
    # and the abort goes on to bring the stable back
    steps = world.roll(v2, V2, check=check, tick=1)
    assert steps[-1].phase is AppPhase.FAILED and sizes(world, v2, v1) == (0, 4)
    assert world.violations == []


def test_backoff_limit_retries_a_failed_pod_after_the_jobs_back_off(world: World) -> None:
    world.set_crashing_images(BROKEN)
    retrying = TEMPLATE.replace("backoffLimit: 0", "backoffLimit: 2").replace("{image}", BROKEN)
    v1 = load_app(canary_rollout("nginx:1.25", steps=STEPS) + retrying)
    world.roll(v1, commit("Deploy web", 1))
    v2 = load_app(canary_rollout("nginx:1.26", steps=STEPS) + retrying)
    check_every_write(world, canary_bounds(v2))
    check = canary_bounds(v2)

    # When the job's first pod failed, and its image is fixed before the retry
    def first_failed(_: object) -> bool:
        return any(p.status.phase == "Failed" for p in analysis_pods(world))

    world.roll(v2, V2, check=check, tick=1, until=first_failed)
    (first,) = analysis_pods(world)
    failed_at = first.status.container_statuses[0].state.terminated.finished_at.timestamp()
    world.set_crashing_images()
    steps = world.roll(v2, V2, check=check, tick=1)

    # Then a second pod ran no sooner than the Job controller's 10 s back-off, and succeeded
    assert steps[-1].phase is AppPhase.COMPLETE and sizes(world, v2, v1) == (4, 0)
    pods = analysis_pods(world)
    assert [(p.metadata.name, p.status.phase) for p in pods] == [
        (first.metadata.name, "Failed"),
        (f"{first.metadata.name}-retry2", "Succeeded"),
    ]
    assert pods[1].metadata.annotations["gitdeploy.io/attempt"] == "2"
    assert pods[1].metadata.creation_timestamp.timestamp() >= failed_at + 10
    assert world.violations == []


def test_a_job_whose_pods_all_fail_fails_after_backoff_limit_retries(world: World) -> None:
    world.set_crashing_images(BROKEN)
    retrying = TEMPLATE.replace("backoffLimit: 0", "backoffLimit: 1").replace("{image}", BROKEN)
    v1 = load_app(canary_rollout("nginx:1.25", steps=STEPS) + retrying)
    world.roll(v1, commit("Deploy web", 1))
    v2 = load_app(canary_rollout("nginx:1.26", steps=STEPS) + retrying)
    check_every_write(world, canary_bounds(v2))

    world.roll(v2, V2, check=canary_bounds(v2), tick=1)

    # Then two pods failed (the first, one retry), and the canary aborted naming both
    first, second = analysis_pods(world)
    assert (first.status.phase, second.status.phase) == ("Failed", "Failed")
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.reason == FailureReason.ROLLOUT_ABORTED
    failed = f"Failed pod {second.metadata.name} Failed (exit code 1, Error), 2 pods failed (backoffLimit 1)"
    assert failed in entry.message, entry.message
    assert sizes(world, v2, v1) == (0, 4) and world.violations == []


def test_a_job_pod_the_api_refuses_is_an_error_and_aborts_after_the_error_limit(world: World) -> None:
    # Given a namespace that enforces Pod Security "restricted", and a Job whose pod runs as root
    world.core.create_namespace(
        {"metadata": {"name": "shop", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}
    )
    as_root = "".join(
        f"{' ' * indent}{line}\n"
        for indent, line in ((14, "securityContext:"), (16, "runAsNonRoot: true"), (16, "runAsUser: 1000"))
    )
    assert as_root in TEMPLATE
    rooted = TEMPLATE.replace(as_root, "").replace("{image}", GOOD)
    v1 = load_app(canary_rollout("nginx:1.25", steps=STEPS) + rooted)
    world.roll(v1, commit("Deploy web", 1))
    v2 = load_app(canary_rollout("nginx:1.26", steps=STEPS) + rooted)
    check_every_write(world, canary_bounds(v2))

    world.roll(v2, V2, check=canary_bounds(v2), tick=1)

    # Then no pod ran; five refusals in a row (consecutiveErrorLimit 4) aborted the canary, saying why
    assert analysis_pods(world) == []
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.reason == FailureReason.ROLLOUT_ABORTED
    assert (
        "metric 'smoke' assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4)"
        in entry.message
    )
    assert "refused by Pod Security admission" in entry.message, entry.message
    assert sizes(world, v2, v1) == (0, 4) and world.violations == []
