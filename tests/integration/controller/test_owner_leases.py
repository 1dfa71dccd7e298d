"""`gitdeploy status` marks an owner that stopped acting, from the member Leases as listed."""

from __future__ import annotations

from typing import Any

import pytest

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.inspect import AppView, with_owner_leases
from gitdeploy.core.lease import LeaseSpec
from gitdeploy.core.models import AppKey
from gitdeploy.core.sharding import MEMBER_LABEL, member_lease_name

LEASES = "gitdeploy-system"
NOW = 1_800_000_000.0


@pytest.fixture
def adapter(kube_client: Any) -> Cluster:
    cluster = Cluster(kube_client, "embedded")
    cluster.ensure_namespace(LEASES)
    return cluster


def member(adapter: Cluster, holder: str, renewed: float) -> None:
    spec = LeaseSpec(holder, 15, acquire_time=renewed, renew_time=renewed)
    adapter.write_lease(LEASES, member_lease_name(holder), spec, None, labels={MEMBER_LABEL: "true"})


def view(app: str, owner: str) -> AppView:
    return AppView(
        AppKey("shop", app), 1, 1, 1, 1, 1, "abc1234", "Complete", "Synced", "Healthy", "", "", owner=owner
    )


def owners(views: list[AppView]) -> dict[str, str]:
    return {v.key.name: v.owner for v in views}


def test_owners_are_marked_by_their_member_leases(adapter: Cluster) -> None:
    # Given a live member, one whose Lease was last renewed 20 s ago, and one with no Lease
    member(adapter, "live", NOW - 1)
    member(adapter, "killed", NOW - 20)
    views = [view("a", "live"), view("b", "killed"), view("c", "stopped"), view("d", "stopped (released)")]

    # Then each owner is shown as it stands, and a released app is left as it is
    assert owners(with_owner_leases(adapter, views, LEASES, NOW)) == {
        "a": "live",
        "b": "killed (lease expired)",
        "c": "stopped (no lease)",
        "d": "stopped (released)",
    }
    # ... also when one app is asked for (`gitdeploy status shop/c`)
    assert owners(with_owner_leases(adapter, [view("c", "stopped")], LEASES, NOW)) == {
        "c": "stopped (no lease)"
    }


def test_with_no_member_lease_to_be_found_the_owners_stay_as_the_records_name_them(adapter: Cluster) -> None:
    member(adapter, "live", NOW - 1)
    views = [view("a", "stopped")]
    # Looked for in a namespace without member Leases (another one than the fleet's)
    assert owners(with_owner_leases(adapter, views, "default", NOW)) == {"a": "stopped"}
    # ... or one that cannot be listed
    assert owners(with_owner_leases(adapter, views, "Not_A_Namespace", NOW)) == {"a": "stopped"}
