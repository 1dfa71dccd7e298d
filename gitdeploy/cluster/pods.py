"""The hook and deployer pods gitdeploy makes (never the app's own pods), and their logs.

A hook pod is owned by its ReplicaSet (garbage-collected with it) but not controlled by it, so the
ReplicaSet controller neither counts, adopts nor deletes it. :func:`to_observed_pod` reads one into
what the planner reads; :meth:`HookPods.list_pods_with_census` also counts the app's own pods per
ReplicaSet in the same list call.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from gitdeploy.cluster.apierrors import translated
from gitdeploy.cluster.rawapi import RawApi, discard, int_annotation, labels_of, timestamp
from gitdeploy.core.hashing import TEMPLATE_HASH_LABEL
from gitdeploy.core.history.records import LOG_WINDOW_BYTES, MAX_LOG_BYTES, log_tail
from gitdeploy.core.observed import (
    APP_LABEL,
    ATTEMPT_ANNOTATION,
    FIRST_ATTEMPT_AT_ANNOTATION,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    POD_ROLE_LABEL,
    REVISION_ANNOTATION,
    ObservedPod,
    PodCensus,
    PodPhase,
    PodSpec,
)
from gitdeploy.core.podstates import ContainerState, PodState
from gitdeploy.core.timestamps import format_timestamp, parse_timestamp
from gitdeploy.errors import GitdeployError, NotFoundError, PermanentError
from gitdeploy.quantities import quantities_as_text


def to_observed_pod(raw: Mapping[str, Any]) -> ObservedPod:
    """A hook or deployer pod as JSON → what the planner reads."""
    meta = raw.get("metadata") or {}
    status = raw.get("status") or {}
    annotations = meta.get("annotations") or {}
    finished: list[float] = []
    exit_code: int | None = None
    reason = ""
    for container in status.get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated:
            finished.append(timestamp(terminated.get("finishedAt")))
            code = int(terminated.get("exitCode", 0) or 0)
            if exit_code is None or code != 0:
                exit_code, reason = code, str(terminated.get("reason", ""))
        waiting = (container.get("state") or {}).get("waiting")
        if waiting and not reason:
            reason = str(waiting.get("reason", ""))
    reason = str(status.get("reason") or reason)  # the pod's own (DeadlineExceeded) says more
    first_attempt = annotations.get(FIRST_ATTEMPT_AT_ANNOTATION)
    return ObservedPod(
        namespace=str(meta.get("namespace", "")),
        name=str(meta["name"]),
        role=str((meta.get("labels") or {}).get(POD_ROLE_LABEL, "")),
        app=str((meta.get("labels") or {}).get(APP_LABEL, "")),
        phase=str(status.get("phase", PodPhase.PENDING)),
        revision=int_annotation(annotations, REVISION_ANNOTATION) or 0,
        attempt=int_annotation(annotations, ATTEMPT_ANNOTATION) or 1,
        created_at=timestamp(meta.get("creationTimestamp")),
        first_attempt_at=parse_timestamp(first_attempt),
        finished_at=max(finished) if finished else None,
        exit_code=exit_code,
        reason=reason,
        deleting=meta.get("deletionTimestamp") is not None,
    )


def to_pod_state(raw: Mapping[str, Any]) -> PodState:
    """An app pod as JSON → what it tells of why it is not ready (:mod:`gitdeploy.core.podstates`)."""
    status = raw.get("status") or {}
    conditions = {str(c.get("type")): c for c in status.get("conditions") or []}
    scheduled = conditions.get("PodScheduled") or {}
    unschedulable = None
    if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
        unschedulable = str(scheduled.get("message") or "")
    containers = []
    for c in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        state = c.get("state") or {}
        terminated = state.get("terminated") or (c.get("lastState") or {}).get("terminated") or {}
        code = terminated.get("exitCode")
        containers.append(
            ContainerState(
                container=str(c.get("name", "")),
                image=str(c.get("image", "")),
                waiting=str((state.get("waiting") or {}).get("reason") or ""),
                exit_code=int(code) if isinstance(code, int) else None,
                ready=bool(c.get("ready")),
            )
        )
    return PodState(
        name=str((raw.get("metadata") or {}).get("name", "")),
        ready=(conditions.get("Ready") or {}).get("status") == "True",
        unschedulable=unschedulable,
        containers=tuple(containers),
    )


class HookPods:
    """Listing, creating and deleting hook and deployer pods, and reading their logs."""

    def __init__(self, kube: RawApi) -> None:
        self.kube = kube

    def list_app_pods(self, namespace: str | None = None, app: str | None = None) -> list[ObservedPod]:
        """The hook and deployer pods gitdeploy made (never the app's own pods), in one list call."""
        selector = POD_ROLE_LABEL + (f",{APP_LABEL}={app}" if app else "")
        raw = self.kube.list_selected(
            self.kube.pods,
            "list hook pods",
            namespace,
            selector,
        )
        return [to_observed_pod(item) for item in raw]

    def list_pods_with_census(
        self, namespace: str, app: str | None = None
    ) -> tuple[list[ObservedPod], dict[str, PodCensus]]:
        """In one list call in ``namespace`` (of ``app``'s pods only, if given): the hook and
        deployer pods gitdeploy made (as :meth:`list_app_pods`) and, per app, how many pods of
        each ReplicaSet exist, terminating ones included (see :class:`PodCensus`)."""
        selector = f"{APP_LABEL}={app}" if app else APP_LABEL
        raw = self.kube.list_json(
            self.kube.pods.list,
            f"list pods in {namespace}",
            namespace=namespace,
            label_selector=selector,
        )
        hook_pods: list[ObservedPod] = []
        counts: dict[str, Counter[str]] = {}
        for item in raw:
            if POD_ROLE_LABEL in labels_of(item):
                hook_pods.append(to_observed_pod(item))
                continue
            if (item.get("status") or {}).get("phase") in (PodPhase.SUCCEEDED, PodPhase.FAILED):
                continue
            owners = (item.get("metadata") or {}).get("ownerReferences") or []
            owner = next((r for r in owners if r.get("controller") and r.get("kind") == "ReplicaSet"), None)
            if owner is not None:
                counts.setdefault(labels_of(item).get(APP_LABEL, ""), Counter())[str(owner.get("name"))] += 1
        return hook_pods, {name: PodCensus(tuple(sorted(found.items()))) for name, found in counts.items()}

    def list_pod_states(self, namespace: str, app: str, template_hash: str) -> list[PodState]:
        """The app's pods of one ReplicaSet (by its template hash), as :class:`PodState`."""
        raw = self.kube.list_json(
            self.kube.pods.list,
            f"list pods of {namespace}/{app}",
            namespace=namespace,
            label_selector=f"{APP_LABEL}={app},{TEMPLATE_HASH_LABEL}={template_hash},!{POD_ROLE_LABEL}",
        )
        return [to_pod_state(item) for item in raw]

    def create_pod(self, spec: PodSpec) -> ObservedPod:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": spec.name,
                "namespace": spec.namespace,
                "labels": {
                    **json.loads(spec.labels_json),
                    APP_LABEL: spec.app,
                    POD_ROLE_LABEL: spec.role,
                    MANAGED_BY_LABEL: MANAGED_BY_VALUE,
                },
                "annotations": {
                    **json.loads(spec.annotations_json),
                    REVISION_ANNOTATION: str(spec.revision),
                    ATTEMPT_ANNOTATION: str(spec.attempt),
                    FIRST_ATTEMPT_AT_ANNOTATION: format_timestamp(spec.first_attempt_at),
                },
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": spec.owner_name,
                        "uid": spec.owner_uid,
                        # Owned (garbage-collected with the ReplicaSet) but not controlled: the
                        # ReplicaSet controller must neither count nor adopt nor delete hook pods.
                        "controller": False,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": quantities_as_text(spec.spec()),
        }
        with translated(f"create pod {spec.namespace}/{spec.name} (app {spec.app})", spec):
            response = self.kube.pods.create(spec.namespace, body)
            created = json.loads(response.data)
        return to_observed_pod(created)

    def delete_pod(self, namespace: str, name: str) -> None:
        try:
            with translated(f"delete pod {namespace}/{name}"):
                discard(self.kube.pods.delete(namespace, name))
        except NotFoundError:
            pass

    def read_pod_log(self, namespace: str, name: str, tail_lines: int = MAX_LOG_BYTES) -> str:
        """The end of a pod's log: its last ``tail_lines`` lines, of which at most the last
        :data:`LOG_WINDOW_BYTES` bytes are kept ('' when the pod or its log is gone).

        Every line is at least its newline once colour codes are gone, so the default holds the
        last :data:`MAX_LOG_BYTES` of text a revision keeps however short the lines are; the log
        is read as a stream, so a long one never takes more memory than the window.
        A log is best effort and never holds a rollout up: when the API server cannot get it from
        the node (the kubelet unreachable, a 5xx, a timeout), the text says why instead."""
        try:
            return self.tail_pod_log(namespace, name, tail_lines)
        except (NotFoundError, PermanentError):
            return ""
        except GitdeployError as unavailable:
            return f"(the log could not be read: {unavailable.message})\n"

    def tail_pod_log(
        self, namespace: str, name: str, tail_lines: int, window_bytes: int = LOG_WINDOW_BYTES
    ) -> str:
        """As :meth:`read_pod_log`, but a pod that is gone raises NotFoundError and a refusal
        (RBAC's 403 on ``pods/log``) PermanentError, for a reader that says which it was."""
        with translated(f"read the log of pod {namespace}/{name}"):
            response = self.kube.pods.read(namespace, name, subresource="log", tail_lines=tail_lines)
            try:
                window = bytearray()
                for chunk in response.stream(window_bytes):
                    window += chunk
                    del window[: max(len(window) - window_bytes, 0)]
            finally:
                response.release_conn()
        return log_tail(bytes(window), window_bytes)
