"""The only code that talks to the Kubernetes API (DESIGN.md, layer ``cluster``).

Lists skip the client's model deserialisation (``_preload_content=False``) and parse the JSON
themselves: building models costs milliseconds per object. Every API or network error leaves this
module as a :mod:`gitdeploy.errors` error.

Every call has a timeout (:data:`REQUEST_TIMEOUT`, connect and read), so a stalled connection
fails the call as a :class:`~gitdeploy.errors.TransientError` (the loop retries the app with
backoff) instead of hanging a worker; a watch asks the server to end it after ``timeout_seconds``
and reads for that long plus the read timeout. Answers are read inside the translation too, so an
answer cut mid-way is a TransientError as well.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Container, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Final, TypeVar

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)

from gitdeploy.cluster.quantities import quantities_as_text
from gitdeploy.core.hashing import TEMPLATE_HASH_LABEL
from gitdeploy.core.hooks import DEPLOYER_ROLE
from gitdeploy.core.lease import LeaseSpec, ObservedLease, format_micro_time
from gitdeploy.core.models import PodTemplate
from gitdeploy.core.observed import (
    APP_LABEL,
    ATTEMPT_ANNOTATION,
    FIRST_ATTEMPT_AT_ANNOTATION,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    POD_ROLE_LABEL,
    RECORD_LABEL,
    REVISION_ANNOTATION,
    ObservedPod,
    ObservedReplicaSet,
    PodCensus,
    PodSpec,
    ReplicaSetSpec,
    StoredRecord,
    record_name,
)
from gitdeploy.core.records import LOG_WINDOW_BYTES, MAX_LOG_BYTES, log_tail
from gitdeploy.core.replicasets import (
    DESIRED_REPLICAS_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    ReplicaSetFailure,
    ReplicaSetState,
)
from gitdeploy.core.templatedrift import TemplatePod, pod_fingerprint
from gitdeploy.core.timestamps import format_timestamp, parse_timestamp
from gitdeploy.errors import (
    AlreadyExistsError,
    ConflictError,
    ExpiredError,
    GitdeployError,
    NotFoundError,
    PermanentError,
    TransientError,
)

T = TypeVar("T")
MANAGED_SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"
_OWN_LABELS = frozenset({TEMPLATE_HASH_LABEL, APP_LABEL, MANAGED_BY_LABEL})
"""The only labels of a ReplicaSet gitdeploy makes: no Deployment's selector can match them (it must
match the Deployment's own template), so no Deployment adopts a ReplicaSet that nothing owns."""
RECORD_KEY = "record.json"
IMAGESTREAM_LABEL = "gitdeploy.io/imagestream"
"""Label of an image stream's state ConfigMap; its value is the stream's name."""
STREAM_STATE_KEY = "tags.json"
REQUEST_TIMEOUT: Final = (5.0, 30.0)
"""Seconds to connect, and to wait for each read of an answer, for every API call."""


def stream_state_name(stream: str) -> str:
    """The ConfigMap that holds an image stream's tag histories."""
    return f"gitdeploy-imagestream-{stream}"


def _missing_account(what: str, pod: PodSpec, detail: str) -> PermanentError:
    """A pod refused by ServiceAccount admission: the account it runs as is not in its namespace."""
    account = str(pod.spec().get("serviceAccountName") or "default")
    ns = pod.namespace
    if pod.role == DEPLOYER_ROLE:
        fix = (
            f"the Custom strategy's deployer pod runs as the ServiceAccount {account!r} of the app's "
            "namespace: create it and its Role with "
            f"`sed 's/namespace: apps$/namespace: {ns}/' deploy/deployer.yaml | kubectl apply -f -`"
        )
    else:
        fix = (
            f"the pod template's serviceAccountName names it: create it "
            f"(`kubectl -n {ns} create serviceaccount {account}`) or change the template and commit it"
        )
    return PermanentError(
        f"{what}: the ServiceAccount {ns}/{account} it runs as does not exist "
        f"(refused by ServiceAccount admission); {fix}",
        hint=f"gitdeploy creates the pod again once the account exists ({detail})",
    )


_MISSING_ROLE = re.compile(r'RBAC: (cluster)?role\.rbac\.authorization\.k8s\.io "([^"]+)" not found')
"""What RBAC adds to a 403 when a binding names a Role (or ClusterRole) it cannot find."""


def _missing_role(what: str, found: re.Match[str], detail: str) -> TransientError:
    """A 403 because a binding for gitdeploy names a role that does not exist (yet): the Role of
    deploy/rbac.yaml not applied with its binding, or an API server still filling its RBAC cache
    after a start. Both pass without a change to gitdeploy, so it is retried."""
    kind = "ClusterRole" if found[1] else "Role"
    return TransientError(
        f"{what}: refused (403): a binding for gitdeploy's account names the {kind} "
        f'"{found[2]}", which the API server cannot find ({detail})',
        hint=f"apply the {kind} with its binding (for the namespaced Role: sed 's/namespace: apps$/"
        "namespace: NS/' deploy/rbac.yaml | kubectl apply -f -); right after an API server starts "
        "this passes by itself; gitdeploy retries",
        retry_after=2.0,
    )


def _api_error(bad: ApiException, what: str, pod: PodSpec | None = None) -> GitdeployError:
    reason = ""
    try:
        body = json.loads(bad.body or "{}")
        reason = str(body.get("reason", ""))
        detail = str(body.get("message", "")) or str(bad.reason)
    except (ValueError, AttributeError):
        detail = str(bad.reason)
    status = int(bad.status or 0)
    if status == 404:
        return NotFoundError(
            f"{what}: not found ({detail})", hint="it may have been deleted; gitdeploy re-reads"
        )
    if status == 409 and reason == "AlreadyExists":
        return AlreadyExistsError(f"{what}: already exists", hint="re-read the cluster and retry")
    if status == 409:
        return ConflictError(
            f"{what}: changed by someone else ({detail})",
            hint="it changed while gitdeploy wrote it; run the command again (the loop retries by itself)",
            retry_after=0.5,
        )
    if status == 403 and pod is not None and "error looking up service account" in detail:
        return _missing_account(what, pod, detail)
    if status == 403 and "violates PodSecurity" in detail:
        return PermanentError(
            f"{what}: refused by Pod Security admission: {detail}",
            hint="the namespace enforces a Pod Security level (label pod-security.kubernetes.io/enforce); "
            "hook and deployer pods take their securityContext from the app's pod template: make the "
            "template comply (for 'restricted': pod securityContext runAsNonRoot: true and seccompProfile "
            "type RuntimeDefault; each container allowPrivilegeEscalation: false and capabilities drop "
            "[ALL]) and commit it; this is not an RBAC problem",
        )
    if status == 403 and (missing := _MISSING_ROLE.search(detail)):
        return _missing_role(what, missing, detail)
    if status == 403:
        return PermanentError(
            f"{what}: gitdeploy's account lacks a permission (403 {detail})",
            hint="bind the Role of deploy/rbac.yaml in every namespace gitdeploy manages "
            "(sed 's/namespace: apps$/namespace: NS/' deploy/rbac.yaml | kubectl apply -f -), "
            "or keep gitdeploy out of that namespace (run --namespace for each one it may manage)",
        )
    if status == 401:
        return PermanentError(
            f"{what}: the cluster refused gitdeploy ({status} {detail})",
            hint="check the credentials of gitdeploy's service account (see deploy/)",
        )
    if status == 410:
        return ExpiredError(
            f"{what}: the resourceVersion is too old ({detail})", hint="list again", retry_after=0.0
        )
    if status == 429 or status >= 500 or status == 0:
        return TransientError(f"{what}: the API server answered {status} {detail}", retry_after=2.0)
    return PermanentError(f"{what}: the API server refused it ({status} {detail})", hint="see the message")


def _discard(response: Any) -> None:
    """Read an answer gitdeploy does not need, so that its connection goes back to the pool
    (an unread ``_preload_content=False`` answer holds it, and the next request opens a new one)."""
    response.read()


def _network_error(bad: Exception, what: str) -> TransientError:
    """A connection problem as a TransientError that says which: a timeout, an answer broken off,
    or no connection at all (urllib3 wraps the cause of a retried one in MaxRetryError)."""
    cause = bad.reason if isinstance(bad, MaxRetryError) and bad.reason is not None else bad
    if isinstance(cause, NewConnectionError):  # refused, no route (a ConnectTimeoutError to urllib3)
        problem = "cannot reach the Kubernetes API"
    elif isinstance(cause, (ReadTimeoutError, ConnectTimeoutError, TimeoutError)):
        problem = "the Kubernetes API did not answer in time"
    elif isinstance(cause, (ProtocolError, json.JSONDecodeError)):
        problem = "the connection to the Kubernetes API broke off mid-answer"
    else:
        problem = "cannot reach the Kubernetes API"
    return TransientError(
        f"{what}: {problem} ({type(cause).__name__})",
        hint="is the cluster up and answering? `gitdeploy cluster status` for the embedded one",
        retry_after=2.0,
    )


@contextmanager
def _translated(what: str, pod: PodSpec | None = None) -> Iterator[None]:
    """API and network errors of the block as ours; ``pod``: the pod the block creates."""
    try:
        yield
    except ApiException as bad:
        raise _api_error(bad, what, pod) from bad
    except (HTTPError, OSError, json.JSONDecodeError) as bad:
        raise _network_error(bad, what) from bad


def _timestamp(value: str | None) -> float:
    if not value:
        return 0.0
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _int_annotation(annotations: Mapping[str, str], key: str) -> int | None:
    try:
        return int(annotations[key])
    except (KeyError, ValueError):
        return None


def _labels(raw: Mapping[str, Any]) -> Mapping[str, str]:
    labels: Mapping[str, str] = (raw.get("metadata") or {}).get("labels") or {}
    return labels


def to_observed_replica_set(raw: Mapping[str, Any]) -> ObservedReplicaSet:
    """A managed ReplicaSet as JSON (from a list) → what the planner reads. Its template stays
    parsed JSON until someone reads it (see :class:`~gitdeploy.core.observed.ListedTemplate`)."""
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    labels = _labels(raw)
    annotations = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
    failure = None
    for condition in status.get("conditions") or []:
        if condition.get("type") == "ReplicaFailure" and condition.get("status") == "True":
            failure = ReplicaSetFailure(
                str(condition.get("reason", "")),
                str(condition.get("message", "")),
                _timestamp(condition.get("lastTransitionTime")),
            )
    template = spec.get("template")
    state = ReplicaSetState(
        name=str(meta["name"]),
        template_hash=str(labels.get(TEMPLATE_HASH_LABEL, "")),
        revision=_int_annotation(annotations, REVISION_ANNOTATION) or 0,
        created_at=_timestamp(meta.get("creationTimestamp")),
        replicas=int(spec.get("replicas", 0) or 0),
        current=int(status.get("replicas", 0) or 0),
        ready=int(status.get("readyReplicas", 0) or 0),
        available=int(status.get("availableReplicas", 0) or 0),
        desired_replicas_annotation=_int_annotation(annotations, DESIRED_REPLICAS_ANNOTATION),
        max_replicas_annotation=_int_annotation(annotations, MAX_REPLICAS_ANNOTATION),
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
            finished.append(_timestamp(terminated.get("finishedAt")))
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
        phase=str(status.get("phase", "Pending")),
        revision=_int_annotation(annotations, REVISION_ANNOTATION) or 0,
        attempt=_int_annotation(annotations, ATTEMPT_ANNOTATION) or 1,
        created_at=_timestamp(meta.get("creationTimestamp")),
        first_attempt_at=parse_timestamp(first_attempt),
        finished_at=max(finished) if finished else None,
        exit_code=exit_code,
        reason=reason,
        deleting=meta.get("deletionTimestamp") is not None,
    )


def _event_order(event: Mapping[str, Any]) -> tuple[float, int]:
    """Oldest first: by timestamp, then by resourceVersion (names are random, so lists are not ordered)."""
    meta = event.get("metadata") or {}
    version = str(meta.get("resourceVersion", ""))
    stamp = event.get("lastTimestamp") or event.get("eventTime") or meta.get("creationTimestamp")
    return _timestamp(stamp), int(version) if version.isdigit() else 0


def _record(raw: Mapping[str, Any], label: str = APP_LABEL, key: str = RECORD_KEY) -> StoredRecord:
    """A stored JSON ConfigMap: an app record, or (``label``/``key`` of streams) an image stream state."""
    meta = raw.get("metadata") or {}
    return StoredRecord(
        namespace=str(meta.get("namespace", "")),
        app=str((meta.get("labels") or {}).get(label, "")),
        payload=str((raw.get("data") or {}).get(key, "{}")),
        resource_version=str(meta.get("resourceVersion", "")),
        uid=str(meta.get("uid", "")),
    )


class Cluster:
    """gitdeploy's verbs on one cluster: snapshot, create/scale/annotate/delete, pods, events, records."""

    def __init__(
        self,
        api: client.ApiClient,
        description: str = "",
        *,
        request_timeout: tuple[float, float] = REQUEST_TIMEOUT,
    ) -> None:
        self.api = api
        self.description = description
        self.timeout = request_timeout
        """``(connect, read)`` seconds of every call (:data:`REQUEST_TIMEOUT`)."""
        # Typed as Any on purpose: gitdeploy calls the API with _preload_content=False and reads
        # raw JSON, which the client's model-typed signatures do not describe.
        self.core: Any = client.CoreV1Api(api)
        self.apps: Any = client.AppsV1Api(api)

    def _watch_timeout(self, timeout_seconds: int) -> tuple[float, float]:
        """A watch's client timeout: the server ends it after ``timeout_seconds``; a read that
        waits longer than that plus the read timeout means the connection stalled."""
        connect, read = self.timeout
        return connect, timeout_seconds + read

    # -- reading -----------------------------------------------------------------------------------

    def _list_json(self, call: Callable[..., Any], what: str, **kwargs: Any) -> list[dict[str, Any]]:
        return self._list_json_at(call, what, **kwargs)[0]

    def _list_json_at(
        self, call: Callable[..., Any], what: str, **kwargs: Any
    ) -> tuple[list[dict[str, Any]], str]:
        """The items of a list (every page) and the list's own ``metadata.resourceVersion``: the
        version a watch of the same objects starts from (an item's may be far older)."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        version = ""
        with _translated(what):
            while True:
                extra = {"_continue": token} if token else {}
                response = call(
                    _preload_content=False, _request_timeout=self.timeout, limit=5000, **kwargs, **extra
                )
                body = json.loads(response.data)
                items.extend(body.get("items") or [])
                metadata = body.get("metadata") or {}
                version = version or str(metadata.get("resourceVersion") or "")
                token = metadata.get("continue")
                if not token:
                    return items, version

    def _list_selected(
        self,
        everywhere: Callable[..., Any],
        in_namespace: Callable[..., Any],
        what: str,
        namespace: str | None,
        selector: str,
    ) -> list[dict[str, Any]]:
        if namespace is None:
            return self._list_json(everywhere, what, label_selector=selector)
        return self._list_json(
            in_namespace, f"{what} in {namespace}", namespace=namespace, label_selector=selector
        )

    def list_replica_sets(
        self, namespace: str | None = None, app: str | None = None, *, of_apps: Container[str] | None = None
    ) -> list[ObservedReplicaSet]:
        """Every ReplicaSet gitdeploy manages, in one namespace (or all), in one list call; of one
        ``app``, or (read from the whole list) only those of ``of_apps``."""
        selector = MANAGED_SELECTOR + (f",{APP_LABEL}={app}" if app else "")
        raw = self._list_selected(
            self.apps.list_replica_set_for_all_namespaces,
            self.apps.list_namespaced_replica_set,
            "list ReplicaSets",
            namespace,
            selector,
        )
        if of_apps is not None:
            raw = [item for item in raw if _labels(item).get(APP_LABEL) in of_apps]
        return [to_observed_replica_set(item) for item in raw]

    def list_replica_sets_at(self, namespace: str) -> tuple[list[ObservedReplicaSet], str]:
        """The ReplicaSets gitdeploy manages in ``namespace`` and the list's resourceVersion, in
        one list call: where :meth:`watch_replica_sets` goes on from."""
        raw, version = self._list_json_at(
            self.apps.list_namespaced_replica_set,
            f"list ReplicaSets in {namespace}",
            namespace=namespace,
            label_selector=MANAGED_SELECTOR,
        )
        return [to_observed_replica_set(item) for item in raw], version

    def list_app_records(self, namespace: str | None = None, app: str | None = None) -> list[StoredRecord]:
        """Every app record (or ``app``'s), in one namespace (or all), in one list call."""
        raw = self._list_selected(
            self.core.list_config_map_for_all_namespaces,
            self.core.list_namespaced_config_map,
            "list app records",
            namespace,
            f"{RECORD_LABEL}=true" + (f",{APP_LABEL}={app}" if app else ""),
        )
        return [_record(item) for item in raw]

    def list_app_records_at(self, namespace: str) -> tuple[list[StoredRecord], str]:
        """The app records in ``namespace`` and the list's resourceVersion, in one list call:
        where :meth:`watch_app_records` goes on from."""
        raw, version = self._list_json_at(
            self.core.list_namespaced_config_map,
            f"list app records in {namespace}",
            namespace=namespace,
            label_selector=f"{RECORD_LABEL}=true",
        )
        return [_record(item) for item in raw], version

    def watch_app_records(
        self, namespace: str | None = None, resource_version: str = "", timeout_seconds: int = 300
    ) -> Iterator[tuple[str, StoredRecord]]:
        """``(event type, record)`` for every change of an app record, until the server ends the
        watch (after ``timeout_seconds``). Without ``resource_version`` it starts with every
        record as ``ADDED``. A ``410 Gone`` surfaces as :class:`ExpiredError`: list again
        (:meth:`list_app_records_at`) and watch from the list's resourceVersion."""
        selector = f"{RECORD_LABEL}=true"
        kwargs: dict[str, Any] = {
            "label_selector": selector,
            "timeout_seconds": timeout_seconds,
            "_request_timeout": self._watch_timeout(timeout_seconds),
        }
        if resource_version:
            kwargs["resource_version"] = resource_version
        if namespace is not None:
            call, kwargs["namespace"] = self.core.list_namespaced_config_map, namespace
        else:
            call = self.core.list_config_map_for_all_namespaces
        for kind, raw in self._watch_json(call, "watch of app records", **kwargs):
            yield kind, _record(raw)

    def _watch_json(self, call: Callable[..., Any], what: str, **kwargs: Any) -> Iterator[tuple[str, Any]]:
        """``(event type, object as plain JSON)`` of one watch request, read without the client's
        models, until the server ends it; an ``ERROR`` event (``410 Gone``) is a TransientError."""
        with _translated(what):
            response = call(watch=True, _preload_content=False, **kwargs)
            try:
                for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                    event = json.loads(line) if line.strip() else {}
                    raw = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        error = ExpiredError if raw.get("code") == 410 else TransientError
                        raise error(f"the {what} ended: {raw.get('message', raw)}")
                    if raw:
                        yield str(event.get("type")), raw
            finally:
                response.release_conn()

    # -- watching ReplicaSets (WAVES: wakes rollouts waiting for pods; see controller/watcher.py) --

    def watch_replica_sets(
        self, namespace: str, timeout_seconds: int = 300, resource_version: str = ""
    ) -> Iterator[tuple[str, ObservedReplicaSet]]:
        """``(event type, ReplicaSet)`` for every change of a ReplicaSet gitdeploy manages in
        ``namespace`` after ``resource_version`` (from :meth:`list_replica_sets_at`; without it,
        from now on: never a dump of every ReplicaSet), until the server ends the watch. A
        ``410 Gone`` surfaces as :class:`ExpiredError`."""
        what = f"watch of ReplicaSets in {namespace}"
        version = resource_version
        if not version:
            with _translated(what):
                listed = self.apps.list_namespaced_replica_set(
                    namespace,
                    label_selector=MANAGED_SELECTOR,
                    limit=1,
                    _preload_content=False,
                    _request_timeout=self.timeout,
                )
                version = str(json.loads(listed.data)["metadata"]["resourceVersion"])
        for kind, raw in self._watch_json(
            self.apps.list_namespaced_replica_set,
            what,
            namespace=namespace,
            label_selector=MANAGED_SELECTOR,
            resource_version=version,
            timeout_seconds=timeout_seconds,
            _request_timeout=self._watch_timeout(timeout_seconds),
        ):
            yield kind, to_observed_replica_set(raw)

    def read_app_record(self, namespace: str, app: str) -> StoredRecord | None:
        raw = self._read_config_map(namespace, record_name(app), f"read the record of {namespace}/{app}")
        return _record(raw) if raw is not None else None

    def _read_config_map(self, namespace: str, name: str, what: str) -> dict[str, Any] | None:
        try:
            with _translated(what):
                response = self.core.read_namespaced_config_map(
                    name, namespace, _preload_content=False, _request_timeout=self.timeout
                )
                loaded: dict[str, Any] = json.loads(response.data)
        except NotFoundError:
            return None
        return loaded

    # -- writing -----------------------------------------------------------------------------------

    def delete_app_record(self, namespace: str, app: str) -> None:
        """Delete the record (it owns nothing: prune deletes the app's ReplicaSets first)."""
        try:
            with _translated(f"delete the record of {namespace}/{app}"):
                _discard(
                    self.core.delete_namespaced_config_map(
                        record_name(app),
                        namespace,
                        propagation_policy="Background",
                        _preload_content=False,
                        _request_timeout=self.timeout,
                    )
                )
        except NotFoundError:
            pass

    def ensure_namespace(self, namespace: str) -> None:
        try:
            with _translated(f"create namespace {namespace}"):
                body = {"metadata": {"name": namespace}}
                _discard(
                    self.core.create_namespace(body, _preload_content=False, _request_timeout=self.timeout)
                )
        except AlreadyExistsError:
            pass

    def write_app_record(
        self, namespace: str, app: str, payload: str, resource_version: str | None
    ) -> StoredRecord:
        """Create the record (``resource_version`` None) or replace it; a stale version → ConflictError."""
        labels = {RECORD_LABEL: "true", APP_LABEL: app, MANAGED_BY_LABEL: MANAGED_BY_VALUE}
        what = f"write the record of {namespace}/{app}"
        raw = self._write_config_map(
            namespace, record_name(app), labels, {RECORD_KEY: payload}, resource_version, what
        )
        return _record(raw)

    def _write_config_map(
        self,
        namespace: str,
        name: str,
        labels: Mapping[str, str],
        data: Mapping[str, str],
        resource_version: str | None,
        what: str,
    ) -> dict[str, Any]:
        """Create (``resource_version`` None) or replace a ConfigMap; a stale version → ConflictError."""
        meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels)}
        body: dict[str, Any] = {"metadata": meta, "data": dict(data)}
        with _translated(what):
            if resource_version is None:
                response = self.core.create_namespaced_config_map(
                    namespace, body, _preload_content=False, _request_timeout=self.timeout
                )
            else:
                meta["resourceVersion"] = resource_version
                response = self.core.replace_namespaced_config_map(
                    name, namespace, body, _preload_content=False, _request_timeout=self.timeout
                )
            written: dict[str, Any] = json.loads(response.data)
        return written

    # -- image stream state (gitdeploy.images keeps the payload's format) -------------------------

    def list_stream_states(self, namespace: str | None = None) -> list[StoredRecord]:
        """Every image stream state, in one namespace (or all), in one list call (``app`` is the stream)."""
        raw = self._list_selected(
            self.core.list_config_map_for_all_namespaces,
            self.core.list_namespaced_config_map,
            "list image stream states",
            namespace,
            IMAGESTREAM_LABEL,
        )
        return [_record(item, IMAGESTREAM_LABEL, STREAM_STATE_KEY) for item in raw]

    def list_stream_states_at(self, namespace: str) -> tuple[list[StoredRecord], str]:
        """The image stream states in ``namespace`` and the list's resourceVersion, in one list
        call: where :meth:`watch_stream_states` goes on from."""
        raw, version = self._list_json_at(
            self.core.list_namespaced_config_map,
            f"list image stream states in {namespace}",
            namespace=namespace,
            label_selector=IMAGESTREAM_LABEL,
        )
        return [_record(item, IMAGESTREAM_LABEL, STREAM_STATE_KEY) for item in raw], version

    def watch_stream_states(
        self, namespace: str, resource_version: str, timeout_seconds: int = 300
    ) -> Iterator[tuple[str, StoredRecord]]:
        """``(event type, stream state)`` for every change of an image stream state in ``namespace``
        after ``resource_version`` (from :meth:`list_stream_states_at`), until the server ends the
        watch; a ``410 Gone`` is an :class:`ExpiredError` (list again)."""
        for kind, raw in self._watch_json(
            self.core.list_namespaced_config_map,
            f"watch of image stream states in {namespace}",
            namespace=namespace,
            label_selector=IMAGESTREAM_LABEL,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            _request_timeout=self._watch_timeout(timeout_seconds),
        ):
            yield kind, _record(raw, IMAGESTREAM_LABEL, STREAM_STATE_KEY)

    def read_stream_state(self, namespace: str, stream: str) -> StoredRecord | None:
        what = f"read the state of image stream {namespace}/{stream}"
        raw = self._read_config_map(namespace, stream_state_name(stream), what)
        return _record(raw, IMAGESTREAM_LABEL, STREAM_STATE_KEY) if raw is not None else None

    def write_stream_state(
        self, namespace: str, stream: str, payload: str, resource_version: str | None
    ) -> StoredRecord:
        """Create (``resource_version`` None) or replace a stream's state; a stale version → ConflictError."""
        labels = {IMAGESTREAM_LABEL: stream, MANAGED_BY_LABEL: MANAGED_BY_VALUE}
        what = f"write the state of image stream {namespace}/{stream}"
        name = stream_state_name(stream)
        data = {STREAM_STATE_KEY: payload}
        try:
            raw = self._write_config_map(namespace, name, labels, data, resource_version, what)
        except NotFoundError:
            if resource_version is not None:
                raise
            self.ensure_namespace(namespace)
            raw = self._write_config_map(namespace, name, labels, data, resource_version, what)
        return _record(raw, IMAGESTREAM_LABEL, STREAM_STATE_KEY)

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
        with _translated(f"create ReplicaSet {spec.namespace}/{spec.name}"):
            response = self.apps.create_namespaced_replica_set(
                spec.namespace, body, _preload_content=False, _request_timeout=self.timeout
            )
            created = json.loads(response.data)
        return to_observed_replica_set(created)

    def scale_replica_set(
        self, namespace: str, name: str, replicas: int | None, annotations: Mapping[str, str] | None = None
    ) -> ObservedReplicaSet:
        """Set ``spec.replicas`` and/or annotations in one merge patch (one API write)."""
        patch: dict[str, Any] = {}
        if replicas is not None:
            patch["spec"] = {"replicas": replicas}
        if annotations:
            patch["metadata"] = {"annotations": dict(annotations)}
        with _translated(f"scale ReplicaSet {namespace}/{name}"):
            response = self.apps.patch_namespaced_replica_set(
                name,
                namespace,
                patch,
                _preload_content=False,
                _content_type="application/merge-patch+json",
                _request_timeout=self.timeout,
            )
            patched = json.loads(response.data)
        return to_observed_replica_set(patched)

    def restore_replica_set_template(
        self, namespace: str, name: str, app: str, template_hash: str, template: PodTemplate
    ) -> ObservedReplicaSet:
        """Write ``template`` back as the ReplicaSet's whole pod template (as :meth:`create_replica_set`
        writes it), replacing a hand-edited one; the answer is the ReplicaSet as stored."""
        written = _written_template(template, template_hash, app)
        patch = [{"op": "replace", "path": "/spec/template", "value": written}]
        with _translated(f"restore the pod template of ReplicaSet {namespace}/{name}"):
            response = self.apps.patch_namespaced_replica_set(
                name,
                namespace,
                patch,
                _preload_content=False,
                _content_type="application/json-patch+json",
                _request_timeout=self.timeout,
            )
            return to_observed_replica_set(json.loads(response.data))

    def annotate_replica_set(
        self, namespace: str, name: str, annotations: Mapping[str, str | None]
    ) -> ObservedReplicaSet:
        """Set (or, for None, remove) annotations of a ReplicaSet in one merge patch."""
        patch = {"metadata": {"annotations": dict(annotations)}}
        with _translated(f"annotate ReplicaSet {namespace}/{name}"):
            response = self.apps.patch_namespaced_replica_set(
                name,
                namespace,
                patch,
                _preload_content=False,
                _content_type="application/merge-patch+json",
                _request_timeout=self.timeout,
            )
            return to_observed_replica_set(json.loads(response.data))

    def list_replica_set_pods(self, namespace: str, app: str, template_hash: str) -> list[TemplatePod]:
        """The pods of an app's ReplicaSet (by its template hash), as made from a template."""
        selector = f"{APP_LABEL}={app},{TEMPLATE_HASH_LABEL}={template_hash}"
        found = self._list_json(
            self.core.list_namespaced_pod, f"list pods of {namespace}/{app}", namespace=namespace,
            label_selector=selector,
        )  # fmt: skip
        return [_template_pod(raw) for raw in found]

    # -- hook and deployer pods ----------------------------------------------------------------------

    def list_app_pods(self, namespace: str | None = None, app: str | None = None) -> list[ObservedPod]:
        """The hook and deployer pods gitdeploy made (never the app's own pods), in one list call."""
        selector = POD_ROLE_LABEL + (f",{APP_LABEL}={app}" if app else "")
        raw = self._list_selected(
            self.core.list_pod_for_all_namespaces,
            self.core.list_namespaced_pod,
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
        raw = self._list_json(
            self.core.list_namespaced_pod,
            f"list pods in {namespace}",
            namespace=namespace,
            label_selector=selector,
        )
        hook_pods: list[ObservedPod] = []
        counts: dict[str, Counter[str]] = {}
        for item in raw:
            if POD_ROLE_LABEL in _labels(item):
                hook_pods.append(to_observed_pod(item))
                continue
            if (item.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            owners = (item.get("metadata") or {}).get("ownerReferences") or []
            owner = next((r for r in owners if r.get("controller") and r.get("kind") == "ReplicaSet"), None)
            if owner is not None:
                counts.setdefault(_labels(item).get(APP_LABEL, ""), Counter())[str(owner.get("name"))] += 1
        return hook_pods, {name: PodCensus(tuple(sorted(found.items()))) for name, found in counts.items()}

    def create_pod(self, spec: PodSpec) -> ObservedPod:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": spec.name,
                "namespace": spec.namespace,
                "labels": {
                    APP_LABEL: spec.app,
                    POD_ROLE_LABEL: spec.role,
                    MANAGED_BY_LABEL: MANAGED_BY_VALUE,
                },
                "annotations": {
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
        with _translated(f"create pod {spec.namespace}/{spec.name} (app {spec.app})", spec):
            response = self.core.create_namespaced_pod(
                spec.namespace, body, _preload_content=False, _request_timeout=self.timeout
            )
            created = json.loads(response.data)
        return to_observed_pod(created)

    def delete_pod(self, namespace: str, name: str) -> None:
        try:
            with _translated(f"delete pod {namespace}/{name}"):
                _discard(
                    self.core.delete_namespaced_pod(
                        name, namespace, _preload_content=False, _request_timeout=self.timeout
                    )
                )
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
            with _translated(f"read the log of pod {namespace}/{name}"):
                response = self.core.read_namespaced_pod_log(
                    name,
                    namespace,
                    tail_lines=tail_lines,
                    _preload_content=False,
                    _request_timeout=self.timeout,
                )
                try:
                    window = bytearray()
                    for chunk in response.stream(LOG_WINDOW_BYTES):
                        window += chunk
                        del window[: max(len(window) - LOG_WINDOW_BYTES, 0)]
                finally:
                    response.release_conn()
        except (NotFoundError, PermanentError):
            return ""
        except GitdeployError as unavailable:
            return f"(the log could not be read: {unavailable.message})\n"
        return log_tail(bytes(window), LOG_WINDOW_BYTES)

    def release_replica_set(self, namespace: str, name: str) -> None:
        """Release a ReplicaSet made the old way (see ``ObservedReplicaSet.owned_the_old_way``) in
        one write, at the version read (a ConflictError if it changed meanwhile: the next pass)."""
        what = f"release ReplicaSet {namespace}/{name} from the app record"
        try:
            with _translated(what):
                response = self.apps.read_namespaced_replica_set(
                    name, namespace, _preload_content=False, _request_timeout=self.timeout
                )
            patch = _old_ownership(json.loads(response.data))
            if patch:
                with _translated(what):
                    _discard(
                        self.apps.patch_namespaced_replica_set(
                            name,
                            namespace,
                            patch,
                            _preload_content=False,
                            _content_type="application/merge-patch+json",
                            _request_timeout=self.timeout,
                        )
                    )
        except NotFoundError:
            pass

    def delete_replica_set(self, namespace: str, name: str) -> None:
        try:
            with _translated(f"delete ReplicaSet {namespace}/{name}"):
                _discard(
                    self.apps.delete_namespaced_replica_set(
                        name,
                        namespace,
                        propagation_policy="Background",
                        _preload_content=False,
                        _request_timeout=self.timeout,
                    )
                )
        except NotFoundError:
            pass

    def record_event(
        self,
        namespace: str,
        involved: tuple[str, str, str],
        reason: str,
        message: str,
        *,
        warning: bool = False,
        now: float,
    ) -> None:
        """A core/v1 Event on (kind, name, uid), as ``kubectl describe`` and ``get events`` show."""
        kind, name, uid = involved
        stamp = datetime.fromtimestamp(now).astimezone().isoformat(timespec="seconds")
        body = {
            "metadata": {"generateName": f"{name}.", "namespace": namespace},
            "involvedObject": {"kind": kind, "name": name, "namespace": namespace, "uid": uid},
            "reason": reason,
            "message": message,
            "type": "Warning" if warning else "Normal",
            "source": {"component": "gitdeploy"},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        with _translated(f"record event {reason} on {namespace}/{name}"):
            _discard(
                self.core.create_namespaced_event(
                    namespace, body, _preload_content=False, _request_timeout=self.timeout
                )
            )

    def list_events(self, namespace: str, name: str | None = None) -> list[dict[str, Any]]:
        """Events in ``namespace``, about the object ``name`` when given (oldest first)."""
        events = self._list_json(
            self.core.list_namespaced_event, f"list events in {namespace}", namespace=namespace
        )
        if name is not None:
            events = [e for e in events if (e.get("involvedObject") or {}).get("name") == name]
        return sorted(events, key=_event_order)

    # -- leases (leader election) --------------------------------------------------------------------

    def _leases(self) -> Any:
        return client.CoordinationV1Api(self.api)

    def read_lease(self, namespace: str, name: str, timeout: float | None = None) -> ObservedLease | None:
        """The Lease ``namespace/name``, or None when there is none yet (``timeout``: the whole
        request, s; else the usual connect and read timeouts)."""
        try:
            with _translated(f"read Lease {namespace}/{name}"):
                response = self._leases().read_namespaced_lease(
                    name, namespace, _preload_content=False, _request_timeout=timeout or self.timeout
                )
                raw = json.loads(response.data)
        except NotFoundError:
            return None
        return _to_observed_lease(raw)

    def write_lease(
        self,
        namespace: str,
        name: str,
        spec: LeaseSpec,
        resource_version: str | None,
        timeout: float | None = None,
    ) -> ObservedLease:
        """Create the Lease (``resource_version`` None) or replace it.

        Optimistic concurrency: a stale ``resource_version`` raises ConflictError, and creating a Lease
        someone else created first raises AlreadyExistsError; either way the other writer won.
        """
        body: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace},
            "spec": _lease_spec_body(spec),
        }
        leases = self._leases()
        limit = timeout or self.timeout
        with _translated(f"write Lease {namespace}/{name}"):
            if resource_version is None:
                response = leases.create_namespaced_lease(
                    namespace, body, _preload_content=False, _request_timeout=limit
                )
            else:
                body["metadata"]["resourceVersion"] = resource_version
                response = leases.replace_namespaced_lease(
                    name, namespace, body, _preload_content=False, _request_timeout=limit
                )
            raw = json.loads(response.data)
        return _to_observed_lease(raw)


def _lease_spec_body(spec: LeaseSpec) -> dict[str, Any]:
    body: dict[str, Any] = {
        "holderIdentity": spec.holder,
        "leaseDurationSeconds": spec.duration_seconds,
        "leaseTransitions": spec.transitions,
    }
    if spec.acquire_time is not None:
        body["acquireTime"] = format_micro_time(spec.acquire_time)
    if spec.renew_time is not None:
        body["renewTime"] = format_micro_time(spec.renew_time)
    return body


def _to_observed_lease(raw: Mapping[str, Any]) -> ObservedLease:
    spec = raw.get("spec") or {}
    return ObservedLease(
        LeaseSpec(
            holder=str(spec.get("holderIdentity") or ""),
            duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=parse_timestamp(spec.get("acquireTime")),
            renew_time=parse_timestamp(spec.get("renewTime")),
            transitions=int(spec.get("leaseTransitions") or 0),
        ),
        resource_version=str((raw.get("metadata") or {}).get("resourceVersion", "")),
    )
