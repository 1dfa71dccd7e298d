"""Lifecycle hooks and the custom deployer: the pods gitdeploy runs, and what their outcome means.

A hook (``execNewPod``) runs in a pod named ``<replicaset>-hook-<pre|mid|post>`` built from the named
container of the pod template: its image, its environment merged with the hook's (the hook wins), the
volumes the hook lists (with the container's mounts of them), the hook's command, and the strategy
``resources``; it runs as the app's pods do (the template's ``serviceAccountName``). The Custom
strategy's deployer pod ``<replicaset>-deploy`` runs ``customParams`` with the name and namespace of
the new ReplicaSet in its environment, as the ServiceAccount ``deployer`` of the app's namespace.
Both never restart (``restartPolicy: Never``), are owned by the new ReplicaSet (deleted with it) and
are labelled ``gitdeploy.io/pod-role``.

Neither may hang forever or outlive its rollout. Each gets ``activeDeadlineSeconds``, so the
kubelet stops it even while gitdeploy is down: a hook pod its deadline (the app's progress
deadline: ``progressDeadlineSeconds``, a DeploymentConfig's strategy ``timeoutSeconds``), a
deployer pod the strategy's ``activeDeadlineSeconds`` (OpenShift's 6 hours by default; a deployer
that stops making progress fails the rollout at the progress deadline before). And
:func:`lingering_pods` names the pods still running whose rollout failed, completed or was
cancelled: the planner deletes them.

Both are built to pass Pod Security "restricted" whatever the namespace: the pod takes the template's
``securityContext`` with ``seccompProfile: RuntimeDefault`` added when it names none, and the
container takes the ``securityContext`` of the container it runs as (a hook) or the template's
``runAsNonRoot`` (the deployer), with ``allowPrivilegeEscalation: false`` and ``capabilities: {drop:
[ALL]}`` added when they are not set (see :func:`restricted_pod_security` and
:func:`restricted_container_security`). ``runAsNonRoot`` is never invented: an image that runs as
root would then not start, and a template that runs as root cannot pass "restricted" anyway.

:func:`evaluate_hook` turns the observed hook pod into a verdict, applying the failure policy:
Abort fails the rollout, Retry re-runs the hook with exponential backoff until the deadline, Ignore
goes on; a post hook's failure is always ignored (OpenShift's rule).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gitdeploy.core.models import CustomParams, FailurePolicy, Hook, HookPhase, PodTemplate
from gitdeploy.core.observed import ObservedPod, PodPhase, PodSpec

DEPLOYER_ROLE = "deployer"
DEPLOYER_SERVICE_ACCOUNT = "deployer"
"""The ServiceAccount of the app's namespace that the Custom strategy's deployer pod runs as (as on
OpenShift): deploy/deployer.yaml creates it with the Role a deployer needs (scale the app's
ReplicaSets, read pods). Hook pods run as the app's pods do (the template's ``serviceAccountName``)."""
DEPLOYER_ACTIVE_DEADLINE_SECONDS = 21600
"""OpenShift's default ``strategy.activeDeadlineSeconds``: how long a deployer pod may run."""
RETRY_BASE_SECONDS = 5.0
RETRY_MAX_SECONDS = 60.0
_POD_LEVEL_FIELDS = (
    "serviceAccountName",
    "imagePullSecrets",
    "securityContext",
    "nodeSelector",
    "tolerations",
)


def hook_role(phase: HookPhase) -> str:
    return f"hook-{phase}"


def runs_the_rollout(pod: ObservedPod) -> bool:
    """A hook or deployer pod (one of the rollout's own steps), not an analysis pod (a job
    metric's measurement) that shares its ReplicaSet's name prefix.

    >>> roles = ("hook-pre", "deployer", "analysis")
    >>> [runs_the_rollout(ObservedPod("ns", f"web-a-{r}", r, "Running", 2)) for r in roles]
    [True, True, False]
    """
    return pod.role.startswith("hook-") or pod.role == DEPLOYER_ROLE


def hook_pod_name(replica_set: str, phase: HookPhase) -> str:
    """``web-abc-hook-pre``."""
    return f"{replica_set}-hook-{phase}"


def deployer_pod_name(replica_set: str) -> str:
    return f"{replica_set}-deploy"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _merge_env(base: list[dict[str, Any]], extra: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``base`` with ``extra`` applied: same name → replaced in place, new names appended."""
    merged = {str(e.get("name")): e for e in base}
    merged.update({str(e["name"]): e for e in extra})
    return list(merged.values())


def _pod_level(template: dict[str, Any]) -> dict[str, Any]:
    spec = template.get("spec") or {}
    fields = {key: spec[key] for key in _POD_LEVEL_FIELDS if key in spec}
    fields["securityContext"] = restricted_pod_security(spec.get("securityContext"))
    return fields


def restricted_pod_security(template: dict[str, Any] | None) -> dict[str, Any]:
    """The pod ``securityContext`` of a hook or deployer pod: the template's, with the seccomp
    profile Pod Security "restricted" asks for when the template names none.

    >>> restricted_pod_security(None)
    {'seccompProfile': {'type': 'RuntimeDefault'}}
    >>> restricted_pod_security({"runAsUser": 1000, "seccompProfile": {"type": "Localhost"}})
    {'runAsUser': 1000, 'seccompProfile': {'type': 'Localhost'}}
    """
    context = dict(template or {})
    context.setdefault("seccompProfile", {"type": "RuntimeDefault"})
    return context


def restricted_container_security(source: dict[str, Any] | None) -> dict[str, Any]:
    """A hook or deployer container's ``securityContext``: ``source`` (the template container's,
    which the template may set to anything), with what Pod Security "restricted" asks of a
    container added where ``source`` says nothing. A privileged container, or one that adds
    ``SYS_ADMIN``, may escalate: the API refuses ``allowPrivilegeEscalation: false`` there.

    >>> restricted_container_security(None)
    {'allowPrivilegeEscalation': False, 'capabilities': {'drop': ['ALL']}}
    >>> restricted_container_security({"capabilities": {"add": ["NET_ADMIN"]}, "runAsNonRoot": True})
    {'capabilities': {'add': ['NET_ADMIN']}, 'runAsNonRoot': True, 'allowPrivilegeEscalation': False}
    >>> restricted_container_security({"privileged": True})
    {'privileged': True, 'capabilities': {'drop': ['ALL']}}
    """
    context = dict(source or {})
    added = (context.get("capabilities") or {}).get("add") or []
    if not context.get("privileged") and not {"SYS_ADMIN", "CAP_SYS_ADMIN"} & set(added):
        context.setdefault("allowPrivilegeEscalation", False)
    context.setdefault("capabilities", {"drop": ["ALL"]})
    return context


def _runs_as_non_root(spec: dict[str, Any]) -> dict[str, Any]:
    """``runAsNonRoot: true`` when every container of the template sets it itself (the pod
    level, copied, says nothing then): the deployer runs as the app does."""
    containers = spec.get("containers") or []
    if containers and all((c.get("securityContext") or {}).get("runAsNonRoot") is True for c in containers):
        return {"runAsNonRoot": True}
    return {}


def build_hook_pod(
    *,
    namespace: str,
    app: str,
    replica_set: str,
    owner_uid: str,
    revision: int,
    attempt: int,
    first_attempt_at: float,
    phase: HookPhase,
    hook: Hook,
    template: PodTemplate,
    resources_json: str,
    active_deadline_seconds: int,
) -> PodSpec:
    """The pod of ``hook`` for the rollout to ``replica_set``; the kubelet stops it after
    ``active_deadline_seconds``.

    >>> t = PodTemplate('{"spec":{"containers":[{"name":"api","image":"api:2",'
    ...                 '"env":[{"name":"A","value":"1"}],"volumeMounts":[{"name":"cfg","mountPath":"/c"},'
    ...                 '{"name":"data","mountPath":"/d"}]}],'
    ...                 '"volumes":[{"name":"cfg","configMap":{"name":"c"}},'
    ...                 '{"name":"data","emptyDir":{}}]}}')
    >>> from gitdeploy.core.models import EnvVar
    >>> hook = Hook(FailurePolicy.ABORT, "api", ("/bin/migrate",), (EnvVar("A", "2"),), ("cfg",))
    >>> pod = build_hook_pod(namespace="ns", app="api", replica_set="api-abc", owner_uid="u",
    ...                      revision=3, attempt=1, first_attempt_at=0.0, phase="pre", hook=hook,
    ...                      template=t, resources_json="{}", active_deadline_seconds=600)
    >>> pod.name, pod.spec()["restartPolicy"], pod.spec()["activeDeadlineSeconds"]
    ('api-abc-hook-pre', 'Never', 600)
    >>> c = pod.spec()["containers"][0]
    >>> c["image"], c["command"], c["env"], [m["name"] for m in c["volumeMounts"]]
    ('api:2', ['/bin/migrate'], [{'name': 'A', 'value': '2'}], ['cfg'])
    """
    body = template.to_dict()
    spec = body.get("spec") or {}
    source = next((c for c in spec.get("containers") or [] if c.get("name") == hook.container_name), None)
    if source is None:  # the manifests layer rejects this; kept as a guard for hand-made records
        raise ValueError(f"hook container {hook.container_name!r} is not in the pod template")
    container: dict[str, Any] = {
        "name": "lifecycle",
        "image": source.get("image", ""),
        "securityContext": restricted_container_security(source.get("securityContext")),
    }
    if hook.command:
        container["command"] = list(hook.command)
    else:
        for key in ("command", "args"):
            if key in source:
                container[key] = source[key]
    env = _merge_env(list(source.get("env") or []), [{"name": e.name, "value": e.value} for e in hook.env])
    if env:
        container["env"] = env
    if "envFrom" in source:
        container["envFrom"] = source["envFrom"]
    mounts = [m for m in source.get("volumeMounts") or [] if m.get("name") in hook.volumes]
    if mounts:
        container["volumeMounts"] = mounts
    resources = json.loads(resources_json)
    if resources:
        container["resources"] = resources
    pod_spec: dict[str, Any] = {
        **_pod_level(body),
        "restartPolicy": "Never",
        "activeDeadlineSeconds": active_deadline_seconds,
        "containers": [container],
    }
    volumes = [v for v in spec.get("volumes") or [] if v.get("name") in hook.volumes]
    if volumes:
        pod_spec["volumes"] = volumes
    return PodSpec(
        namespace=namespace,
        name=hook_pod_name(replica_set, phase),
        app=app,
        role=hook_role(phase),
        revision=revision,
        attempt=attempt,
        first_attempt_at=first_attempt_at,
        owner_name=replica_set,
        owner_uid=owner_uid,
        spec_json=_canonical(pod_spec),
    )


def build_deployer_pod(
    *,
    namespace: str,
    app: str,
    replica_set: str,
    owner_uid: str,
    revision: int,
    params: CustomParams,
    template: PodTemplate,
    resources_json: str,
    active_deadline_seconds: int = DEPLOYER_ACTIVE_DEADLINE_SECONDS,
) -> PodSpec:
    """The Custom strategy's deployer pod: it must scale ``replica_set`` up itself, as the
    ServiceAccount ``deployer`` of ``namespace``; the kubelet stops it after ``active_deadline_seconds``.

    >>> t = PodTemplate('{"spec":{"containers":[{"name":"r","image":"r:1"}]}}')
    >>> p = build_deployer_pod(namespace="ns", app="r", replica_set="r-abc", owner_uid="u",
    ...                        revision=2, params=CustomParams("org/deployer:1", ("deploy",)),
    ...                        template=t, resources_json="{}")
    >>> p.spec()["activeDeadlineSeconds"], p.spec()["serviceAccountName"]
    (21600, 'deployer')
    >>> env = p.spec()["containers"][0]["env"]
    >>> [e["name"] + "=" + e["value"] for e in env]  # doctest: +NORMALIZE_WHITESPACE
    ['GITDEPLOY_DEPLOYMENT_NAME=r-abc', 'GITDEPLOY_DEPLOYMENT_NAMESPACE=ns',
     'OPENSHIFT_DEPLOYMENT_NAME=r-abc', 'OPENSHIFT_DEPLOYMENT_NAMESPACE=ns']
    """
    env = [
        {"name": "GITDEPLOY_DEPLOYMENT_NAME", "value": replica_set},
        {"name": "GITDEPLOY_DEPLOYMENT_NAMESPACE", "value": namespace},
        {"name": "OPENSHIFT_DEPLOYMENT_NAME", "value": replica_set},
        {"name": "OPENSHIFT_DEPLOYMENT_NAMESPACE", "value": namespace},
    ]
    env = _merge_env(env, [{"name": e.name, "value": e.value} for e in params.environment])
    spec = template.to_dict().get("spec") or {}
    container: dict[str, Any] = {
        "name": "deployer",
        "image": params.image,
        "env": env,
        "securityContext": restricted_container_security(_runs_as_non_root(spec)),
    }
    if params.command:
        container["command"] = list(params.command)
    resources = json.loads(resources_json)
    if resources:
        container["resources"] = resources
    pod_spec = {
        **_pod_level(template.to_dict()),
        # The deployer scales ReplicaSets through the API: its own account, and its token mounted
        # whatever the template or the account say about automounting.
        "serviceAccountName": DEPLOYER_SERVICE_ACCOUNT,
        "automountServiceAccountToken": True,
        "restartPolicy": "Never",
        "activeDeadlineSeconds": active_deadline_seconds,
        "containers": [container],
    }
    return PodSpec(
        namespace=namespace,
        name=deployer_pod_name(replica_set),
        app=app,
        role=DEPLOYER_ROLE,
        revision=revision,
        attempt=1,
        first_attempt_at=0.0,
        owner_name=replica_set,
        owner_uid=owner_uid,
        spec_json=_canonical(pod_spec),
    )


class HookVerdict(StrEnum):
    START = "Start"
    """No pod for this revision yet: create it."""
    RUNNING = "Running"
    WAIT_RETRY = "WaitRetry"
    """Failed, Retry policy: wait for the backoff, then re-create it."""
    RETRY = "Retry"
    """Failed, Retry policy, backoff over: delete it and create the next attempt."""
    SUCCEEDED = "Succeeded"
    IGNORED = "Ignored"
    """Failed, and the failure is ignored (Ignore policy, or any post hook)."""
    FAILED = "Failed"
    """Failed for good: Abort policy, or Retry until the deadline passed."""

    @property
    def done(self) -> bool:
        return self in (HookVerdict.SUCCEEDED, HookVerdict.IGNORED)


@dataclass(frozen=True)
class HookStatus:
    verdict: HookVerdict
    retry_at: float | None = None
    """For ``WAIT_RETRY``: when the next attempt may start."""


def retry_backoff(attempt: int) -> float:
    """Seconds to wait after failed attempt ``attempt`` (5, 10, 20, 40, then 60 s).

    >>> [retry_backoff(n) for n in (1, 2, 3, 4, 5, 6)]
    [5.0, 10.0, 20.0, 40.0, 60.0, 60.0]
    """
    return float(min(RETRY_BASE_SECONDS * 2 ** (attempt - 1), RETRY_MAX_SECONDS))


def evaluate_hook(
    pod: ObservedPod | None,
    policy: FailurePolicy,
    phase: HookPhase,
    *,
    revision: int,
    deadline: float,
    now: float,
) -> HookStatus:
    """What to do about the hook of ``phase`` this pass, given its pod (``None`` if there is none).

    A pod of an earlier revision (a reused ReplicaSet) does not count: the hook runs again.

    >>> failed = ObservedPod("ns", "web-abc-hook-mid", "hook-mid", "Failed", revision=2, attempt=1,
    ...                      finished_at=100.0)
    >>> evaluate_hook(failed, FailurePolicy.RETRY, "mid", revision=2, deadline=1000.0, now=103.0).verdict
    <HookVerdict.WAIT_RETRY: 'WaitRetry'>
    >>> evaluate_hook(failed, FailurePolicy.RETRY, "mid", revision=2, deadline=1000.0, now=105.0).verdict
    <HookVerdict.RETRY: 'Retry'>
    >>> evaluate_hook(failed, FailurePolicy.RETRY, "mid", revision=2, deadline=104.0, now=105.0).verdict
    <HookVerdict.FAILED: 'Failed'>
    >>> evaluate_hook(failed, FailurePolicy.ABORT, "post", revision=2, deadline=1000.0, now=105.0).verdict
    <HookVerdict.IGNORED: 'Ignored'>
    >>> evaluate_hook(failed, FailurePolicy.ABORT, "mid", revision=3, deadline=1000.0, now=105.0).verdict
    <HookVerdict.START: 'Start'>
    """
    if pod is None or pod.revision != revision:
        return HookStatus(HookVerdict.START)
    if pod.phase == PodPhase.SUCCEEDED:
        return HookStatus(HookVerdict.SUCCEEDED)
    if pod.phase != PodPhase.FAILED:
        # Each attempt may run for the whole deadline; past that it hangs (never scheduled, or never
        # ending) and counts as failed for good.
        first = pod.first_attempt_at if pod.first_attempt_at is not None else pod.created_at
        if now <= deadline + max(pod.created_at - first, 0.0):
            return HookStatus(HookVerdict.RUNNING)
        ignored = phase == HookPhase.POST or policy is FailurePolicy.IGNORE
        return HookStatus(HookVerdict.IGNORED if ignored else HookVerdict.FAILED)
    if phase == HookPhase.POST or policy is FailurePolicy.IGNORE:
        return HookStatus(HookVerdict.IGNORED)
    if policy is FailurePolicy.ABORT:
        return HookStatus(HookVerdict.FAILED)
    retry_at = (pod.finished_at if pod.finished_at is not None else pod.created_at) + retry_backoff(
        pod.attempt
    )
    if retry_at > deadline:
        return HookStatus(HookVerdict.FAILED)
    if now < retry_at:
        return HookStatus(HookVerdict.WAIT_RETRY, retry_at=retry_at)
    return HookStatus(HookVerdict.RETRY)


def lingering_pods(pods: Sequence[ObservedPod], replica_set: str | None, revision: int) -> tuple[str, ...]:
    """The hook and deployer pods still running outside the rollout in progress, to delete.

    ``replica_set`` at ``revision`` is the rollout in progress (None when none is: it completed or
    failed); a running pod of any other ReplicaSet or revision belongs to a rollout that ended or
    was cancelled (superseded). Finished pods stay: they hold the outcome and the log. Pods already
    deleted (Terminating for their grace period) are going: they are not deleted again.

    >>> pre = ObservedPod("ns", "web-b-hook-pre", "hook-pre", "Running", revision=3)
    >>> old = ObservedPod("ns", "web-a-hook-pre", "hook-pre", "Running", revision=2)
    >>> done = ObservedPod("ns", "web-a-hook-mid", "hook-mid", "Failed", revision=2)
    >>> going = ObservedPod("ns", "web-a-hook-post", "hook-post", "Running", revision=2, deleting=True)
    >>> lingering_pods([pre, old, done, going], "web-b", 3)
    ('web-a-hook-pre',)
    >>> lingering_pods([pre, old, done, going], None, 3)
    ('web-b-hook-pre', 'web-a-hook-pre')
    """
    current = f"{replica_set}-" if replica_set is not None else None
    return tuple(
        pod.name
        for pod in pods
        if not pod.terminal
        and not pod.deleting
        and not (current is not None and pod.name.startswith(current) and pod.revision == revision)
    )
