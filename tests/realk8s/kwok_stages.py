"""The kwok stages that play the kubelet of the test control plane's fake nodes.

kwok moves a node or pod from one status to the next when a stage's selector matches it, after the
stage's delay. These stages give the behaviour the tests rely on:

- ``node-initialize``: a new node becomes Ready (no heartbeats: no node-lifecycle controller runs),
  with kwok's own kubelet-like server as its kubelet endpoint when kwok runs one (``--node-port``);
- ``pod-start``: a pod bound to a node gets an IP and its containers run, not yet Ready;
- ``pod-ready``: a pod that restarts (a ReplicaSet's pod) becomes Ready after ``pod_ready_seconds``;
- ``pod-image-pull-failure``: a pod whose image is listed stays Pending in ``ErrImagePull``;
- ``pod-exit-*``: a pod that never restarts (hook and deployer pods) ends after ``pod_ready_seconds``
  by the ``EXIT_CODE`` variable of its first container: unset or ``0`` → Succeeded, another number →
  Failed with that exit code, ``hang`` → runs until it is deleted (or its deadline kills it); a
  ``RUN_FOR`` variable (a Go duration, e.g. ``200ms``) of its first container sets how long it runs; a
  ``SUCCEED_ON_ATTEMPT`` variable equal to the pod's ``gitdeploy.io/attempt`` annotation makes that
  attempt succeed whatever ``EXIT_CODE`` says (a Retry hook that fails, then succeeds);
- ``pod-delete``: a deleted pod stays Terminating until its ``deletionTimestamp`` (its grace period),
  then goes, as a kubelet removes it once its containers stopped.

The YAML is the kwok.x-k8s.io/v1alpha1 Stage format; templates are Go templates over the object.
"""

from __future__ import annotations

import json
from typing import Any

from gitdeploy.core.observed import ATTEMPT_ANNOTATION

NODE_COUNT = 3
EXIT_CODE_VAR = "EXIT_CODE"
HANG = "hang"
RUN_FOR_VAR = "RUN_FOR"
SUCCEED_ON_ATTEMPT_VAR = "SUCCEED_ON_ATTEMPT"

_NOT_DELETING: dict[str, Any] = {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"}
_EXIT_CODE = f'.spec.containers.[0].env.[]? | select(.name == "{EXIT_CODE_VAR}") | .value'
_RUN_FOR = f'.spec.containers.[0].env.[]? | select(.name == "{RUN_FOR_VAR}") | .value'
_IMAGES = ".spec.containers.[].image"

_NODE_READY = """\
{{ $now := Now }}
conditions:
- type: Ready
  status: "True"
  reason: KubeletReady
  message: kwok plays this node's kubelet
  lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
addresses:
- type: InternalIP
  address: {{ NodeIP | Quote }}
- type: Hostname
  address: {{ .metadata.name | Quote }}
{{ with NodePort }}
daemonEndpoints:
  kubeletEndpoint:
    Port: {{ . }}
{{ end }}
allocatable: {cpu: 1k, memory: 1Ti, pods: 10k}
capacity: {cpu: 1k, memory: 1Ti, pods: 10k}
nodeInfo:
  architecture: amd64
  operatingSystem: linux
  kubeletVersion: kwok
  containerRuntimeVersion: kwok
  kernelVersion: kwok
  kubeProxyVersion: kwok
  bootID: ""
  machineID: ""
  osImage: ""
  systemUUID: ""
phase: Running
"""


def _pod_status(phase: str, ready: bool, state: str) -> str:
    """A pod status template: ``state`` is the YAML of every container's state (may use $now)."""
    flag = "true" if ready else "false"
    return f"""\
{{{{ $now := Now }}}}
{{{{ $root := . }}}}
phase: {phase}
hostIP: {{{{ NodeIPWith .spec.nodeName | Quote }}}}
podIP: {{{{ PodIPWith .spec.nodeName false .metadata.uid .metadata.name .metadata.namespace | Quote }}}}
startTime: {{{{ or .status.startTime $now | Quote }}}}
conditions:
- type: Initialized
  status: "True"
  lastTransitionTime: {{{{ $now | Quote }}}}
- type: PodScheduled
  status: "True"
  lastTransitionTime: {{{{ $now | Quote }}}}
- type: Ready
  status: "{"True" if ready else "False"}"
  lastTransitionTime: {{{{ $now | Quote }}}}
- type: ContainersReady
  status: "{"True" if ready else "False"}"
  lastTransitionTime: {{{{ $now | Quote }}}}
containerStatuses:
{{{{ range .spec.containers }}}}
- name: {{{{ .name | Quote }}}}
  image: {{{{ .image | Quote }}}}
  imageID: ""
  ready: {flag}
  started: {flag}
  restartCount: 0
  state:
{state}
{{{{ end }}}}
"""


_RUNNING = "    running:\n      startedAt: {{ or $root.status.startTime $now | Quote }}"
_PULL_FAILED = (
    "    waiting:\n      reason: ErrImagePull\n      message: kwok was told this image cannot be pulled"
)
_EXITED = """\
    terminated:
      exitCode: {{ $code }}
      reason: {{ if eq $code "0" }}Completed{{ else }}Error{{ end }}
      startedAt: {{ or $root.status.startTime $now | Quote }}
      finishedAt: {{ $now | Quote }}"""
_CODE = (
    '{{ $code := "0" }}{{ range (index .spec.containers 0).env }}'
    f'{{{{ if eq .name "{EXIT_CODE_VAR}" }}}}{{{{ $code = .value }}}}{{{{ end }}}}{{{{ end }}}}\n'
    "{{ range (index .spec.containers 0).env }}"
    f'{{{{ if eq .name "{SUCCEED_ON_ATTEMPT_VAR}" }}}}'
    f'{{{{ if eq .value (index $.metadata.annotations "{ATTEMPT_ANNOTATION}") }}}}'
    '{{ $code = "0" }}{{ end }}'
    "{{ end }}{{ end }}\n"
)


def _stage(
    name: str,
    kind: str,
    match: list[dict[str, Any]],
    template: str | None,
    delay_ms: int = 0,
    delete: bool = False,
    delay_until: str | None = None,
) -> dict[str, object]:
    spec: dict[str, object] = {
        "resourceRef": {"apiGroup": "v1", "kind": kind},
        "selector": {"matchExpressions": match},
        "next": {"delete": True} if delete else {"statusTemplate": template},
    }
    if delay_ms or delay_until:
        delay: dict[str, object] = {"durationMilliseconds": delay_ms}
        if delay_until:
            delay["durationFrom"] = {"expressionFrom": delay_until}
        spec["delay"] = delay
    return {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": name}, "spec": spec}


def stages(pod_ready_seconds: float, pull_failures: list[str]) -> list[dict[str, object]]:
    ready_ms = max(0, round(pod_ready_seconds * 1000))
    failing = pull_failures or ["kwok.invalid/never-matches"]
    restarts = {"key": ".spec.restartPolicy", "operator": "NotIn", "values": ["Never"]}
    never_restarts = {"key": ".spec.restartPolicy", "operator": "In", "values": ["Never"]}
    running = {"key": ".status.phase", "operator": "In", "values": ["Running"]}
    not_ready = {
        "key": '.status.conditions.[] | select(.type == "Ready") | .status',
        "operator": "NotIn",
        "values": ["True"],
    }
    exit_template = _CODE + _pod_status(
        '{{ if eq $code "0" }}Succeeded{{ else }}Failed{{ end }}', False, _EXITED
    )
    return [
        _stage(
            "node-initialize",
            "Node",
            [
                {
                    "key": '.status.conditions.[] | select(.type == "Ready") | .status',
                    "operator": "NotIn",
                    "values": ["True"],
                }
            ],
            _NODE_READY,
        ),
        _stage(
            "pod-start",
            "Pod",
            [
                _NOT_DELETING,
                {"key": ".status.podIP", "operator": "DoesNotExist"},
                {"key": _IMAGES, "operator": "NotIn", "values": failing},
            ],
            _pod_status("Running", False, _RUNNING),
        ),
        _stage(
            "pod-image-pull-failure",
            "Pod",
            [
                _NOT_DELETING,
                {"key": ".status.podIP", "operator": "DoesNotExist"},
                {"key": _IMAGES, "operator": "In", "values": failing},
            ],
            _pod_status("Pending", False, _PULL_FAILED),
        ),
        _stage(
            "pod-ready",
            "Pod",
            [_NOT_DELETING, restarts, running, not_ready],
            _pod_status("Running", True, _RUNNING),
            delay_ms=ready_ms,
        ),
        _stage(
            "pod-exit-default",
            "Pod",
            [_NOT_DELETING, never_restarts, running, {"key": _EXIT_CODE, "operator": "DoesNotExist"}],
            exit_template,
            delay_ms=ready_ms,
            delay_until=_RUN_FOR,
        ),
        _stage(
            "pod-exit-code",
            "Pod",
            [
                _NOT_DELETING,
                never_restarts,
                running,
                {"key": _EXIT_CODE, "operator": "Exists"},
                {"key": _EXIT_CODE, "operator": "NotIn", "values": [HANG]},
            ],
            exit_template,
            delay_ms=ready_ms,
            delay_until=_RUN_FOR,
        ),
        _stage(
            "pod-delete",
            "Pod",
            [
                {"key": ".metadata.deletionTimestamp", "operator": "Exists"},
                {"key": ".metadata.finalizers", "operator": "DoesNotExist"},
            ],
            None,
            delete=True,
            delay_until=".metadata.deletionTimestamp",
        ),
    ]


def stages_yaml(pod_ready_seconds: float, pull_failures: list[str]) -> str:
    """The stages as a multi-document YAML file for ``kwok --config`` (JSON is valid YAML)."""
    return "".join(
        "---\n" + json.dumps(stage, indent=1) + "\n" for stage in stages(pod_ready_seconds, pull_failures)
    )
