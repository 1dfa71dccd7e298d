"""The watch window: a watch from a resourceVersion the server no longer keeps is 410 Gone, in
kube-apiserver's words, on both servers; a watch from a fresh list's version goes on; an object that
stops matching a selector watch is told DELETED; a watch of one Lease by name (``fieldSelector``
``metadata.name``, as ``run --sharding`` watches its head announcement) sees that Lease alone; a
watch that asks for bookmarks is sent one before it ends, past changes it does not select."""

from __future__ import annotations

import threading
from typing import Any

from kubernetes import client as kubernetes_client
from kubernetes import watch as kubernetes_watch

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.cluster.rawapi import BOOKMARK, Bookmark
from tests.fixtures.contract import Side, configmap, lease

client: Any = kubernetes_client
watch: Any = kubernetes_watch


def _watch_error(side: Side, version: str) -> Any:
    """The ApiException that a watch of the namespace's ConfigMaps from ``version`` ends in (a
    restarted kube-apiserver answers 429 while its watch cache fills: asked again then)."""
    answers: list[Any] = []

    def ended() -> bool:
        try:
            for _ in watch.Watch().stream(
                side.core.list_namespaced_config_map,
                side.namespace,
                resource_version=version,
                timeout_seconds=5,
            ):
                pass
        except client.ApiException as error:
            if error.status == 429:
                return False
            answers.append(error)
            return True
        raise AssertionError(f"{side.name}: the watch from {version} ended without an error")

    side.wait_for("a watch that is not told to wait", ended)
    return answers[0]


def test_a_watch_from_before_the_window_is_410_gone_and_a_relist_goes_on(side: Side) -> None:
    # Given a ConfigMap written, then its version pushed out of the watch window
    old = side.core.create_namespaced_config_map(side.namespace, configmap("old")).metadata.resource_version
    side.forget_watch_history()
    # When a watch starts from that version
    gone = _watch_error(side, old)
    # Then it is told 410 Gone: Expired, "too old resource version: <asked> (<oldest kept - 1>)"
    assert gone.status == 410
    assert gone.reason.startswith(f"Expired: too old resource version: {old} ("), gone.reason
    # And a list, then a watch from the list's version, goes on (what a client does after a 410)
    listed = side.core.list_namespaced_config_map(side.namespace)
    assert "old" in [c.metadata.name for c in listed.items]
    side.core.create_namespaced_config_map(side.namespace, configmap("new"))
    stream = watch.Watch()
    for event in stream.stream(
        side.core.list_namespaced_config_map,
        side.namespace,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=30,
    ):
        assert (event["type"], event["object"].metadata.name) == ("ADDED", "new")
        stream.stop()


def test_an_object_that_stops_matching_a_watchs_label_selector_is_told_deleted(side: Side) -> None:
    # Given a watch of the ConfigMaps labelled tier=web, from a list's version
    labelled = {"metadata": {"name": "web", "labels": {"tier": "web"}}}
    side.core.create_namespaced_config_map(side.namespace, labelled)
    listed = side.core.list_namespaced_config_map(side.namespace, label_selector="tier=web")
    # When its label is removed (`kubectl label cm web tier-`), then put back
    side.core.patch_namespaced_config_map("web", side.namespace, {"metadata": {"labels": {"tier": None}}})
    side.core.patch_namespaced_config_map("web", side.namespace, {"metadata": {"labels": {"tier": "web"}}})
    # Then the watch is told DELETED (of the object as it matched), then ADDED (what gitdeploy's
    # ReplicaSet watch reacts to at once)
    seen: list[str] = []
    stream = watch.Watch()
    for event in stream.stream(
        side.core.list_namespaced_config_map,
        side.namespace,
        label_selector="tier=web",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=10,
    ):
        seen.append(f"{event['type']} {event['object'].metadata.name} {event['object'].metadata.labels}")
        if len(seen) == 2:
            stream.stop()
    assert seen == ["DELETED web {'tier': 'web'}", "ADDED web {'tier': 'web'}"]


def test_a_watch_of_one_lease_by_name_sees_that_lease_alone(side: Side) -> None:
    # Given two Leases, one of them unheld with annotations only (``run --sharding``'s head
    # announcement), and a watch of the first by name from a list's version
    head = {
        "metadata": {"name": "gitdeploy-head", "annotations": {"gitdeploy.io/head-commit": "a" * 40}},
        "spec": {},
    }
    side.coordination.create_namespaced_lease(side.namespace, head)
    side.coordination.create_namespaced_lease(side.namespace, lease(15))
    by_name = "metadata.name=gitdeploy-head"
    listed = side.coordination.list_namespaced_lease(side.namespace, field_selector=by_name)
    assert [item.metadata.name for item in listed.items] == ["gitdeploy-head"]
    # When both change
    side.coordination.patch_namespaced_lease("leader", side.namespace, {"spec": {"holderIdentity": "b"}})
    announced = {"metadata": {"annotations": {"gitdeploy.io/head-commit": "b" * 40}}}
    side.coordination.patch_namespaced_lease("gitdeploy-head", side.namespace, announced)
    # Then the watch is told of the named one's change alone
    stream = watch.Watch()
    for event in stream.stream(
        side.coordination.list_namespaced_lease,
        side.namespace,
        field_selector=by_name,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=30,
    ):
        found = event["object"]
        assert (event["type"], found.metadata.name) == ("MODIFIED", "gitdeploy-head")
        assert found.metadata.annotations["gitdeploy.io/head-commit"] == "b" * 40
        stream.stop()


def test_a_watch_that_asks_for_bookmarks_is_sent_one_past_what_it_does_not_select(side: Side) -> None:
    """What gitdeploy's watches rely on to resume from a version the server still keeps (KEP-956):
    kube-apiserver sends a bookmark 2 s before a watch's deadline (and about every minute) when
    the resource changed while the watch ran."""
    gitdeploy = side.gitdeploy_api()
    try:
        cluster = Cluster(gitdeploy, side.name)
        _, listed = cluster.list_app_records_at(side.namespace)
        written: list[str] = []

        def write_other() -> None:
            made = side.core.create_namespaced_config_map(side.namespace, configmap("not-a-record"))
            written.append(made.metadata.resource_version)

        # When gitdeploy watches the namespace's app records (none) for 10 s, from its list's
        # version, and a ConfigMap that the watch does not select is written 1 s into it
        later = threading.Timer(1.0, write_other)
        later.start()
        events = list(cluster.watch_app_records(side.namespace, listed, timeout_seconds=10))
        later.join()
        # Then it is sent bookmarks alone (kube-apiserver may send one twice), the last one at a
        # version no older than that ConfigMap's (etcd revisions on both servers: compared as
        # numbers here, never by gitdeploy)
        assert events and {kind for kind, _ in events} == {BOOKMARK}, events
        bookmark = events[-1][1]
        assert isinstance(bookmark, Bookmark)
        assert int(bookmark.resource_version) >= int(written[0]) > int(listed)
    finally:
        gitdeploy.close()
