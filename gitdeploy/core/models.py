"""The typed, immutable domain model of desired state: apps, their strategies, hooks and triggers.

The manifests layer normalises both ``apps/v1 Deployment`` and OpenShift ``DeploymentConfig`` into
:class:`App`; everything after it works on this one model. The pod template is kept as canonical
JSON (:class:`PodTemplate`), the single free-form part: gitdeploy acts on a few of its fields and
passes the rest through untouched.

``gitdeploy run`` keeps every app of the repo in memory (10,000 in the benchmarks), so records use
``__slots__``, strings read from many templates are interned, and an app's manifest text shares
its template's text, both compressed (:func:`pack_manifest`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gitdeploy.core.canarysteps import CanaryParams
from gitdeploy.core.packedjson import pack, unpack
from gitdeploy.core.pruning import PruneLimit

JsonValue = Any
"""A value that came from JSON/YAML: dict, list, str, int, float, bool or None."""


class AppKind(StrEnum):
    DEPLOYMENT = "Deployment"
    DEPLOYMENT_CONFIG = "DeploymentConfig"
    ROLLOUT = "Rollout"  # Argo Rollouts (argoproj.io/v1alpha1), canary strategy only


class StrategyType(StrEnum):
    ROLLING_UPDATE = "RollingUpdate"  # Deployment
    ROLLING = "Rolling"  # DeploymentConfig
    RECREATE = "Recreate"
    CUSTOM = "Custom"
    CANARY = "Canary"  # a Rollout's strategy.canary

    @property
    def is_rolling(self) -> bool:
        return self in (StrategyType.ROLLING_UPDATE, StrategyType.ROLLING)


class PodReplacementPolicy(StrEnum):
    """When a rolling update may create a pod in place of one that is going (a Deployment's
    ``spec.podReplacementPolicy``, Kubernetes KEP-5882): ``TerminationStarted`` (the Deployment
    controller's behaviour) as soon as the old pod is deleted, so for its grace period more pods
    than ``replicas + maxSurge`` exist; ``TerminationComplete`` only once it is gone, so that
    terminating pods count against ``maxSurge``."""

    TERMINATION_STARTED = "TerminationStarted"
    TERMINATION_COMPLETE = "TerminationComplete"


class FailurePolicy(StrEnum):
    ABORT = "Abort"
    RETRY = "Retry"
    IGNORE = "Ignore"


class HookPhase(StrEnum):
    """When a lifecycle hook runs: before the rollout scales anything (``pre``), between scaling
    the old pods down and the new up (``mid``, Recreate only), after it completes (``post``)."""

    PRE = "pre"
    MID = "mid"
    POST = "post"


class TriggerType(StrEnum):
    CONFIG_CHANGE = "ConfigChange"
    IMAGE_CHANGE = "ImageChange"


@dataclass(frozen=True, slots=True, order=True)
class AppKey:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class EnvVar:
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class Hook:
    """A lifecycle hook (``execNewPod``): a pod built from the named container of the template."""

    failure_policy: FailurePolicy
    container_name: str
    command: tuple[str, ...] = ()
    env: tuple[EnvVar, ...] = ()
    volumes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RollingParams:
    """Rolling/RollingUpdate parameters. Bounds are ints or percentage strings such as ``"25%"``."""

    max_surge: int | str = "25%"
    max_unavailable: int | str = "25%"
    interval_seconds: int = 1
    update_period_seconds: int = 1
    timeout_seconds: int = 600
    pre: Hook | None = None
    post: Hook | None = None


@dataclass(frozen=True, slots=True)
class RecreateParams:
    timeout_seconds: int = 600
    pre: Hook | None = None
    mid: Hook | None = None
    post: Hook | None = None


@dataclass(frozen=True, slots=True)
class CustomParams:
    image: str
    command: tuple[str, ...] = ()
    environment: tuple[EnvVar, ...] = ()


@dataclass(frozen=True, slots=True)
class Strategy:
    type: StrategyType
    rolling: RollingParams | None = None
    recreate: RecreateParams | None = None
    custom: CustomParams | None = None
    canary: CanaryParams | None = None
    resources_json: str = "{}"
    """Strategy ``resources`` (requests/limits for hook and deployer pods), canonical JSON."""
    active_deadline_seconds: int | None = None
    """A DeploymentConfig's ``strategy.activeDeadlineSeconds``: how long the Custom strategy's
    deployer pod may run before the kubelet stops it (OpenShift's default when None)."""

    @property
    def hooks(self) -> dict[HookPhase, Hook]:
        """The hooks this strategy declares, by phase."""
        found: dict[HookPhase, Hook] = {}
        for params in (self.rolling, self.recreate):
            for phase in HookPhase:
                hook = getattr(params, phase, None)
                if hook is not None:
                    found[phase] = hook
        return found


@dataclass(frozen=True, slots=True)
class ImageChangeTrigger:
    automatic: bool
    container_names: tuple[str, ...]
    stream_namespace: str
    stream_name: str
    tag: str

    @property
    def stream_tag(self) -> str:
        return f"{self.stream_name}:{self.tag}"


@dataclass(frozen=True, slots=True)
class Triggers:
    config_change: bool
    image_change: tuple[ImageChangeTrigger, ...] = ()

    def names(self) -> list[str]:
        out = [TriggerType.CONFIG_CHANGE.value] if self.config_change else []
        out += [f"{TriggerType.IMAGE_CHANGE.value}({t.stream_tag})" for t in self.image_change]
        return out


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    image: str


class PodTemplate:
    """A pod template as canonical JSON (sorted keys, no insignificant white space).

    Build it with :func:`gitdeploy.core.hashing.canonical_template`; two templates are equal when
    their canonical JSON is equal, which is exactly when their template hashes are equal.

    The canonical form is normalised for comparing and hashing (empty values dropped); what is
    written to the cluster is the template as git has it (``written_json``, kept only when it
    differs): hashing may normalise, writing must not change the template.

    Immutable. A template that is kept for long (an app's, for as long as git has it) is held
    compressed (:meth:`packed`, :mod:`gitdeploy.core.packedjson`); it reads and compares the same.

    >>> t = PodTemplate('{"spec":{"containers":[{"image":"nginx","name":"web"}]}}')
    >>> t.packed() == t, t.packed().canonical_json == t.canonical_json, t.packed().containers
    (True, True, (Container(name='web', image='nginx'),))
    """

    __slots__ = ("_canonical", "_written")

    def __init__(self, canonical_json: str, written_json: str = "") -> None:
        self._canonical: str | bytes
        self._written: str | bytes
        object.__setattr__(self, "_canonical", canonical_json)
        object.__setattr__(self, "_written", written_json)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"PodTemplate is immutable: cannot set {name}")

    def packed(self) -> PodTemplate:
        """This template held compressed: what an app keeps (a few hundred bytes, not 2 KiB)."""
        if isinstance(self._canonical, bytes):
            return self
        template = PodTemplate.__new__(PodTemplate)
        object.__setattr__(template, "_canonical", pack(self._canonical))
        written = self.written_json
        object.__setattr__(template, "_written", pack(written) if written else "")
        return template

    @property
    def packed_json(self) -> bytes:
        """``canonical_json`` compressed (:func:`~gitdeploy.core.packedjson.pack`): of a packed
        template, the very bytes it holds."""
        held = self._canonical
        return held if isinstance(held, bytes) else pack(held)

    @property
    def canonical_json(self) -> str:
        held = self._canonical
        return held if isinstance(held, str) else unpack(held)

    @property
    def written_json(self) -> str:
        """The template as given (sorted keys, nothing dropped) when that differs from
        ``canonical_json``; empty when they are the same."""
        held = self._written
        return held if isinstance(held, str) else unpack(held)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PodTemplate):
            return NotImplemented
        if isinstance(self._canonical, bytes) and isinstance(other._canonical, bytes):
            return self._canonical == other._canonical  # packing is deterministic: no need to unpack
        return self.canonical_json == other.canonical_json

    def __hash__(self) -> int:
        return hash(self.canonical_json)

    def __repr__(self) -> str:
        return f"PodTemplate(canonical_json={self.canonical_json!r})"

    def to_dict(self) -> dict[str, JsonValue]:
        """A fresh, mutable copy of the canonical (normalised) form."""
        loaded = json.loads(self.canonical_json)
        assert isinstance(loaded, dict)
        return loaded

    def to_written_dict(self) -> dict[str, JsonValue]:
        """A fresh, mutable copy of the template as given: what the cluster adapter writes.

        >>> from gitdeploy.core.hashing import canonical_template
        >>> t = canonical_template({"spec": {"volumes": [{"name": "tmp", "emptyDir": {}}]}})
        >>> t.to_dict(), t.to_written_dict()
        ({'spec': {'volumes': [{'name': 'tmp'}]}}, {'spec': {'volumes': [{'emptyDir': {}, 'name': 'tmp'}]}})
        """
        loaded = json.loads(self.written_json or self.canonical_json)
        assert isinstance(loaded, dict)
        return loaded

    @property
    def containers(self) -> tuple[Container, ...]:
        """The containers' names and images (read from the JSON at each call: not kept)."""
        spec = self.to_dict().get("spec") or {}
        return tuple(
            Container(name=sys.intern(str(c.get("name", ""))), image=sys.intern(str(c.get("image", ""))))
            for c in spec.get("containers") or []
        )

    @property
    def labels(self) -> dict[str, str]:
        """The pod labels (read from the JSON at each call: not kept)."""
        meta = self.to_dict().get("metadata") or {}
        return {sys.intern(str(k)): sys.intern(str(v)) for k, v in (meta.get("labels") or {}).items()}


@dataclass(frozen=True, slots=True)
class LabelSelectorRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Selector:
    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        """Whether ``labels`` satisfy this selector (Kubernetes label-selector semantics)."""
        if any(labels.get(k) != v for k, v in self.match_labels):
            return False
        for req in self.match_expressions:
            present = req.key in labels
            if req.operator == "In" and (not present or labels[req.key] not in req.values):
                return False
            if req.operator == "NotIn" and present and labels[req.key] in req.values:
                return False
            if req.operator == "Exists" and not present:
                return False
            if req.operator == "DoesNotExist" and present:
                return False
        return True


@dataclass(frozen=True, slots=True)
class Location:
    """Where an object was defined: file (relative to the repo root) and 1-based line."""

    file: str
    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class App:
    """One deployable app, normalised from a Deployment, a DeploymentConfig or a Rollout.

    ``replicas`` is None when the manifest omits it: the live count is kept (room for an
    autoscaler); a new app then starts with 1.
    """

    kind: AppKind
    api_version: str
    key: AppKey
    location: Location
    template: PodTemplate
    template_hash: str
    selector: Selector
    strategy: Strategy
    triggers: Triggers
    replicas: int | None = None
    paused: bool = False
    revision_history_limit: int = 10
    min_ready_seconds: int = 0
    progress_deadline_seconds: int = 600
    auto_rollback: bool = False
    pod_replacement_policy: PodReplacementPolicy = PodReplacementPolicy.TERMINATION_STARTED
    change_cause: str = ""
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    manifest_packed: tuple[bytes, ...] = field(default=(), compare=False, repr=False)
    """:attr:`manifest_json` compressed, in pieces (see :func:`pack_manifest`)."""

    @property
    def manifest_json(self) -> str:
        """The whole manifest as canonical JSON, for diffs and rollbacks that restore settings."""
        if not self.manifest_packed:
            return "{}"
        text = unpack(self.manifest_packed[0])
        if len(self.manifest_packed) == 1:
            return text
        return text.replace(TEMPLATE_MARK, unpack(self.manifest_packed[1]), 1)

    @property
    def name(self) -> str:
        return self.key.name

    @property
    def namespace(self) -> str:
        return self.key.namespace


TEMPLATE_MARK = "\x00"
"""Where a packed manifest held its template's text (JSON text never holds a raw NUL)."""


def pack_manifest(manifest_json: str, template: PodTemplate) -> tuple[bytes, ...]:
    """``manifest_json`` as :attr:`App.manifest_packed` keeps it, compressed: the text around the
    template's canonical JSON (marked by :data:`TEMPLATE_MARK`), and that JSON as the very bytes
    the packed template holds, so the larger part of a manifest is kept once, not twice, and the
    manifest stays as git has it when the app's template is replaced (resolved images). That works
    when the manifest writes its template as gitdeploy normalises it (no empty values, no
    template-hash label: the usual case); otherwise the manifest is one piece.

    >>> template = PodTemplate('{"spec":{"containers":[{"image":"nginx","name":"web"}]}}').packed()
    >>> whole = '{"kind":"Deployment","spec":{"replicas":2,"template":' + template.canonical_json + '}}'
    >>> pieces = pack_manifest(whole, template)
    >>> pieces[1] is template.packed_json, TEMPLATE_MARK in unpack(pieces[0])
    (True, True)
    >>> app = App(AppKind.DEPLOYMENT, "apps/v1", AppKey("shop", "web"), Location("web.yaml", 1),
    ...           PodTemplate("{}"), "h", Selector(), Strategy(StrategyType.RECREATE), Triggers(True),
    ...           manifest_packed=pieces)
    >>> app.manifest_json == whole
    True
    >>> [unpack(piece) for piece in pack_manifest('{"kind":"Deployment"}', template)]
    ['{"kind":"Deployment"}']
    """
    text = template.canonical_json
    if text not in manifest_json:
        return (pack(manifest_json),)
    return pack(manifest_json.replace(text, TEMPLATE_MARK, 1)), template.packed_json


@dataclass(frozen=True, slots=True)
class ImageStreamTag:
    name: str
    from_kind: str  # DockerImage or ImageStreamTag
    from_name: str
    scheduled: bool = False


@dataclass(frozen=True, slots=True)
class ImageStream:
    key: AppKey
    location: Location
    tags: tuple[ImageStreamTag, ...] = ()

    def tag(self, name: str) -> ImageStreamTag | None:
        return next((t for t in self.tags if t.name == name), None)


@dataclass(frozen=True, slots=True)
class RepoSettings:
    """The optional ``gitdeploy.yaml`` at the root of the config repo."""

    paths: tuple[str, ...] = ()
    """Directories (relative to the root) holding manifests; empty means the whole tree."""
    allowed_namespaces: tuple[str, ...] = ()
    """Namespaces apps may be deployed to; empty means any."""
    default_namespace: str = "default"
    prune: bool = False
    auto_rollback: bool | None = None
    """Overrides the per-kind default of automatic rollback on failure when set."""
    prune_limit: PruneLimit = PruneLimit()  # noqa: RUF009 (frozen: one shared default is safe)
    """Above this many prunes, a commit's prunes are held for a person to confirm."""
