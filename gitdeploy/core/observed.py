"""What the cluster runs for an app, as the planner sees it (built by the cluster adapter)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitdeploy.core.models import PodTemplate
from gitdeploy.core.replicasets import ReplicaSetState

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "gitdeploy"
APP_LABEL = "gitdeploy.io/app"
RECORD_LABEL = "gitdeploy.io/record"
REVISION_ANNOTATION = "gitdeploy.io/revision"
REVISION_HISTORY_ANNOTATION = "gitdeploy.io/revision-history"
COMMIT_ANNOTATION = "gitdeploy.io/commit"
CHANGE_CAUSE_ANNOTATION = "gitdeploy.io/change-cause"
PHASE_ANNOTATION = "gitdeploy.io/phase"


def record_name(app: str) -> str:
    """The ConfigMap that holds an app's revision log and control state."""
    return f"gitdeploy.{app}"


@dataclass(frozen=True)
class ObservedReplicaSet:
    """A managed ReplicaSet: the numbers the rollout math needs, plus gitdeploy's annotations."""

    namespace: str
    app: str
    state: ReplicaSetState
    annotations: tuple[tuple[str, str], ...] = ()
    uid: str = ""
    observed_generation_current: bool = True
    """``status.observedGeneration >= metadata.generation``: the status reflects the latest spec."""
    template: PodTemplate | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        return self.state.name

    def annotation(self, key: str, default: str = "") -> str:
        return dict(self.annotations).get(key, default)


@dataclass(frozen=True)
class StoredRecord:
    """The app record as stored: its JSON payload and the resourceVersion to write it back with."""

    namespace: str
    app: str
    payload: str
    resource_version: str
    uid: str


@dataclass(frozen=True)
class ReplicaSetSpec:
    """A ReplicaSet to create for an app (see DESIGN.md, "The cluster model")."""

    namespace: str
    app: str
    template: PodTemplate
    template_hash: str
    selector_labels: tuple[tuple[str, str], ...]
    replicas: int
    annotations: tuple[tuple[str, str], ...]
    owner_uid: str
    min_ready_seconds: int = 0

    @property
    def name(self) -> str:
        return f"{self.app}-{self.template_hash}"
