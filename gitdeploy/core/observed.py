"""What the cluster runs for an app, as the planner sees it (built by the cluster adapter)."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from gitdeploy.core.models import PodTemplate
from gitdeploy.core.scaling.replicasets import ReplicaSetState

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "gitdeploy"
APP_LABEL = "gitdeploy.io/app"
RECORD_LABEL = "gitdeploy.io/record"
REVISION_ANNOTATION = "gitdeploy.io/revision"
REVISION_HISTORY_ANNOTATION = "gitdeploy.io/revision-history"
COMMIT_ANNOTATION = "gitdeploy.io/commit"
CHANGE_CAUSE_ANNOTATION = "gitdeploy.io/change-cause"
PHASE_ANNOTATION = "gitdeploy.io/phase"
CAUSE_ANNOTATION = "gitdeploy.io/cause"
AUTHOR_ANNOTATION = "gitdeploy.io/author"
SUBJECT_ANNOTATION = "gitdeploy.io/subject"
STARTED_AT_ANNOTATION = "gitdeploy.io/started-at"
PROGRESSED_AT_ANNOTATION = "gitdeploy.io/progressed-at"
ATTEMPT_ANNOTATION = "gitdeploy.io/attempt"
FIRST_ATTEMPT_AT_ANNOTATION = "gitdeploy.io/first-attempt-at"
POD_ROLE_LABEL = "gitdeploy.io/pod-role"
"""``hook-pre``, ``hook-mid``, ``hook-post`` or ``deployer``: the run-to-completion pods gitdeploy makes."""


def record_name(app: str) -> str:
    """The ConfigMap that holds an app's revision log and control state."""
    return f"gitdeploy.{app}"


class ListedTemplate:
    """The ``template`` of :class:`ObservedReplicaSet`: a :class:`PodTemplate`, or a template as
    listed (parsed JSON), written as canonical JSON only when someone reads it.

    Few readers need a ReplicaSet's template (the planner compares template hashes); writing
    every listed one as JSON was most of the cost of a list. The parsed template is kept until
    then; a pass holds the ReplicaSets it listed only while it runs.

    The class is slotted (MEMORY: an instance dict was a quarter of a ReplicaSet the watch cache
    holds, 30,000 to 60,000 of them in every replica at 30,000 apps): :meth:`install` puts this
    descriptor in front of the slot the dataclass made, which holds the value.
    """

    def __init__(self) -> None:
        self.slot: Any = None
        """The descriptor of the slot that holds the value (see :meth:`install`)."""

    @classmethod
    def install(cls, owner: type, name: str) -> None:
        """Read and write the slot ``name`` of the slotted dataclass ``owner`` through a new
        descriptor of this class."""
        descriptor = cls()
        descriptor.slot = owner.__dict__[name]
        setattr(owner, name, descriptor)

    def __get__(self, instance: object, owner: type | None = None) -> PodTemplate | None:
        if instance is None:
            return None
        value: PodTemplate | dict[str, Any] | None = self.slot.__get__(instance, owner)
        if isinstance(value, dict):
            value = PodTemplate(json.dumps(value, sort_keys=True, separators=(",", ":")))
            self.slot.__set__(instance, value)
        return value

    def __set__(self, instance: object, value: PodTemplate | dict[str, Any] | ListedTemplate | None) -> None:
        # Without a template, the dataclass passes the field's default: a ListedTemplate.
        self.slot.__set__(instance, None if isinstance(value, ListedTemplate) else value)


@dataclass(frozen=True, slots=True)
class ObservedReplicaSet:
    """A managed ReplicaSet: the numbers the rollout math needs, plus gitdeploy's annotations."""

    namespace: str
    app: str
    state: ReplicaSetState
    annotations: tuple[tuple[str, str], ...] = ()
    uid: str = ""
    observed_generation_current: bool = True
    """``status.observedGeneration >= metadata.generation``: the status reflects the latest spec."""
    template: ListedTemplate = field(default=ListedTemplate(), compare=False)
    """The pod template (built from a listed one on first read), None when the ReplicaSet has none."""
    owned_the_old_way: bool = False
    """Made by an earlier gitdeploy that let the app record own its ReplicaSets (deleting the
    record deleted them) and labelled them with the app's selector (a Deployment with that selector
    could adopt them): the loop releases it (see ``Cluster.release_replica_set``)."""
    generation: int = field(default=0, compare=False)
    """``metadata.generation``: bumped by the API server on every change of the spec (0: unknown)."""
    resource_version: str = field(default="", compare=False)
    """``metadata.resourceVersion``: where a watch that saw this goes on from ("" when unknown)."""

    @property
    def name(self) -> str:
        return self.state.name

    def annotation(self, key: str, default: str = "") -> str:
        return dict(self.annotations).get(key, default)


ListedTemplate.install(ObservedReplicaSet, "template")


def newest_replica_set(replica_sets: Iterable[ObservedReplicaSet]) -> ObservedReplicaSet | None:
    """The ReplicaSet of the newest revision: the one gitdeploy last rolled out."""
    return max(replica_sets, key=lambda rs: (rs.state.revision, rs.state.created_at), default=None)


@dataclass(frozen=True)
class PodCensus:
    """How many pods of each of an app's ReplicaSets exist, counted from a list of the pods.

    A pod counts until it is gone from the API: Pending, Running, Unknown and *Terminating*
    (deleted, in its grace period) pods count; pods that ended (Succeeded, Failed) do not (as
    upstream's ``oldPodsRunning``). ReplicaSet status cannot tell this: a ReplicaSet controller
    leaves terminating pods out of ``status.replicas`` as soon as they are deleted.
    """

    existing: tuple[tuple[str, int], ...] = ()
    """``(ReplicaSet name, pods)``, only for ReplicaSets with pods."""

    def of(self, replica_set: str) -> int:
        """The pods of ``replica_set`` that exist.

        >>> PodCensus((("web-a", 2),)).of("web-a"), PodCensus().of("web-a")
        (2, 0)
        """
        return dict(self.existing).get(replica_set, 0)


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """The app record as stored: its JSON payload and the resourceVersion to write it back with.
    Slotted: every replica's watch cache holds one for every app (a dict would add 300 bytes)."""

    namespace: str
    app: str
    body: str | bytes
    """The JSON payload, or (:meth:`packed`) the payload compressed."""
    resource_version: str
    uid: str

    @property
    def payload(self) -> str:
        """The record's JSON.

        >>> stored = StoredRecord("shop", "web", '{"revisions": []}', "7", "u")
        >>> stored.packed().payload == stored.payload, isinstance(stored.packed().body, bytes)
        (True, True)
        """
        body = self.body
        return body if isinstance(body, str) else zlib.decompress(body).decode()

    def packed(self) -> StoredRecord:
        """The same record with its payload kept compressed (zlib), as a watch cache holds every
        record: a revision history's JSON shrinks to a quarter or less, and reading
        :attr:`payload` costs 5 µs for one revision, 100 µs for a hundred."""
        body = self.body
        if isinstance(body, bytes) or not body:
            return self
        return replace(self, body=zlib.compress(body.encode(), 1))


@dataclass(frozen=True)
class ReplicaSetSpec:
    """A ReplicaSet to create for an app (see DESIGN.md, "The cluster model"). It has no owner:
    it belongs to its app by its labels, so nothing that happens to the app record reaches it."""

    namespace: str
    app: str
    template: PodTemplate
    template_hash: str
    selector_labels: tuple[tuple[str, str], ...]
    """The app's selector: the ReplicaSet selects its pods by these and its template hash (its own
    labels are gitdeploy's only, so no Deployment's selector adopts it)."""
    replicas: int
    annotations: tuple[tuple[str, str], ...]
    min_ready_seconds: int = 0

    @property
    def name(self) -> str:
        return f"{self.app}-{self.template_hash}"


class PodPhase(StrEnum):
    """A pod's ``status.phase``, in Kubernetes' words."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


POD_DEADLINE_EXCEEDED = "DeadlineExceeded"
"""The ``status.reason`` of a pod the kubelet stopped at its ``activeDeadlineSeconds``."""


@dataclass(frozen=True)
class ObservedPod:
    """A hook or deployer pod gitdeploy created, as the planner sees it."""

    namespace: str
    name: str
    role: str
    phase: str
    """A :class:`PodPhase` as the API reported it (a str: any word the API sends is kept)."""
    revision: int
    """The revision it was created for (a reused ReplicaSet may still own pods of an earlier one)."""
    attempt: int = 1
    app: str = ""
    created_at: float = 0.0
    first_attempt_at: float | None = None
    """When the first attempt of this hook started (a Retry hook gives up at that time + deadline)."""
    finished_at: float | None = None
    exit_code: int | None = None
    reason: str = ""
    deleting: bool = False
    """Deleted, running out its grace period (``metadata.deletionTimestamp`` set): it is going."""

    @property
    def terminal(self) -> bool:
        return self.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED)


@dataclass(frozen=True)
class PodSpec:
    """A run-to-completion pod to create (lifecycle hook or custom deployer), owned by a ReplicaSet."""

    namespace: str
    name: str
    app: str
    role: str
    revision: int
    attempt: int
    first_attempt_at: float
    owner_name: str
    owner_uid: str
    spec_json: str
    """The pod ``spec`` as canonical JSON."""
    labels_json: str = "{}"
    annotations_json: str = "{}"
    """More labels and annotations for the pod, as JSON objects (gitdeploy's own win)."""

    def spec(self) -> dict[str, Any]:
        loaded = json.loads(self.spec_json)
        assert isinstance(loaded, dict)
        return loaded
