"""Faults under a canary's analysis, on the embedded cluster and a fake clock: a metrics server
that is down makes every measurement an Error; after Argo Rollouts' default of 4 errors in a row
the fifth ends the analysis as an Error and the rollout aborts by itself, saying why. A kept run
that is garbage (edited by hand) starts again rather than ending the process."""

from __future__ import annotations

import socket

from gitdeploy.core.canarystate import CANARY_ANALYSIS_ANNOTATION
from gitdeploy.core.history.records import Outcome
from tests.fixtures.argorollouts import canary_rollout
from tests.fixtures.canaries import canary_bounds, check_every_write, sizes
from tests.fixtures.rollouts import World, commit, load_app

STEPS = """\
      - setWeight: 50
      - analysis:
          templates:
          - templateName: up
"""
TEMPLATE = """\
---
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: up
  namespace: shop
spec:
  metrics:
  - name: up
    successCondition: result[0] == 1
    provider:
      prometheus:
        address: {address}
        query: up
        timeout: 2
"""


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (a moment ago): connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_metrics_server_that_is_down_aborts_after_five_errors_in_a_row(world: World) -> None:
    address = f"http://127.0.0.1:{closed_port()}"
    v1 = load_app(canary_rollout("nginx:1.25", steps=STEPS) + TEMPLATE.format(address=address))
    world.roll(v1, commit("Deploy web", 1))
    v2 = load_app(canary_rollout("nginx:1.26", steps=STEPS) + TEMPLATE.format(address=address))
    check_every_write(world, canary_bounds(v2))

    # Given a canary at its analysis step, with a Prometheus that cannot be reached
    world.roll(
        v2, commit("Bump", 2), check=canary_bounds(v2), until=lambda s: "analysis running" in s.message
    )
    began = world.clock.now()
    # and its kept run garbled by hand: it starts again, nothing crashes
    (rs,) = [
        r for r in world.adapter.list_replica_sets("shop", "web") if r.state.template_hash == v2.template_hash
    ]
    world.adapter.annotate_replica_set("shop", rs.name, {CANARY_ANALYSIS_ANNOTATION: "2:1:{not json"})
    steps = world.roll(v2, commit("Bump", 2), check=canary_bounds(v2), tick=5)

    # Then each measurement errs, retried every 10 s; the fifth in a row aborts the rollout
    assert sizes(world, v2, v1) == (0, 4) and world.violations == []
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.outcome is Outcome.FAILED
    assert "consecutiveErrors (5) > consecutiveErrorLimit (4)" in entry.message
    assert "ConnectError" in entry.message and entry.message.count("Error ") >= 5
    assert world.clock.now() - began >= 40  # four retries 10 s apart
    assert steps[-1].phase.value == "Failed"
