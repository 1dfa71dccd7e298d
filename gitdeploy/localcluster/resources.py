"""The resource types the embedded cluster serves, and how their URLs are laid out."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RESOURCES", "ResourceType", "find_resource"]


@dataclass(frozen=True)
class ResourceType:
    """One REST resource: ``plural`` in API group ``group`` (``""`` is the core group) at ``version``."""

    plural: str
    kind: str
    group: str
    version: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    singular: str = ""
    categories: tuple[str, ...] = ()
    """Discovery categories: ``all`` puts the resource in ``kubectl get all``."""

    @property
    def key(self) -> str:
        """The storage key: unique across groups (core and events.k8s.io both have ``events``)."""
        return f"{self.group}/{self.plural}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``replicasets.apps``, as Kubernetes names a resource in error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def verbs(self) -> list[str]:
        return ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("namespaces", "Namespace", "", "v1", False, ("ns",), ("status",), "namespace"),
    ResourceType("pods", "Pod", "", "v1", True, ("po",), ("status", "log"), "pod", ("all",)),
    ResourceType("events", "Event", "", "v1", True, ("ev",), (), "event"),
    ResourceType("configmaps", "ConfigMap", "", "v1", True, ("cm",), (), "configmap"),
    ResourceType(
        "replicasets", "ReplicaSet", "apps", "v1", True, ("rs",), ("status", "scale"), "replicaset", ("all",)
    ),
    ResourceType("leases", "Lease", "coordination.k8s.io", "v1", True, (), (), "lease"),
    ResourceType("events", "Event", "events.k8s.io", "v1", True, ("ev",), (), "event"),
)

_BY_GROUP: dict[tuple[str, str, str], ResourceType] = {(r.group, r.version, r.plural): r for r in RESOURCES}

NAMESPACES = _BY_GROUP[("", "v1", "namespaces")]
PODS = _BY_GROUP[("", "v1", "pods")]
CORE_EVENTS = _BY_GROUP[("", "v1", "events")]
CONFIGMAPS = _BY_GROUP[("", "v1", "configmaps")]
REPLICASETS = _BY_GROUP[("apps", "v1", "replicasets")]
LEASES = _BY_GROUP[("coordination.k8s.io", "v1", "leases")]


def find_resource(group: str, version: str, plural: str) -> ResourceType | None:
    """The resource served at ``/apis/<group>/<version>/<plural>`` (``group`` empty for ``/api/v1``)."""
    return _BY_GROUP.get((group, version, plural))


def group_versions() -> dict[str, list[ResourceType]]:
    """Resources by ``group/version`` (``v1`` for the core group), in serving order."""
    result: dict[str, list[ResourceType]] = {}
    for resource in RESOURCES:
        result.setdefault(resource.api_version, []).append(resource)
    return result
