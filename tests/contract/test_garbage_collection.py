"""Garbage collection of dependents whose owner is gone: written with an owner that never existed,
or that was deleted and created again under the same name (another uid). The write is accepted;
the collector deletes the dependent a moment later, or only drops the dangling reference when
another owner is there. The same on both servers."""

from __future__ import annotations

from typing import Any

from kubernetes import client as kubernetes_client

from tests.fixtures.contract import Side, configmap, owner

client: Any = kubernetes_client
GHOST_UID = "3f1c9d2e-0000-4a6b-8c1d-5e2f7a9b0c4d"


def _exists(side: Side, name: str) -> bool:
    return name in [c.metadata.name for c in side.core.list_namespaced_config_map(side.namespace).items]


def _owned(name: str, *refs: dict[str, Any]) -> dict[str, Any]:
    return configmap(name, ownerReferences=list(refs))


def test_a_dependent_of_an_owner_that_never_existed_is_collected(side: Side) -> None:
    made = side.core.create_namespaced_config_map(side.namespace, _owned("child", owner("ghost", GHOST_UID)))
    assert made.metadata.owner_references[0].name == "ghost"  # the write itself is accepted
    side.wait_for("the dependent of a missing owner to be collected", lambda: not _exists(side, "child"))


def test_an_owner_created_again_under_the_same_name_is_another_owner(side: Side) -> None:
    # Given an owner deleted and created again: the same name, another uid
    old = side.core.create_namespaced_config_map(side.namespace, configmap("owner")).metadata.uid
    side.core.delete_namespaced_config_map("owner", side.namespace)
    new = side.core.create_namespaced_config_map(side.namespace, configmap("owner")).metadata.uid
    # When a dependent names the old one, and another names the new one
    side.core.create_namespaced_config_map(side.namespace, _owned("stale", owner("owner", old)))
    side.core.create_namespaced_config_map(side.namespace, _owned("fresh", owner("owner", new)))
    # Then the old one's dependent is collected, the new one's is kept, and so is the owner
    side.wait_for("the dependent of the old uid to be collected", lambda: not _exists(side, "stale"))
    assert _exists(side, "fresh") and _exists(side, "owner")


def test_a_dangling_reference_beside_a_solid_one_is_dropped(side: Side) -> None:
    solid = side.core.create_namespaced_config_map(side.namespace, configmap("owner")).metadata.uid
    refs = (owner("owner", solid), owner("ghost", GHOST_UID))
    side.core.create_namespaced_config_map(side.namespace, _owned("child", *refs))

    def owners() -> list[str]:
        found = side.core.read_namespaced_config_map("child", side.namespace).metadata.owner_references
        return [ref.name for ref in found or []]

    side.wait_for("the dangling reference to be dropped", lambda: owners() == ["owner"])


def test_deleting_an_owner_collects_its_dependents_after_the_delete(side: Side) -> None:
    uid = side.core.create_namespaced_config_map(side.namespace, configmap("owner")).metadata.uid
    side.core.create_namespaced_config_map(side.namespace, _owned("child", owner("owner", uid)))
    side.core.delete_namespaced_config_map("owner", side.namespace, propagation_policy="Background")
    side.wait_for("the dependent to be collected", lambda: not _exists(side, "child"))
