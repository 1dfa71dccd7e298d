"""The check each write request passes right before it leaves (cluster/writecheck.py), over HTTP
against the embedded cluster: a check that raises keeps the request from the server, reads are
never checked, and a check holds only for the thread that set it."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.cluster.writecheck import writes_checked_by
from gitdeploy.errors import TransientError
from gitdeploy.localcluster import LocalCluster


class Check:
    """A check that counts its calls, and refuses from call ``refuse_from`` on (None: never)."""

    def __init__(self, refuse_from: int | None) -> None:
        self.refuse_from = refuse_from
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        if self.refuse_from is not None and self.calls >= self.refuse_from:
            raise TransientError("not written: the Lease lapsed")


@pytest.fixture
def cluster(kube_client: Any) -> Cluster:
    adapter = Cluster(kube_client, "embedded")
    adapter.ensure_namespace("shop")
    return adapter


def writes(embedded_cluster: LocalCluster) -> list[tuple[str, str]]:
    """The write requests the server got, whether it carried them out or not."""
    return [(w["verb"], w["resource"]) for w in embedded_cluster.stats.to_json()["writes"]]


def test_a_refusing_check_keeps_each_write_from_the_server_and_lets_reads_through(
    cluster: Cluster, embedded_cluster: LocalCluster
) -> None:
    written = cluster.write_app_record("shop", "web", "{}", None)
    embedded_cluster.stats.reset()
    refuse = Check(refuse_from=1)
    with writes_checked_by(refuse):
        for write in (
            lambda: cluster.write_app_record("shop", "web", '{"a": 1}', written.resource_version),
            lambda: cluster.write_app_record("shop", "api", "{}", None),
            lambda: cluster.delete_app_record("shop", "web"),
        ):
            with pytest.raises(TransientError, match="the Lease lapsed"):
                write()
        assert [r.app for r in cluster.list_app_records("shop")] == ["web"]
    assert refuse.calls == 3  # each refused with nothing of it sent
    assert writes(embedded_cluster) == []
    assert cluster.read_app_record("shop", "web") == written

    # and after the block, nothing is checked
    cluster.write_app_record("shop", "api", "{}", None)
    assert refuse.calls == 3 and writes(embedded_cluster) == [("create", "configmaps")]


def test_a_check_that_passes_lets_each_write_through_once_checked(
    cluster: Cluster, embedded_cluster: LocalCluster
) -> None:
    embedded_cluster.stats.reset()
    allow = Check(refuse_from=None)
    with writes_checked_by(allow):
        created = cluster.write_app_record("shop", "web", "{}", None)
        cluster.write_app_record("shop", "web", '{"a": 1}', created.resource_version)
    assert allow.calls == 2  # once per request, when it is whole
    assert writes(embedded_cluster) == [("create", "configmaps"), ("update", "configmaps")]


def test_a_write_request_is_checked_once_whole_so_a_refusal_never_leaves_it_cut_in_two(
    cluster: Cluster, embedded_cluster: LocalCluster
) -> None:
    """The check runs once, right before the whole request (line, headers, body) is sent in one
    socket write: a check that lapses between two requests lets the first through whole and sends
    nothing of the second (no request half sent, which the server would see and answer 400)."""
    embedded_cluster.stats.reset()
    lapses = Check(refuse_from=2)
    with writes_checked_by(lapses):
        cluster.write_app_record("shop", "web", "{}", None)
        with pytest.raises(TransientError):
            cluster.write_app_record("shop", "api", "{}", None)
    assert lapses.calls == 2
    assert writes(embedded_cluster) == [("create", "configmaps")]
    assert [r.app for r in cluster.list_app_records("shop")] == ["web"]
    cluster.write_app_record("shop", "api", "{}", None)  # the client goes on, on a new connection
    assert [r.app for r in cluster.list_app_records("shop")] == ["api", "web"]


def test_a_check_holds_only_for_the_thread_that_set_it(
    cluster: Cluster, embedded_cluster: LocalCluster
) -> None:
    embedded_cluster.stats.reset()
    refuse = Check(refuse_from=1)
    failed: list[BaseException] = []

    def other_thread() -> None:
        try:
            cluster.write_app_record("shop", "other", "{}", None)
        except BaseException as problem:  # reported by the assertion below
            failed.append(problem)

    with writes_checked_by(refuse):
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert failed == [] and refuse.calls == 0
    assert writes(embedded_cluster) == [("create", "configmaps")]
