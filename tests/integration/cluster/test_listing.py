"""What the adapter's lists give the loop: templates as canonical JSON on demand, one app's
objects, or the ReplicaSets of some apps read from a namespace-wide list."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.cluster.rawapi import LIST_PAGE, Resource
from gitdeploy.core.hashing import canonical_template, template_hash
from gitdeploy.core.models import PodTemplate
from gitdeploy.core.observed import ReplicaSetSpec, StoredRecord
from gitdeploy.errors import NotFoundError


def template_of(app: str) -> PodTemplate:
    # Keys out of order on purpose: the server keeps the order it was sent, gitdeploy adds its labels.
    return canonical_template(
        {
            "spec": {"containers": [{"name": "main", "env": [{"value": "1", "name": "B"}], "image": "x"}]},
            "metadata": {"labels": {"tier": "front", "app": app}},
        }
    )


@pytest.fixture
def cluster(kube_client: Any) -> Cluster:
    cluster = Cluster(kube_client, "embedded")
    cluster.ensure_namespace("shop")
    return cluster


def deploy(cluster: Cluster, app: str) -> str:
    template = template_of(app)
    cluster.write_app_record("shop", app, "{}", None)
    spec = ReplicaSetSpec(
        namespace="shop",
        app=app,
        template=template,
        template_hash=template_hash(template),
        selector_labels=(("app", app),),
        replicas=1,
        annotations=(("gitdeploy.io/revision", "1"),),
    )
    return cluster.create_replica_set(spec).name


def test_a_listed_template_is_the_canonical_json_of_what_the_replica_set_holds(cluster: Cluster) -> None:
    deploy(cluster, "web")
    (listed,) = cluster.list_replica_sets("shop", "web")
    hashed = template_hash(template_of("web"))
    labels = f'"app":"web","gitdeploy.io/app":"web","gitdeploy.io/template-hash":"{hashed}","tier":"front"'
    # the server's defaults are part of what it holds (an untagged image is pulled Always)
    container = (
        '{"env":[{"name":"B","value":"1"}],"image":"x","imagePullPolicy":"Always","name":"main",'
        '"resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}'
    )
    pod = (
        '"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler",'
        '"securityContext":{},"terminationGracePeriodSeconds":30'
    )
    assert listed.template == PodTemplate(
        f'{{"metadata":{{"labels":{{{labels}}}}},"spec":{{"containers":[{container}],{pod}}}}}'
    )


def test_lists_of_one_app(cluster: Cluster) -> None:
    for app in ("web", "webshop", "api"):
        deploy(cluster, app)
    assert [rs.app for rs in cluster.list_replica_sets("shop", "web")] == ["web"]
    assert [record.app for record in cluster.list_app_records("shop", "web")] == ["web"]
    assert cluster.list_app_records("shop", "nothing") == []
    assert sorted(record.app for record in cluster.list_app_records("shop")) == ["api", "web", "webshop"]


@pytest.mark.parametrize(
    ("of_apps", "expected"),
    [
        (None, ["api", "web", "webshop"]),
        ({"web"}, ["web"]),
        ({"web", "api"}, ["api", "web"]),
        (set(), []),
        ({"nothing"}, []),
    ],
)
def test_a_namespace_list_reads_the_replica_sets_and_records_of_some_apps(
    cluster: Cluster, of_apps: set[str] | None, expected: list[str]
) -> None:
    for app in ("web", "webshop", "api"):
        deploy(cluster, app)
    assert sorted(rs.app for rs in cluster.list_replica_sets("shop", of_apps=of_apps)) == expected
    assert sorted(stored.app for stored in cluster.list_app_records("shop", of_apps=of_apps)) == expected


def test_a_list_longer_than_a_page_is_read_whole_and_a_watch_goes_on_from_its_version(
    cluster: Cluster,
) -> None:
    names = [f"app-{n:03d}" for n in range(LIST_PAGE + 3)]
    for name in names:
        cluster.write_app_record("shop", name, "{}", None)
    listed, version = cluster.list_app_records_at("shop")
    assert sorted(stored.app for stored in listed) == names
    some = set(names[::7]) | {names[-1]}  # on every page, the last one alone on its page
    assert sorted(stored.app for stored in cluster.list_app_records("shop", of_apps=some)) == sorted(some)
    cluster.write_app_record("shop", "late", "{}", None)
    kind, seen = next(iter(cluster.watch_app_records("shop", resource_version=version, timeout_seconds=5)))
    assert kind == "ADDED" and isinstance(seen, StoredRecord) and seen.app == "late"


def test_resource_lists_answer_as_the_generated_list_methods_do(cluster: Cluster, kube_client: Any) -> None:
    # Given apps in two namespaces
    for app in ("web", "api"):
        deploy(cluster, app)
    cluster.ensure_namespace("jobs")
    cluster.write_app_record("jobs", "worker", "{}", None)
    kube = cluster.replica_sets.kube
    everywhere, in_namespace = kube.config_maps.list_everywhere, kube.config_maps.list
    generated = client.CoreV1Api(kube_client)

    def names(items: list[dict[str, Any]]) -> list[str]:
        return sorted(f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in items)

    # Then its lists are the generated methods' lists, selector and namespace included
    selector = "gitdeploy.io/record=true"
    assert names(kube.list_json(everywhere, "x", label_selector=selector)) == names(
        kube.list_json(generated.list_config_map_for_all_namespaces, "x", label_selector=selector)
    ) == ["jobs/gitdeploy.worker", "shop/gitdeploy.api", "shop/gitdeploy.web"]  # fmt: skip
    assert names(kube.list_json(in_namespace, "x", namespace="jobs", label_selector=selector)) == [
        "jobs/gitdeploy.worker"
    ]
    # and an error is the client's, translated as every call's is
    unknown = Resource(kube, "/apis/apps/v1", "nothings")
    with pytest.raises(NotFoundError):
        kube.list_json(unknown.list, "list nothings", namespace="shop")
