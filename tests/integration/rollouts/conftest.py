"""Rollout scenarios run in a :class:`World`: the embedded cluster, a fake clock, the real runner."""

from __future__ import annotations

from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.localcluster import LocalCluster
from tests.fixtures.rollouts import World


@pytest.fixture
def world(embedded_cluster: LocalCluster, fake_clock: FakeClock, kube_client: Any) -> World:
    return World(embedded_cluster, fake_clock, kube_client)
