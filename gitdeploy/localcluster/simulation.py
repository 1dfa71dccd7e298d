"""The simulated kubelet and ReplicaSet controller, as pure functions of objects and time.

The registry calls these inside its transactions:

* :func:`initial_pod_status` and :func:`pod_timers` when a pod is created: the pod is Pending and
  transitions are scheduled at clock times (``pod-start``, ``pod-stop`` for run-to-completion
  pods, ``pod-deadline`` for pods with ``activeDeadlineSeconds``);
* :func:`pod_transition` when such a timer is due, giving the pod's next status;
* :func:`plan_replicaset` whenever a ReplicaSet or one of its pods changes: how many pods to
  create, which to delete, the new status, and when availability (``minReadySeconds``) must be
  looked at again;
* :func:`grace_period_seconds` when a running pod is deleted: it gets a ``deletionTimestamp`` and
  stays, Terminating, that long (``pod-gone``), as on a real node. Terminating pods are not
  counted in ``status.replicas`` but in ``status.terminatingReplicas``.
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gitdeploy.localcluster import timefmt
from gitdeploy.localcluster.config import ImageBehaviour, SimulationConfig
from gitdeploy.localcluster.selectors import label_selector_from_object, matches_labels

__all__ = [
    "NODE_NAME",
    "ReplicaSetPlan",
    "custom_deployment_target",
    "grace_period_seconds",
    "initial_pod_status",
    "is_job",
    "is_pod_ready",
    "is_terminating",
    "new_pod_for",
    "plan_replicaset",
    "pod_log",
    "pod_ready_since",
    "pod_timers",
    "pod_transition",
    "random_suffix",
]

#: The same few instants are formatted and parsed over and over (each condition of each pod, each
#: time a ReplicaSet's pods are counted): both are remembered.
format_time = functools.lru_cache(maxsize=1024)(timefmt.format_time)
parse_time = functools.lru_cache(maxsize=8192)(timefmt.parse_time)

NODE_NAME = "gitdeploy-local"
START = "pod-start"
STOP = "pod-stop"
DEADLINE = "pod-deadline"
GONE = "pod-gone"
"""A terminating pod's grace period is over: it is removed."""
POD_TRANSITIONS = (START, STOP, DEADLINE)
"""The transitions of a pod's containers, which do nothing once it is terminating."""
DEFAULT_GRACE_SECONDS = 30
RS_SYNC = "rs-sync"
"""The ReplicaSet controller looks at a ReplicaSet again (``minReadySeconds``)."""
RS_WRITTEN = "rs-written"
"""The ReplicaSet controller looks at a ReplicaSet, a moment after a write to it or its pods."""
APP_LABEL = "gitdeploy.io/app"
DESIRED_REPLICAS_ANNOTATION = "gitdeploy.io/desired-replicas"
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_TERMINAL = ("Succeeded", "Failed")


def random_suffix(length: int = 5) -> str:
    """A name suffix drawn from the alphabet Kubernetes uses for generated names (not a secret:
    the module's generator, as Kubernetes' own, not the operating system's)."""
    return "".join(random.choices(_SUFFIX_ALPHABET, k=length))


def is_job(pod: dict[str, Any]) -> bool:
    """Run-to-completion pods (hooks, deployers) have ``restartPolicy`` Never or OnFailure."""
    return (pod.get("spec") or {}).get("restartPolicy", "Always") in ("Never", "OnFailure")


def is_terminating(pod: dict[str, Any]) -> bool:
    """The pod was deleted and stays, Terminating, until its grace period is over."""
    return bool(pod["metadata"].get("deletionTimestamp"))


def grace_period_seconds(pod: dict[str, Any], options: dict[str, Any]) -> int:
    """How long a deleted pod stays Terminating, as the API server decides it: 0 for a pod that
    has ended (or was never scheduled), else the delete's ``gracePeriodSeconds``, else the pod's
    ``terminationGracePeriodSeconds``, else 30."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in _TERMINAL or not (pod.get("spec") or {}).get("nodeName"):
        return 0
    for value in (
        options.get("gracePeriodSeconds"),
        (pod.get("spec") or {}).get("terminationGracePeriodSeconds"),
    ):
        if isinstance(value, int) and not isinstance(value, bool):
            return max(value, 0)
    return DEFAULT_GRACE_SECONDS


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return list((pod.get("spec") or {}).get("containers") or [])


def _pod_behaviour(pod: dict[str, Any], config: SimulationConfig) -> str:
    """The worst behaviour among the pod's images."""
    order = [ImageBehaviour.PULL_FAILURE, ImageBehaviour.CRASH, ImageBehaviour.UNREADY, ImageBehaviour.HANG]
    found = {config.behaviour(str(c.get("image", ""))) for c in _containers(pod)}
    return next((b for b in order if b in found), ImageBehaviour.OK)


def _pod_ip(uid: str) -> str:
    digest = hashlib.sha256(uid.encode()).digest()
    return f"10.244.{digest[0]}.{max(digest[1], 2)}"


def _condition(kind: str, status: bool, at: float, reason: str = "") -> dict[str, Any]:
    condition: dict[str, Any] = {
        "type": kind,
        "status": "True" if status else "False",
        "lastProbeTime": None,
        "lastTransitionTime": format_time(at),
    }
    if reason:
        condition["reason"] = reason
    return condition


def _container_status(
    container: dict[str, Any], state: dict[str, Any], ready: bool, **extra: Any
) -> dict[str, Any]:
    image = str(container.get("image", ""))
    status: dict[str, Any] = {
        "name": container.get("name", ""),
        "image": image,
        "imageID": "",
        "ready": ready,
        "restartCount": 0,
        "started": "running" in state,
        "state": state,
    }
    status.update(extra)
    return status


def initial_pod_status(pod: dict[str, Any], now: float) -> dict[str, Any]:
    """A freshly scheduled pod: Pending, containers being created."""
    return {
        "phase": "Pending",
        "conditions": [_condition("PodScheduled", True, now)],
        "containerStatuses": [
            _container_status(c, {"waiting": {"reason": "ContainerCreating"}}, False)
            for c in _containers(pod)
        ],
        "hostIP": "127.0.0.1",
        "podIP": _pod_ip(str(pod["metadata"]["uid"])),
        "qosClass": "BestEffort",
        "startTime": format_time(now),
    }


def pod_timers(pod: dict[str, Any], config: SimulationConfig, created: float) -> list[tuple[float, str]]:
    """The ``(due, action)`` transitions of a new pod: it starts; a run-to-completion pod stops
    (never, if its image hangs); one with ``activeDeadlineSeconds`` is stopped then, unless it
    ended before.

    >>> hung = {"spec": {"restartPolicy": "Never", "activeDeadlineSeconds": 60,
    ...                  "containers": [{"image": "x:hang"}]}}
    >>> pod_timers(hung, SimulationConfig(2.0, 5.0, image_hang=("*:hang",)), 100.0)
    [(102.0, 'pod-start'), (160.0, 'pod-deadline')]
    """
    if not is_job(pod):
        timers = [(created + config.pod_start_seconds, START)]
    else:
        timers = [(created + min(config.pod_start_seconds, config.job_seconds), START)]
        if _pod_behaviour(pod, config) != ImageBehaviour.HANG:
            timers.append((created + config.job_seconds, STOP))
    deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    if isinstance(deadline, int) and deadline > 0:
        stopped = created + deadline
        timers = [(due, action) for due, action in timers if due < stopped] + [(stopped, DEADLINE)]
    return timers


def _stopped_at_deadline(pod: dict[str, Any], status: dict[str, Any], at: float) -> dict[str, Any]:
    """What the kubelet makes of a pod that ran past its ``activeDeadlineSeconds``."""
    if status.get("phase") in _TERMINAL:
        return status
    killed = {"exitCode": 137, "reason": "Error", "startedAt": status.get("startTime")}
    killed["finishedAt"] = format_time(at)
    return {
        **status,
        "phase": "Failed",
        "reason": "DeadlineExceeded",
        "message": "Pod was active on the node longer than the specified deadline",
        "conditions": [
            _condition("Ready", False, at, "PodFailed"),
            _condition("ContainersReady", False, at, "PodFailed"),
        ],
        "containerStatuses": [_container_status(c, {"terminated": killed}, False) for c in _containers(pod)],
    }


def pod_transition(pod: dict[str, Any], action: str, at: float, config: SimulationConfig) -> dict[str, Any]:
    """The pod's status after ``action`` (``pod-start``, ``pod-stop`` or ``pod-deadline``) happened
    at time ``at``: stopped at its deadline, stopped (completed or failed), or started as its
    images behave (backing off a pull, crash-looping, running ready or not)."""
    status = dict(pod.get("status") or {})
    if action == DEADLINE:
        return _stopped_at_deadline(pod, status, at)
    behaviour = _pod_behaviour(pod, config)
    if action == STOP:
        return _stopped(
            pod, status, at, failed=behaviour in (ImageBehaviour.PULL_FAILURE, ImageBehaviour.CRASH)
        )
    started_badly = None if is_job(pod) else _STARTED_BADLY.get(behaviour)
    if started_badly is not None:
        return started_badly(pod, status, at)
    return _running(pod, status, at, ready=behaviour != ImageBehaviour.UNREADY)


def _with_containers(
    pod: dict[str, Any],
    status: dict[str, Any],
    at: float,
    phase: str,
    not_ready_because: str,
    container_status: Callable[[dict[str, Any]], dict[str, Any]],
) -> dict[str, Any]:
    """``status`` of a pod whose containers the kubelet got to at ``at``: in ``phase``, Ready
    unless ``not_ready_because`` says why not, each container's status from ``container_status``."""
    ready = not not_ready_because
    status["phase"] = phase
    status["conditions"] = [
        _condition("Initialized", True, at),
        _condition("Ready", ready, at, not_ready_because),
        _condition("ContainersReady", ready, at, not_ready_because),
        _condition("PodScheduled", True, parse_time(status.get("startTime")) or at),
    ]
    status["containerStatuses"] = [container_status(c) for c in _containers(pod)]
    return status


def _stopped(pod: dict[str, Any], status: dict[str, Any], at: float, *, failed: bool) -> dict[str, Any]:
    """A run-to-completion pod whose containers exited: Failed (code 1) or Succeeded (code 0)."""
    terminated = {
        "exitCode": 1 if failed else 0,
        "reason": "Error" if failed else "Completed",
        "startedAt": status.get("startTime"),
        "finishedAt": format_time(at),
    }
    return _with_containers(
        pod,
        status,
        at,
        "Failed" if failed else "Succeeded",
        "PodCompleted",
        lambda c: _container_status(c, {"terminated": terminated}, False),
    )


def _pulling_back_off(pod: dict[str, Any], status: dict[str, Any], at: float) -> dict[str, Any]:
    """A pod whose image cannot be pulled: Pending, backing off."""

    def waiting(container: dict[str, Any]) -> dict[str, Any]:
        message = f'Back-off pulling image "{container.get("image")}"'
        return _container_status(
            container, {"waiting": {"reason": "ImagePullBackOff", "message": message}}, False
        )

    return _with_containers(pod, status, at, "Pending", "ContainersNotReady", waiting)


def _crash_looping(pod: dict[str, Any], status: dict[str, Any], at: float) -> dict[str, Any]:
    """A pod whose containers exit at once: Running, not ready, restarted once and backing off."""
    last = {
        "terminated": {
            "exitCode": 1,
            "reason": "Error",
            "startedAt": format_time(at),
            "finishedAt": format_time(at),
        }
    }

    def crashed(container: dict[str, Any]) -> dict[str, Any]:
        waiting = {"reason": "CrashLoopBackOff", "message": "back-off restarting failed container"}
        return _container_status(container, {"waiting": waiting}, False, restartCount=1, lastState=last)

    return _with_containers(pod, status, at, "Running", "ContainersNotReady", crashed)


def _running(pod: dict[str, Any], status: dict[str, Any], at: float, *, ready: bool) -> dict[str, Any]:
    """A pod whose containers run: Running, ready unless its images never become so."""
    started = format_time(at)
    return _with_containers(
        pod,
        status,
        at,
        "Running",
        "" if ready else "ContainersNotReady",
        lambda c: _container_status(c, {"running": {"startedAt": started}}, ready),
    )


_STARTED_BADLY: dict[str, Callable[[dict[str, Any], dict[str, Any], float], dict[str, Any]]] = {
    ImageBehaviour.PULL_FAILURE: _pulling_back_off,
    ImageBehaviour.CRASH: _crash_looping,
}
"""How a pod that is not run-to-completion starts when its worst image behaves so."""


def custom_deployment_target(pod: dict[str, Any]) -> tuple[str, str] | None:
    """``(namespace, ReplicaSet)`` a custom deployer pod was started for (from its environment)."""
    env: dict[str, str] = {}
    for container in _containers(pod):
        for var in container.get("env") or []:
            env[str(var.get("name"))] = str(var.get("value", ""))
    name = env.get("GITDEPLOY_DEPLOYMENT_NAME")
    if not name:
        return None
    return env.get("GITDEPLOY_DEPLOYMENT_NAMESPACE") or str(pod["metadata"].get("namespace", "")), name


def is_pod_ready(pod: dict[str, Any]) -> bool:
    """The pod's ``Ready`` condition is True."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def pod_ready_since(pod: dict[str, Any]) -> float | None:
    """When the pod last became ready, or None when it is not ready."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return parse_time(condition.get("lastTransitionTime"))
    return None


def pod_log(pod: dict[str, Any], config: SimulationConfig) -> str:
    """The simulated log of a pod, consistent with its status."""
    lines = []
    status = pod.get("status") or {}
    for container in _containers(pod):
        image = container.get("image", "")
        lines.append(f"[{container.get('name')}] pulling image {image}")
        behaviour = config.behaviour(str(image))
        if status.get("phase") == "Pending" and behaviour == ImageBehaviour.PULL_FAILURE:
            lines.append(f"[{container.get('name')}] error: image {image} not found")
            continue
        if status.get("phase") == "Pending":
            continue
        command = " ".join(
            str(part) for part in (container.get("command") or []) + (container.get("args") or [])
        )
        lines.append(f"[{container.get('name')}] started{': ' + command if command else ''}")
        if status.get("phase") == "Succeeded":
            lines.append(f"[{container.get('name')}] completed successfully")
        elif status.get("reason") == "DeadlineExceeded":
            lines.append(f"[{container.get('name')}] killed: the pod ran past its activeDeadlineSeconds")
        elif status.get("phase") == "Failed" or behaviour == ImageBehaviour.CRASH:
            lines.append(f"[{container.get('name')}] error: process exited with code 1")
    return "".join(line + "\n" for line in lines)


def new_pod_for(replicaset: dict[str, Any], name: str) -> dict[str, Any]:
    """A pod created by the ReplicaSet controller from the ReplicaSet's template."""
    meta = replicaset["metadata"]
    template = (replicaset.get("spec") or {}).get("template") or {}
    template_meta = template.get("metadata") or {}
    pod_meta: dict[str, Any] = {
        "name": name,
        "generateName": f"{meta['name']}-",
        "namespace": meta.get("namespace", ""),
        "labels": dict(template_meta.get("labels") or {}),
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if template_meta.get("annotations"):
        pod_meta["annotations"] = dict(template_meta["annotations"])
    spec = dict(template.get("spec") or {})
    spec.setdefault("restartPolicy", "Always")
    spec["nodeName"] = NODE_NAME
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


@dataclass(frozen=True)
class ReplicaSetPlan:
    """What the ReplicaSet controller does now: create pods, delete ``delete``, write ``status``."""

    create: int
    delete: list[dict[str, Any]]
    status: dict[str, Any]
    recheck_at: float | None


_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_rank(pod: dict[str, Any]) -> tuple[int, int, float, float, str]:
    """Sort key: pods sorted first are deleted first (not ready, then newest), as Kubernetes does."""
    meta = pod["metadata"]
    ready_since = pod_ready_since(pod)
    created = parse_time(meta.get("creationTimestamp")) or 0.0
    return (
        1 if ready_since is not None else 0,
        _PHASE_RANK.get(str((pod.get("status") or {}).get("phase")), 0),
        -(ready_since or 0.0),
        -created,
        "".join(chr(0x10FFFF - ord(c)) for c in str(meta.get("name", ""))),
    )


def plan_replicaset(replicaset: dict[str, Any], pods: list[dict[str, Any]], now: float) -> ReplicaSetPlan:
    """Compare the pods the ReplicaSet controls with ``spec.replicas`` and compute its status at ``now``."""
    spec = replicaset.get("spec") or {}
    desired = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
    min_ready = float(spec.get("minReadySeconds") or 0)
    running = [p for p in pods if (p.get("status") or {}).get("phase") not in _TERMINAL]
    # As upstream's FilterActivePods: a terminating pod is neither counted nor replaced-against;
    # it is reported in status.terminatingReplicas until it is gone.
    active = [p for p in running if not is_terminating(p)]
    terminating = len(running) - len(active)
    create = max(0, desired - len(active))
    delete: list[dict[str, Any]] = []
    if len(active) > desired:
        delete = sorted(active, key=_deletion_rank)[: len(active) - desired]
    deleted = {id(p) for p in delete}
    terminating += sum(1 for p in delete if grace_period_seconds(p, {}))
    remaining = [p for p in active if id(p) not in deleted]
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    template_requirements = label_selector_from_object({"matchLabels": template_labels})
    ready = 0
    available = 0
    recheck: float | None = None
    for pod in remaining:
        since = pod_ready_since(pod)
        if since is None:
            continue
        ready += 1
        if since + min_ready <= now:
            available += 1
        else:
            recheck = min(recheck or since + min_ready, since + min_ready)
    fully_labeled = create + sum(
        1 for p in remaining if matches_labels(template_requirements, p["metadata"].get("labels"))
    )
    status: dict[str, Any] = {"replicas": len(remaining) + create}
    # Kubernetes omits zero counters (omitempty); clients must cope with absent fields.
    for field, value in (
        ("fullyLabeledReplicas", fully_labeled),
        ("readyReplicas", ready),
        ("availableReplicas", available),
        ("observedGeneration", int(replicaset["metadata"].get("generation") or 0)),
        ("terminatingReplicas", terminating),
    ):
        if value:
            status[field] = value
    old_conditions = (replicaset.get("status") or {}).get("conditions")
    if old_conditions:
        status["conditions"] = old_conditions
    return ReplicaSetPlan(create=create, delete=delete, status=status, recheck_at=recheck)
