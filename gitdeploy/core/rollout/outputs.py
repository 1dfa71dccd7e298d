"""What a pass decides: one :class:`Step` (actions, events, the record to write, the status and
when to look again)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.observed import PodSpec, ReplicaSetSpec
from gitdeploy.core.scaling.progress import DeploymentStatus


@dataclass(frozen=True)
class Event:
    reason: str
    message: str
    warning: bool = False


@dataclass(frozen=True)
class CreateReplicaSet:
    spec: ReplicaSetSpec


@dataclass(frozen=True)
class PatchReplicaSet:
    """Scale (``replicas`` not None) and/or annotate a ReplicaSet in one write."""

    name: str
    replicas: int | None
    annotations: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DeleteReplicaSet:
    name: str


@dataclass(frozen=True)
class CreatePod:
    spec: PodSpec


@dataclass(frozen=True)
class DeletePod:
    name: str


Action = CreateReplicaSet | PatchReplicaSet | DeleteReplicaSet | CreatePod | DeletePod


class AppPhase(StrEnum):
    """The one-word state of an app, as ``gitdeploy status`` shows it."""

    PROGRESSING = "Progressing"
    COMPLETE = "Complete"
    FAILED = "Failed"
    PAUSED = "Paused"
    WAITING = "Waiting"
    """A new template that may not roll out by itself (no ConfigChange trigger)."""


@dataclass(frozen=True)
class Step:
    """One pass's decisions. The executor writes ``record`` first, then runs ``actions`` in order."""

    phase: AppPhase
    message: str
    revision: int
    status: DeploymentStatus
    actions: tuple[Action, ...] = ()
    events: tuple[Event, ...] = ()
    record: AppRecord | None = None
    create_record: bool = False
    """Write ``record`` as a new ConfigMap (the app had none)."""
    requeue_after: float | None = None
    """Seconds until the next pass; None when the app is settled (look again on change only)."""
    log_pods: tuple[str, ...] = ()
    """Hook/deployer pods whose log tail the executor adds to ``record`` before writing it."""
    explain_with_pods: str = ""
    """The template hash of a ReplicaSet whose pods would say why this step fails its revision
    (they were not in the snapshot): the executor reads them into ``Snapshot.new_pods`` and
    plans the pass again, instead of carrying out this step."""
