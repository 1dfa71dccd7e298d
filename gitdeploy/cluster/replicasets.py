"""The ReplicaSets gitdeploy makes for an app's revisions, and the pods made from their templates.

A ReplicaSet carries gitdeploy's labels only (the template hash, the app, managed-by) and no owner,
so nothing that happens to the app record or to a Deployment reaches it; :func:`to_observed_replica_set`
reads one (as listed, watched or written) into what the planner reads.
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterator, Mapping
from typing import Any

from gitdeploy.cluster.apierrors import translated
from gitdeploy.cluster.rawapi import (
    Bookmark,
    RawApi,
    discard,
    int_annotation,
    keep_apps,
    labels_of,
    timestamp,
)
from gitdeploy.core.hashing import TEMPLATE_HASH_LABEL
from gitdeploy.core.models import PodTemplate
from gitdeploy.core.observed import (
    APP_LABEL,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    REVISION_ANNOTATION,
    ObservedReplicaSet,
    ReplicaSetSpec,
)
from gitdeploy.core.rollout.labeldrift import NamedReplicaSet
from gitdeploy.core.rollout.templatedrift import TemplatePod, pod_fingerprint
from gitdeploy.core.scaling.progress import ConditionStatus, ConditionType
from gitdeploy.core.scaling.replicasets import (
    DESIRED_REPLICAS_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    ReplicaSetFailure,
    ReplicaSetState,
)
from gitdeploy.core.sharding import SHARD_LABEL, shard_of, shard_selector
from gitdeploy.errors import NotFoundError
from gitdeploy.quantities import quantities_as_text

MANAGED_SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"
_OWN_LABELS = frozenset({TEMPLATE_HASH_LABEL, APP_LABEL, MANAGED_BY_LABEL})
"""The only labels of a ReplicaSet gitdeploy makes: no Deployment's selector can match them (it must
match the Deployment's own template), so no Deployment adopts a ReplicaSet that nothing owns."""


def to_observed_replica_set(raw: Mapping[str, Any]) -> ObservedReplicaSet:
    """A managed ReplicaSet as JSON (from a list) → what the planner reads. Its template stays
    parsed JSON until someone reads it (see :class:`~gitdeploy.core.observed.ListedTemplate`)."""
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    labels = labels_of(raw)
    annotations = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
    failure = None
    for condition in status.get("conditions") or []:
        replica_failure = condition.get("type") == ConditionType.REPLICA_FAILURE
        if replica_failure and condition.get("status") == ConditionStatus.TRUE:
            failure = ReplicaSetFailure(
                str(condition.get("reason", "")),
                str(condition.get("message", "")),
                timestamp(condition.get("lastTransitionTime")),
            )
    template = spec.get("template")
    state = ReplicaSetState(
        name=str(meta["name"]),
        template_hash=str(labels.get(TEMPLATE_HASH_LABEL, "")),
        revision=int_annotation(annotations, REVISION_ANNOTATION) or 0,
        created_at=timestamp(meta.get("creationTimestamp")),
        replicas=int(spec.get("replicas", 0) or 0),
        current=int(status.get("replicas", 0) or 0),
        ready=int(status.get("readyReplicas", 0) or 0),
        available=int(status.get("availableReplicas", 0) or 0),
        desired_replicas_annotation=int_annotation(annotations, DESIRED_REPLICAS_ANNOTATION),
        max_replicas_annotation=int_annotation(annotations, MAX_REPLICAS_ANNOTATION),
        failure=failure,
    )
    return ObservedReplicaSet(
        namespace=str(meta.get("namespace", "")),
        app=str(labels.get(APP_LABEL, "")),
        state=state,
        annotations=tuple(sorted(annotations.items())),
        uid=str(meta.get("uid", "")),
        observed_generation_current=int(status.get("observedGeneration", 0) or 0)
        >= int(meta.get("generation", 0) or 0),
        generation=int(meta.get("generation", 0) or 0),
        resource_version=str(meta.get("resourceVersion", "")),
        template=template if isinstance(template, dict) else None,
        owned_the_old_way=bool(_old_ownership(raw)),
    )


def _written_template(template: PodTemplate, template_hash: str, app: str) -> dict[str, Any]:
    """A ReplicaSet's pod template as gitdeploy writes it: git's, with only gitdeploy's labels added."""
    written = template.to_written_dict()
    written.setdefault("metadata", {}).setdefault("labels", {})[TEMPLATE_HASH_LABEL] = template_hash
    written["metadata"]["labels"][APP_LABEL] = app
    written["spec"] = quantities_as_text(written.get("spec") or {})
    return written


def _template_pod(raw: Mapping[str, Any]) -> TemplatePod:
    meta = raw.get("metadata") or {}
    conditions = (raw.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return TemplatePod(
        name=str(meta.get("name", "")),
        fingerprint=pod_fingerprint(
            dict(meta.get("labels") or {}), (raw.get("spec") or {}).get("containers") or []
        ),
        ready=ready,
        deleting=meta.get("deletionTimestamp") is not None,
    )


def _old_ownership(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that releases a ReplicaSet made the old way: its owner reference to the app
    record goes (so deleting the record cannot delete it) and so do the app's selector labels on it
    (so no Deployment with that selector adopts it); empty when it was made the current way."""
    meta = raw.get("metadata") or {}
    refs = meta.get("ownerReferences") or []
    kept = [r for r in refs if r.get("kind") != "ConfigMap"]
    labels = meta.get("labels") or {}
    selector = ((raw.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    foreign = [k for k in selector if k in labels and k not in _OWN_LABELS]
    patch: dict[str, Any] = {}
    if len(kept) != len(refs):
        patch["ownerReferences"] = kept or None
    if foreign:
        patch["labels"] = dict.fromkeys(foreign)
    return {"metadata": {**patch, "resourceVersion": meta.get("resourceVersion")}} if patch else {}


class ReplicaSets:
    """Listing, watching, creating, scaling, annotating, releasing and deleting managed ReplicaSets."""

    def __init__(self, kube: RawApi) -> None:
        self.kube = kube

    def list_replica_sets(
        self, namespace: str | None = None, app: str | None = None, *, of_apps: Container[str] | None = None
    ) -> list[ObservedReplicaSet]:
        """Every ReplicaSet gitdeploy manages, in one namespace (or all), in one list call; of one
        ``app``, or (read from the whole list) only those of ``of_apps``."""
        selector = MANAGED_SELECTOR + (f",{APP_LABEL}={app}" if app else "")
        keep = keep_apps(of_apps)
        return self.kube.list_selected_as(
            self.kube.replica_sets, "list ReplicaSets", namespace, selector, to_observed_replica_set, keep
        )

    def list_replica_sets_at(
        self, namespace: str, shards: frozenset[str] | None = None
    ) -> tuple[list[ObservedReplicaSet], str]:
        """The ReplicaSets gitdeploy manages in ``namespace`` (of the apps of ``shards`` only, when
        given) and the list's resourceVersion, from one list (read page by page): where
        :meth:`watch_replica_sets` goes on from."""
        return self.kube.list_converted_at(
            self.kube.replica_sets.list,
            f"list ReplicaSets in {namespace}",
            to_observed_replica_set,
            namespace=namespace,
            label_selector=shard_selector(MANAGED_SELECTOR, shards),
        )

    def watch_replica_sets(
        self,
        namespace: str,
        timeout_seconds: int = 300,
        resource_version: str = "",
        shards: frozenset[str] | None = None,
    ) -> Iterator[tuple[str, ObservedReplicaSet | Bookmark]]:
        """``(event type, ReplicaSet)`` for every change of a ReplicaSet gitdeploy manages in
        ``namespace`` (of the apps of ``shards`` only, when given) after ``resource_version``
        (from :meth:`list_replica_sets_at`; without it, from now on: never a dump of every
        ReplicaSet), until the server ends the watch. A ``410 Gone`` surfaces as
        :class:`ExpiredError`."""
        what = f"watch of ReplicaSets in {namespace}"
        selector = shard_selector(MANAGED_SELECTOR, shards)
        version = resource_version
        if not version:
            with translated(what):
                listed = self.kube.replica_sets.list(
                    namespace,
                    label_selector=selector,
                    limit=1,
                    _preload_content=False,
                    _request_timeout=self.kube.timeout,
                )
                version = str(json.loads(listed.data)["metadata"]["resourceVersion"])
        yield from self.kube.watch_as(
            self.kube.replica_sets.list,
            what,
            to_observed_replica_set,
            namespace=namespace,
            label_selector=selector,
            resource_version=version,
            timeout_seconds=timeout_seconds,
            _request_timeout=self.kube.watch_timeout(timeout_seconds),
        )

    def label_shards(self, namespace: str) -> int:
        """Label the managed ReplicaSets of ``namespace`` made without their app's shard label
        with it (:meth:`~gitdeploy.cluster.rawapi.RawApi.label_shards`); how many."""
        return self.kube.label_shards(self.kube.replica_sets, namespace, MANAGED_SELECTOR, "ReplicaSet")

    def create_replica_set(self, spec: ReplicaSetSpec) -> ObservedReplicaSet:
        selector = dict(spec.selector_labels) | {TEMPLATE_HASH_LABEL: spec.template_hash}
        template = _written_template(spec.template, spec.template_hash, spec.app)
        body = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": spec.name,
                "namespace": spec.namespace,
                # No owner (nothing that happens to the app record reaches it) and gitdeploy's
                # labels only (no Deployment's selector matches them, so none adopts it).
                "labels": {
                    TEMPLATE_HASH_LABEL: spec.template_hash,
                    APP_LABEL: spec.app,
                    MANAGED_BY_LABEL: MANAGED_BY_VALUE,
                    SHARD_LABEL: shard_of(f"{spec.namespace}/{spec.app}"),
                },
                "annotations": dict(spec.annotations),
            },
            "spec": {
                "replicas": spec.replicas,
                "minReadySeconds": spec.min_ready_seconds,
                "selector": {"matchLabels": selector},
                "template": template,
            },
        }
        with translated(f"create ReplicaSet {spec.namespace}/{spec.name}"):
            response = self.kube.replica_sets.create(spec.namespace, body)
            created = json.loads(response.data)
        return to_observed_replica_set(created)

    def scale_replica_set(
        self,
        namespace: str,
        name: str,
        replicas: int | None,
        annotations: Mapping[str, str] | None = None,
        *,
        version: str = "",
    ) -> ObservedReplicaSet:
        """Set ``spec.replicas`` and/or annotations in one merge patch (one API write); at
        ``version``, the resourceVersion read, when given (a ConflictError if it changed since, as
        the Kubernetes Deployment controller's Update of a ReplicaSet)."""
        patch: dict[str, Any] = {}
        if replicas is not None:
            patch["spec"] = {"replicas": replicas}
        metadata: dict[str, Any] = {"annotations": dict(annotations)} if annotations else {}
        if version:
            metadata["resourceVersion"] = version
        if metadata:
            patch["metadata"] = metadata
        return self._patch(namespace, name, patch, f"scale ReplicaSet {namespace}/{name}")

    def restore_replica_set_template(
        self, namespace: str, name: str, app: str, template_hash: str, template: PodTemplate
    ) -> ObservedReplicaSet:
        """Write ``template`` back as the ReplicaSet's whole pod template (as :meth:`create_replica_set`
        writes it), replacing a hand-edited one; the answer is the ReplicaSet as stored."""
        written = _written_template(template, template_hash, app)
        patch = [{"op": "replace", "path": "/spec/template", "value": written}]
        what = f"restore the pod template of ReplicaSet {namespace}/{name}"
        return self._patch(namespace, name, patch, what, "application/json-patch+json")

    def read_replica_set(
        self, namespace: str, name: str
    ) -> tuple[NamedReplicaSet, ObservedReplicaSet] | None:
        """One ReplicaSet by name, whatever its labels (None: there is none): its labels and the
        template hash its selector matches, and what the planner reads of it."""
        try:
            with translated(f"read ReplicaSet {namespace}/{name}"):
                response = self.kube.replica_sets.read(namespace, name)
        except NotFoundError:
            return None
        raw = json.loads(response.data)
        selector = ((raw.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        labels = tuple(sorted(labels_of(raw).items()))
        found = NamedReplicaSet(name, labels, str(selector.get(TEMPLATE_HASH_LABEL, "")))
        return found, to_observed_replica_set(raw)

    def relabel_replica_set(self, namespace: str, name: str, labels: Mapping[str, str]) -> ObservedReplicaSet:
        """Set ``labels`` on a ReplicaSet in one merge patch (its other labels stay)."""
        patch = {"metadata": {"labels": dict(labels)}}
        return self._patch(namespace, name, patch, f"relabel ReplicaSet {namespace}/{name}")

    def annotate_replica_set(
        self, namespace: str, name: str, annotations: Mapping[str, str | None]
    ) -> ObservedReplicaSet:
        """Set (or, for None, remove) annotations of a ReplicaSet in one merge patch."""
        patch = {"metadata": {"annotations": dict(annotations)}}
        return self._patch(namespace, name, patch, f"annotate ReplicaSet {namespace}/{name}")

    def _patch(
        self,
        namespace: str,
        name: str,
        patch: Any,
        what: str,
        content_type: str = "application/merge-patch+json",
    ) -> ObservedReplicaSet:
        """One patch of a ReplicaSet (``what`` names it in errors); the ReplicaSet as stored."""
        with translated(what):
            response = self.kube.replica_sets.patch(namespace, name, patch, content_type)
            return to_observed_replica_set(json.loads(response.data))

    def list_replica_set_pods(self, namespace: str, app: str, template_hash: str) -> list[TemplatePod]:
        """The pods of an app's ReplicaSet (by its template hash), as made from a template."""
        selector = f"{APP_LABEL}={app},{TEMPLATE_HASH_LABEL}={template_hash}"
        found = self.kube.list_json(
            self.kube.pods.list, f"list pods of {namespace}/{app}", namespace=namespace,
            label_selector=selector,
        )  # fmt: skip
        return [_template_pod(raw) for raw in found]

    def release_replica_set(self, namespace: str, name: str) -> None:
        """Release a ReplicaSet made the old way (see ``ObservedReplicaSet.owned_the_old_way``) in
        one write, at the version read (a ConflictError if it changed meanwhile: the next pass)."""
        what = f"release ReplicaSet {namespace}/{name} from the app record"
        try:
            with translated(what):
                response = self.kube.replica_sets.read(namespace, name)
            patch = _old_ownership(json.loads(response.data))
            if patch:
                with translated(what):
                    discard(self.kube.replica_sets.patch(namespace, name, patch))
        except NotFoundError:
            pass

    def delete_replica_set(self, namespace: str, name: str, *, version: str = "", uid: str = "") -> None:
        """Delete a ReplicaSet (gone already: nothing to do); at ``version``, the resourceVersion
        read, and only the object ``uid`` names (not one made anew under its name), when given (a
        ConflictError if it changed since, or is another object)."""
        preconditions = {"resourceVersion": version} if version else {}
        if uid:
            preconditions["uid"] = uid
        body = {"preconditions": preconditions} if preconditions else None
        try:
            with translated(f"delete ReplicaSet {namespace}/{name}"):
                discard(self.kube.replica_sets.delete(namespace, name, body, propagation_policy="Background"))
        except NotFoundError:
            pass
