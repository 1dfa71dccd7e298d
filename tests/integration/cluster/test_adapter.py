"""The cluster adapter against the embedded cluster, over real HTTP with the official client."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import pytest
from kubernetes import client

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.cluster.connection import connect
from gitdeploy.core.hashing import canonical_template, template_hash
from gitdeploy.core.history.records import MAX_REVISIONS, AppRecord, CommitRef, HookResult, RevisionEntry
from gitdeploy.core.observed import MANAGED_BY_LABEL, PodSpec, ReplicaSetSpec
from gitdeploy.core.sharding import SHARD_LABEL, shard_of
from gitdeploy.errors import AlreadyExistsError, ConflictError, PermanentError, TransientError
from gitdeploy.localcluster import LocalCluster
from tests.fixtures.cluster import POD_START_SECONDS

TEMPLATE = canonical_template(
    {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}
)


@pytest.fixture
def cluster(kube_client: client.ApiClient) -> Cluster:
    return Cluster(kube_client, "embedded")


def _spec(replicas: int = 3) -> ReplicaSetSpec:
    return ReplicaSetSpec(
        namespace="shop",
        app="web",
        template=TEMPLATE,
        template_hash=template_hash(TEMPLATE),
        selector_labels=(("app", "web"),),
        replicas=replicas,
        annotations=(("gitdeploy.io/revision", "1"),),
    )


def test_record_is_created_read_and_protected_by_resource_version(cluster: Cluster) -> None:
    cluster.ensure_namespace("shop")
    cluster.ensure_namespace("shop")  # idempotent
    assert cluster.read_app_record("shop", "web") is None
    created = cluster.write_app_record("shop", "web", '{"revisions": []}', None)
    assert cluster.read_app_record("shop", "web") == created
    updated = cluster.write_app_record("shop", "web", '{"revisions": [1]}', created.resource_version)
    assert updated.payload == '{"revisions": [1]}'
    with pytest.raises(ConflictError):
        cluster.write_app_record("shop", "web", '{"revisions": [2]}', created.resource_version)
    with pytest.raises(AlreadyExistsError):
        cluster.write_app_record("shop", "web", "{}", None)
    assert [r.app for r in cluster.list_app_records("shop")] == ["web"]


def test_every_record_write_labels_the_record_with_its_shard(
    cluster: Cluster, kube_client: client.ApiClient
) -> None:
    cluster.ensure_namespace("shop")
    config_maps = client.CoreV1Api(kube_client)

    def shard_label() -> str | None:
        raw: Any = config_maps.read_namespaced_config_map("gitdeploy.web", "shop")
        return cast(str | None, raw.metadata.labels.get(SHARD_LABEL))

    cluster.write_app_record("shop", "web", "{}", None)
    assert shard_label() == shard_of("shop/web") == "294"
    # a record written before the label (an earlier gitdeploy) gets it at its next write
    unlabelled: Any = config_maps.patch_namespaced_config_map(
        "gitdeploy.web", "shop", {"metadata": {"labels": {SHARD_LABEL: None}}}
    )
    assert shard_label() is None
    cluster.write_app_record("shop", "web", "{}", unlabelled.metadata.resource_version)
    assert shard_label() == "294"


def test_objects_made_without_a_shard_label_get_it_and_a_shard_selects_only_its_apps_objects(
    cluster: Cluster, kube_client: client.ApiClient
) -> None:
    cluster.ensure_namespace("shop")
    keys = [f"app-{n}" for n in range(12)]
    for app in keys:
        cluster.write_app_record("shop", app, "{}", None)
    created = cluster.create_replica_set(_spec())
    unlabel = {"metadata": {"labels": {SHARD_LABEL: None}}}  # as an earlier gitdeploy made them
    for app in keys[:5]:
        client.CoreV1Api(kube_client).patch_namespaced_config_map(f"gitdeploy.{app}", "shop", unlabel)
    client.AppsV1Api(kube_client).patch_namespaced_replica_set(created.name, "shop", unlabel)
    mine = frozenset(shard_of(f"shop/{app}") for app in keys[3:8])  # 2 unlabelled, 3 labelled
    assert sorted(r.app for r in cluster.list_app_records("shop", shards=mine)) == keys[5:8]

    assert cluster.label_record_shards("shop") == 5
    assert cluster.label_replica_set_shards("shop") == 1
    assert cluster.label_record_shards("shop") == cluster.label_replica_set_shards("shop") == 0

    assert sorted(r.app for r in cluster.list_app_records("shop", shards=mine)) == keys[3:8]
    listed, _ = cluster.list_app_records_at("shop", mine)
    assert sorted(r.app for r in listed) == keys[3:8]
    web = frozenset({shard_of("shop/web")})
    assert [rs.name for rs in cluster.list_replica_sets_at("shop", web)[0]] == [created.name]
    assert cluster.list_replica_sets_at("shop", mine - web)[0] == []


def test_a_record_of_a_hundred_revisions_with_long_coloured_non_ascii_hook_logs_is_accepted(
    cluster: Cluster,
) -> None:
    log = "".join(f"\x1b[33m{n} ⚠ ログ出力 — journal ünïcödé 🚀\x1b[0m\n" for n in range(3000))
    revisions = tuple(
        RevisionEntry(
            revision=n,
            template_hash=f"h{n}",
            replica_set=f"web-h{n}",
            commit=CommitRef(f"{n:040d}", "Zoë", "変更 " * 20),
            hooks=tuple(
                HookResult(phase, f"web-h{n}-{phase}", "Failed", log=log) for phase in ("pre", "mid", "post")
            ),
            message="説明 " * 300,
        )
        for n in range(1, MAX_REVISIONS + 1)
    )
    cluster.ensure_namespace("shop")
    unbounded = '{"log": "%s"}' % ("x" * (1024 * 1024))
    with pytest.raises(PermanentError):
        cluster.write_app_record("shop", "web", unbounded, None)

    written = cluster.write_app_record("shop", "web", AppRecord(revisions=revisions).to_json(), None)

    stored = AppRecord.from_json(written.payload)
    assert [e.revision for e in stored.revisions] == list(range(1, MAX_REVISIONS + 1))
    assert stored.revisions[-1].hooks[-1].log.endswith("🚀\n")
    assert cluster.write_app_record("shop", "web", written.payload, written.resource_version)


def test_a_pod_security_refusal_says_what_to_change_and_is_no_rbac_problem(
    cluster: Cluster, kube_client: client.ApiClient
) -> None:
    labels = {"pod-security.kubernetes.io/enforce": "restricted"}
    client.CoreV1Api(kube_client).create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name="locked", labels=labels))
    )
    spec = PodSpec(
        namespace="locked",
        name="web-abc-hook-pre",
        app="web",
        role="hook-pre",
        revision=1,
        attempt=1,
        first_attempt_at=0.0,
        owner_name="web-abc",
        owner_uid="",
        spec_json='{"containers":[{"image":"migrate:1","name":"lifecycle"}],"restartPolicy":"Never"}',
    )

    with pytest.raises(PermanentError) as refused:
        cluster.create_pod(spec)

    text = str(refused.value) + " " + (refused.value.hint or "")
    assert "refused by Pod Security admission" in text
    assert "allowPrivilegeEscalation" in text and "runAsNonRoot" in text
    assert "not an RBAC problem" in text
    assert "credentials and RBAC" not in text


def test_replica_set_lifecycle_as_the_planner_sees_it(
    cluster: Cluster, embedded_cluster: LocalCluster, fake_clock: FakeClock
) -> None:
    cluster.ensure_namespace("shop")
    cluster.write_app_record("shop", "web", "{}", None)
    created = cluster.create_replica_set(_spec())
    assert created.name == f"web-{template_hash(TEMPLATE)}"
    assert created.state.template_hash == template_hash(TEMPLATE)
    assert created.state.revision == 1

    fake_clock.advance(POD_START_SECONDS + 1)
    (observed,) = cluster.list_replica_sets("shop")
    assert (observed.app, observed.state.replicas, observed.state.available) == ("web", 3, 3)
    assert observed.template == created.template

    embedded_cluster.stats.reset()
    scaled = cluster.scale_replica_set("shop", created.name, 1, {"gitdeploy.io/desired-replicas": "1"})
    assert embedded_cluster.stats.total() == 1, "scale and annotate is one API write"
    assert scaled.state.replicas == 1
    assert scaled.state.desired_replicas_annotation == 1

    cluster.record_event(
        "shop",
        ("ReplicaSet", created.name, created.uid),
        "ScalingReplicaSet",
        f"Scaled down replica set {created.name} to 1",
        now=fake_clock.now(),
    )
    (event,) = [e for e in cluster.list_events("shop", created.name) if e["reason"] == "ScalingReplicaSet"]
    assert event["message"] == f"Scaled down replica set {created.name} to 1"

    with pytest.raises(AlreadyExistsError):
        cluster.create_replica_set(_spec())


def test_a_replica_set_has_no_owner_and_only_gitdeploys_labels_so_the_record_cannot_take_it(
    cluster: Cluster, kube_client: client.ApiClient
) -> None:
    cluster.ensure_namespace("shop")
    cluster.write_app_record("shop", "web", "{}", None)
    created = cluster.create_replica_set(_spec())
    raw: Any = client.AppsV1Api(kube_client).read_namespaced_replica_set(created.name, "shop")
    assert raw.metadata.owner_references is None
    # no Deployment selecting app=web can adopt it; its pods still carry the app's labels
    labels = raw.metadata.labels
    assert set(labels) == {"gitdeploy.io/template-hash", "gitdeploy.io/app", MANAGED_BY_LABEL, SHARD_LABEL}
    assert labels[SHARD_LABEL] == shard_of("shop/web")  # a replica's shards select their objects
    assert raw.spec.selector.match_labels["app"] == "web"
    client.CoreV1Api(kube_client).delete_namespaced_config_map(
        "gitdeploy.web", "shop", propagation_policy="Background"
    )
    assert [rs.name for rs in cluster.list_replica_sets("shop")] == [created.name]


def test_a_replica_set_made_the_old_way_is_released_from_the_record(
    cluster: Cluster, kube_client: client.ApiClient
) -> None:
    # Given a ReplicaSet as an earlier gitdeploy made it: owned by the record, with the app's labels
    cluster.ensure_namespace("shop")
    record = cluster.write_app_record("shop", "web", "{}", None)
    created = cluster.create_replica_set(_spec())
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "gitdeploy.web", "uid": record.uid,
             "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    old_way = {"metadata": {"ownerReferences": [owner], "labels": {"app": "web"}}}
    apps = client.AppsV1Api(kube_client)
    apps.patch_namespaced_replica_set(created.name, "shop", old_way)
    [listed] = cluster.list_replica_sets("shop")
    assert listed.owned_the_old_way
    # When it is released
    cluster.release_replica_set("shop", created.name)
    # Then it has neither the owner reference nor the app's label, and survives the record
    raw: Any = apps.read_namespaced_replica_set(created.name, "shop")
    assert raw.metadata.owner_references is None and "app" not in raw.metadata.labels
    assert not cluster.list_replica_sets("shop")[0].owned_the_old_way
    client.CoreV1Api(kube_client).delete_namespaced_config_map("gitdeploy.web", "shop")
    assert [rs.name for rs in cluster.list_replica_sets("shop")] == [created.name]


def test_lists_span_namespaces_and_filter_by_app(cluster: Cluster) -> None:
    for namespace in ("a", "b"):
        cluster.ensure_namespace(namespace)
        cluster.write_app_record(namespace, "web", "{}", None)
        cluster.create_replica_set(replace(_spec(), namespace=namespace))
    assert sorted(rs.namespace for rs in cluster.list_replica_sets()) == ["a", "b"]
    assert cluster.list_replica_sets("a", app="other") == []


def test_unreachable_api_is_transient() -> None:
    configuration = client.Configuration()
    configuration.host = "http://127.0.0.1:9"
    configuration.retries = 0
    with pytest.raises(TransientError, match="cannot reach the Kubernetes API"):
        Cluster(client.ApiClient(configuration)).list_replica_sets("shop")


def test_bad_token_is_a_permanent_error_with_a_hint(embedded_cluster: LocalCluster) -> None:
    configuration = client.Configuration()
    configuration.host = embedded_cluster.url
    configuration.api_key = {"authorization": "Bearer wrong"}
    with pytest.raises(PermanentError) as refused:
        Cluster(client.ApiClient(configuration)).list_replica_sets("shop")
    assert "401" in str(refused.value) and refused.value.hint


def test_connect_reads_the_embedded_kubeconfig(embedded_cluster: LocalCluster) -> None:
    connection = connect(embedded_cluster.kubeconfig_path)
    assert Cluster(connection.api).list_replica_sets() == []
    assert str(embedded_cluster.kubeconfig_path) in connection.description


def test_missing_context_is_a_clear_error(embedded_cluster: LocalCluster) -> None:
    with pytest.raises(PermanentError, match="cannot use kubeconfig"):
        connect(embedded_cluster.kubeconfig_path, context="no-such-context")
