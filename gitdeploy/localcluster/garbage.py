"""The garbage collector's view of owner references: which are solid, which dangle, and when to look.

As kube-controller-manager's garbage collector decides it, an owner reference is *solid* when an
object of its kind, in the dependent's namespace (none for a cluster-scoped kind), has its name
and its uid; it *dangles* otherwise: the owner never existed, was deleted, or was deleted and
created again under the same name (another uid). A reference to a kind the cluster does not
serve is left alone (the real collector cannot resolve it either). A dependent whose references
all dangle is deleted (in the background); one with some solid ones loses only the dangling ones.

The collector runs apart from the writes, as the real one does moments after: a write with owner
references and the deletion of an owner schedule a :data:`COLLECT` timer for the dependent, due
at once and fired by the simulation's next tick (before the next request is served, or by the
kubelet thread within its poll), never inside the write that caused it.
"""

from __future__ import annotations

from typing import Any

from gitdeploy.localcluster.resources import RESOURCES, ResourceType
from gitdeploy.localcluster.store import Timer, Txn

__all__ = [
    "COLLECT",
    "collect_dependents",
    "collect_later_if_dangling",
    "collectable",
    "schedule_collection",
    "split_references",
]

COLLECT = "gc-collect"


def _is_solid(txn: Txn, namespace: str, ref: dict[str, Any]) -> bool:
    group = str(ref.get("apiVersion") or "").rpartition("/")[0]
    kind = next((r for r in RESOURCES if r.group == group and r.kind == ref.get("kind")), None)
    if kind is None:
        return True  # not served here: unresolvable, so never collected
    uid = txn.uid_of(kind.key, namespace if kind.namespaced else "", str(ref.get("name") or ""))
    return uid is not None and uid == ref.get("uid")


def split_references(txn: Txn, obj: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``obj``'s owner references as (solid, dangling)."""
    namespace = str(obj["metadata"].get("namespace") or "")
    solid: list[dict[str, Any]] = []
    dangling: list[dict[str, Any]] = []
    for ref in obj["metadata"].get("ownerReferences") or []:
        (solid if _is_solid(txn, namespace, ref) else dangling).append(ref)
    return solid, dangling


def schedule_collection(txn: Txn, resource_key: str, obj: dict[str, Any], now: float) -> None:
    """Have the collector look at ``obj`` at its next tick."""
    meta = obj["metadata"]
    txn.add_timer(
        Timer(now, resource_key, str(meta.get("namespace") or ""), meta["name"], meta["uid"], COLLECT)
    )


def collect_dependents(txn: Txn, owner_uid: str, policy: str, now: float) -> None:
    """Garbage collection of an owner's dependents: orphaned at once (``Orphan``), else looked
    at by the collector at its next tick."""
    for key, dependent in txn.dependents(owner_uid):
        if policy != "Orphan":
            schedule_collection(txn, key, dependent, now)
            continue
        refs = dependent["metadata"].get("ownerReferences") or []
        remaining = [r for r in refs if r.get("uid") != owner_uid]
        dependent["metadata"]["ownerReferences"] = remaining
        if not remaining:
            dependent["metadata"].pop("ownerReferences")
        txn.put(key, dependent, "MODIFIED", labels_changed=False)


def collect_later_if_dangling(txn: Txn, resource: ResourceType, obj: dict[str, Any], now: float) -> None:
    """An object written with an owner reference that dangles is the collector's, a moment later."""
    if obj["metadata"].get("ownerReferences") and split_references(txn, obj)[1]:
        schedule_collection(txn, resource.key, obj, now)


def collectable(txn: Txn, timer: Timer) -> tuple[ResourceType, dict[str, Any]] | None:
    """The collector's look at the object of ``timer``: returned (with its resource) to be deleted
    when all its owners are gone (its own dependents follow at the next tick), else rid of the
    references that dangle (None)."""
    obj = txn.get(timer.resource, timer.namespace, timer.name)
    if obj is None or obj["metadata"]["uid"] != timer.uid:
        return None
    solid, dangling = split_references(txn, obj)
    if not dangling:
        return None
    if solid:
        obj["metadata"]["ownerReferences"] = solid
        txn.put(timer.resource, obj, "MODIFIED", labels_changed=False)
        return None
    return next(r for r in RESOURCES if r.key == timer.resource), obj
