"""Requests share one keep-alive connection: an answer gitdeploy does not read still frees it."""

from __future__ import annotations

from typing import Any

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.localcluster import LocalCluster


def connections_opened(kube_client: Any, cluster: LocalCluster) -> int:
    pool = kube_client.rest_client.pool_manager.connection_from_url(cluster.url)
    return int(pool.num_connections)


def test_writes_without_a_read_answer_hand_their_connection_back(
    kube_client: Any, embedded_cluster: LocalCluster
) -> None:
    cluster = Cluster(kube_client, "embedded")
    cluster.ensure_namespace("shop")
    cluster.ensure_namespace("shop")  # already there
    record = cluster.write_app_record("shop", "web", "{}", None)
    for _ in range(3):
        cluster.record_event("shop", ("ConfigMap", "gitdeploy.web", record.uid), "Test", "hello", now=0.0)
    cluster.delete_pod("shop", "nothing-here")
    cluster.delete_replica_set("shop", "nothing-here")
    cluster.delete_app_record("shop", "web")
    assert cluster.list_app_records("shop") == []
    assert connections_opened(kube_client, embedded_cluster) == 1
