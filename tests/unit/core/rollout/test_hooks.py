"""Hook and deployer pods, and what an observed hook pod means under each failure policy."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gitdeploy.core.models import CustomParams, EnvVar, FailurePolicy, Hook, HookPhase, PodTemplate
from gitdeploy.core.observed import ObservedPod, PodSpec
from gitdeploy.core.rollout.hooks import (
    DEPLOYER_ROLE,
    DEPLOYER_SERVICE_ACCOUNT,
    HookStatus,
    HookVerdict,
    build_deployer_pod,
    build_hook_pod,
    deployer_pod_name,
    evaluate_hook,
    hook_pod_name,
    hook_role,
    retry_backoff,
)
from gitdeploy.localcluster.podsecurity import restricted_violations

POD_LEVEL = {
    "serviceAccountName": "migrator",
    "imagePullSecrets": [{"name": "registry"}],
    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
    "nodeSelector": {"pool": "batch"},
    "tolerations": [{"key": "batch", "operator": "Exists", "effect": "NoSchedule"}],
}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
"""What a hook or deployer container gets when its template container sets no securityContext."""
RUNTIME_DEFAULT = {"seccompProfile": {"type": "RuntimeDefault"}}
POD_SECURITY = {"runAsNonRoot": True, "runAsUser": 1000, **RUNTIME_DEFAULT}
"""The pod securityContext a hook or deployer pod of a template with POD_LEVEL gets."""
NOT_COPIED = {
    "affinity": {"nodeAffinity": {}},
    "hostNetwork": True,
    "initContainers": [{"name": "init", "image": "busybox"}],
    "terminationGracePeriodSeconds": 5,
    "restartPolicy": "Always",
}


def template(*, pod_level: bool = True, **container: Any) -> PodTemplate:
    """A two-container template; ``container`` adds to (or overrides) the ``api`` container."""
    api: dict[str, Any] = {
        "name": "api",
        "image": "registry.example/api:2.0",
        "command": ["/srv/api"],
        "args": ["--port", "8080"],
        "env": [
            {"name": "DB_HOST", "value": "db"},
            {"name": "MODE", "value": "serve"},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}},
        ],
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/api"},
            {"name": "cache", "mountPath": "/var/cache"},
            {"name": "secrets", "mountPath": "/run/secrets", "readOnly": True},
        ],
        "ports": [{"containerPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}},
        "resources": {"requests": {"cpu": "2"}},
        **container,
    }
    spec: dict[str, Any] = {
        "containers": [{"name": "proxy", "image": "envoy:1.30"}, api],
        "volumes": [
            {"name": "config", "configMap": {"name": "api-config"}},
            {"name": "cache", "emptyDir": {}},
            {"name": "secrets", "secret": {"secretName": "api"}},
        ],
        **NOT_COPIED,
    }
    if pod_level:
        spec.update(POD_LEVEL)
    body = {"metadata": {"labels": {"app": "api"}}, "spec": spec}
    return PodTemplate(json.dumps(body, sort_keys=True, separators=(",", ":")))


def hook_pod(
    hook: Hook,
    *,
    tmpl: PodTemplate | None = None,
    phase: str = "pre",
    resources_json: str = "{}",
    attempt: int = 1,
    first_attempt_at: float = 0.0,
) -> PodSpec:
    return build_hook_pod(
        namespace="shop",
        app="api",
        replica_set="api-bcdf245678",
        owner_uid="uid-123",
        revision=4,
        attempt=attempt,
        first_attempt_at=first_attempt_at,
        phase=HookPhase(phase),
        hook=hook,
        template=tmpl or template(),
        resources_json=resources_json,
        active_deadline_seconds=600,
    )


def container_of(pod: PodSpec) -> dict[str, Any]:
    containers = pod.spec()["containers"]
    assert len(containers) == 1
    container = containers[0]
    assert isinstance(container, dict)
    return container


MIGRATE = Hook(FailurePolicy.ABORT, "api", ("/bin/migrate", "--up"))


# -- names -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phase", "name", "role"),
    [
        ("pre", "api-bcdf245678-hook-pre", "hook-pre"),
        ("mid", "api-bcdf245678-hook-mid", "hook-mid"),
        ("post", "api-bcdf245678-hook-post", "hook-post"),
    ],
)
def test_hook_pod_names_and_roles(phase: str, name: str, role: str) -> None:
    assert hook_pod_name("api-bcdf245678", HookPhase(phase)) == name
    assert hook_role(HookPhase(phase)) == role
    pod = hook_pod(MIGRATE, phase=phase)
    assert (pod.name, pod.role) == (name, role)


def test_deployer_pod_name() -> None:
    assert deployer_pod_name("api-bcdf245678") == "api-bcdf245678-deploy"
    assert DEPLOYER_ROLE == "deployer"


# -- build_hook_pod ----------------------------------------------------------------------------------


def test_hook_pod_metadata_ties_it_to_the_replica_set_and_the_attempt() -> None:
    pod = hook_pod(MIGRATE, phase="mid", attempt=3, first_attempt_at=1_700_000_000.0)
    assert (pod.namespace, pod.app, pod.revision, pod.attempt, pod.first_attempt_at) == (
        "shop",
        "api",
        4,
        3,
        1_700_000_000.0,
    )
    assert (pod.owner_name, pod.owner_uid) == ("api-bcdf245678", "uid-123")
    assert pod.spec_json == json.dumps(pod.spec(), sort_keys=True, separators=(",", ":"))


def test_hook_pod_runs_the_named_container_once_with_the_hook_command() -> None:
    pod = hook_pod(MIGRATE)
    spec = pod.spec()
    assert spec["restartPolicy"] == "Never"
    container = container_of(pod)
    assert container["name"] == "lifecycle"
    assert container["image"] == "registry.example/api:2.0"
    assert container["command"] == ["/bin/migrate", "--up"]
    # the hook command replaces the entrypoint and its arguments
    assert "args" not in container
    # serving details of the app container are not carried over
    for key in ("ports", "readinessProbe", "resources"):
        assert key not in container


def test_without_a_hook_command_the_containers_own_command_and_args_run() -> None:
    pod = hook_pod(Hook(FailurePolicy.ABORT, "api"))
    container = container_of(pod)
    assert (container["command"], container["args"]) == (["/srv/api"], ["--port", "8080"])


def test_without_any_command_none_is_set() -> None:
    tmpl = PodTemplate('{"spec":{"containers":[{"image":"w:1","name":"w"}]}}')
    container = container_of(hook_pod(Hook(FailurePolicy.ABORT, "w"), tmpl=tmpl))
    assert container == {"image": "w:1", "name": "lifecycle", "securityContext": RESTRICTED_CONTAINER}


@pytest.mark.parametrize(
    ("hook_env", "expected"),
    [
        (
            (),
            [
                {"name": "DB_HOST", "value": "db"},
                {"name": "MODE", "value": "serve"},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"key": "t", "name": "s"}}},
            ],
        ),
        (
            (EnvVar("MODE", "migrate"), EnvVar("DRY_RUN", "1")),
            [
                {"name": "DB_HOST", "value": "db"},
                {"name": "MODE", "value": "migrate"},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"key": "t", "name": "s"}}},
                {"name": "DRY_RUN", "value": "1"},
            ],
        ),
        (
            (EnvVar("TOKEN", "plain"),),
            [
                {"name": "DB_HOST", "value": "db"},
                {"name": "MODE", "value": "serve"},
                {"name": "TOKEN", "value": "plain"},
            ],
        ),
    ],
    ids=["container env only", "hook wins in place, new names appended", "hook replaces a valueFrom"],
)
def test_hook_env_is_merged_over_the_container_env(hook_env: tuple[EnvVar, ...], expected: Any) -> None:
    pod = hook_pod(Hook(FailurePolicy.ABORT, "api", ("/bin/migrate",), hook_env))
    assert container_of(pod)["env"] == expected


def test_hook_env_without_container_env() -> None:
    tmpl = PodTemplate('{"spec":{"containers":[{"image":"w:1","name":"w"}]}}')
    pod = hook_pod(Hook(FailurePolicy.ABORT, "w", ("x",), (EnvVar("A", "1"),)), tmpl=tmpl)
    assert container_of(pod)["env"] == [{"name": "A", "value": "1"}]


def test_env_from_is_carried_over() -> None:
    env_from = [{"configMapRef": {"name": "api-env"}}]
    pod = hook_pod(MIGRATE, tmpl=template(envFrom=env_from))
    assert container_of(pod)["envFrom"] == env_from


@pytest.mark.parametrize(
    ("volumes", "pod_volumes", "mounts"),
    [
        ((), None, None),
        (("config",), [{"name": "config", "configMap": {"name": "api-config"}}], ["config"]),
        (
            ("secrets", "config"),
            [
                {"name": "config", "configMap": {"name": "api-config"}},
                {"name": "secrets", "secret": {"secretName": "api"}},
            ],
            ["config", "secrets"],
        ),
        (("nonexistent",), None, None),
    ],
    ids=["none listed", "one", "two, template order kept", "unknown name"],
)
def test_only_the_volumes_the_hook_lists_are_mounted(
    volumes: tuple[str, ...], pod_volumes: list[dict[str, Any]] | None, mounts: list[str] | None
) -> None:
    pod = hook_pod(Hook(FailurePolicy.ABORT, "api", ("/bin/migrate",), volumes=volumes))
    assert pod.spec().get("volumes") == pod_volumes
    found = container_of(pod).get("volumeMounts")
    assert (None if found is None else [m["name"] for m in found]) == mounts


def test_volume_mounts_keep_their_options() -> None:
    pod = hook_pod(Hook(FailurePolicy.ABORT, "api", ("x",), volumes=("secrets",)))
    assert container_of(pod)["volumeMounts"] == [
        {"name": "secrets", "mountPath": "/run/secrets", "readOnly": True}
    ]


@pytest.mark.parametrize(
    ("resources_json", "expected"),
    [
        ("{}", None),
        (
            '{"limits":{"memory":"256Mi"},"requests":{"cpu":"100m"}}',
            {"limits": {"memory": "256Mi"}, "requests": {"cpu": "100m"}},
        ),
    ],
)
def test_strategy_resources_apply_to_the_hook_container(resources_json: str, expected: Any) -> None:
    pod = hook_pod(MIGRATE, resources_json=resources_json)
    assert container_of(pod).get("resources") == expected


def test_pod_level_fields_are_copied_and_nothing_else() -> None:
    spec = hook_pod(MIGRATE).spec()
    assert {k: spec[k] for k in POD_LEVEL} == {**POD_LEVEL, "securityContext": POD_SECURITY}
    assert sorted(spec) == sorted([*POD_LEVEL, "containers", "restartPolicy", "activeDeadlineSeconds"])
    # the template's own restart policy does not leak in
    assert spec["restartPolicy"] == "Never"


def test_without_pod_level_fields_only_the_essentials_remain() -> None:
    spec = hook_pod(MIGRATE, tmpl=template(pod_level=False)).spec()
    assert sorted(spec) == ["activeDeadlineSeconds", "containers", "restartPolicy", "securityContext"]
    assert spec["activeDeadlineSeconds"] == 600  # the kubelet stops a hung hook at its deadline
    assert spec["securityContext"] == RUNTIME_DEFAULT


@pytest.mark.parametrize("name", ["worker", "API", ""])
def test_a_hook_naming_an_unknown_container_raises(name: str) -> None:
    with pytest.raises(ValueError, match="is not in the pod template"):
        hook_pod(Hook(FailurePolicy.ABORT, name, ("x",)))


def test_a_template_without_containers_raises() -> None:
    with pytest.raises(ValueError):
        hook_pod(MIGRATE, tmpl=PodTemplate("{}"))


# -- build_deployer_pod ------------------------------------------------------------------------------


def deployer(params: CustomParams, *, resources_json: str = "{}", tmpl: PodTemplate | None = None) -> PodSpec:
    return build_deployer_pod(
        namespace="shop",
        app="api",
        replica_set="api-bcdf245678",
        owner_uid="uid-9",
        revision=6,
        params=params,
        template=tmpl or template(),
        resources_json=resources_json,
    )


BASE_ENV = [
    {"name": "GITDEPLOY_DEPLOYMENT_NAME", "value": "api-bcdf245678"},
    {"name": "GITDEPLOY_DEPLOYMENT_NAMESPACE", "value": "shop"},
    {"name": "OPENSHIFT_DEPLOYMENT_NAME", "value": "api-bcdf245678"},
    {"name": "OPENSHIFT_DEPLOYMENT_NAMESPACE", "value": "shop"},
]


def test_deployer_pod_identity() -> None:
    pod = deployer(CustomParams("org/deployer:1"))
    assert (pod.name, pod.role, pod.namespace, pod.app, pod.revision, pod.attempt) == (
        "api-bcdf245678-deploy",
        "deployer",
        "shop",
        "api",
        6,
        1,
    )
    assert (pod.owner_name, pod.owner_uid, pod.first_attempt_at) == ("api-bcdf245678", "uid-9", 0.0)


@pytest.mark.parametrize(
    ("params", "container"),
    [
        (
            CustomParams("org/deployer:1"),
            {
                "name": "deployer",
                "image": "org/deployer:1",
                "env": BASE_ENV,
                "securityContext": RESTRICTED_CONTAINER,
            },
        ),
        (
            CustomParams("org/deployer:2", ("/deploy", "--canary"), (EnvVar("STEP", "10"),)),
            {
                "name": "deployer",
                "image": "org/deployer:2",
                "command": ["/deploy", "--canary"],
                "env": [*BASE_ENV, {"name": "STEP", "value": "10"}],
                "securityContext": RESTRICTED_CONTAINER,
            },
        ),
    ],
    ids=["image only", "command and environment"],
)
def test_deployer_container(params: CustomParams, container: dict[str, Any]) -> None:
    pod = deployer(params)
    assert container_of(pod) == container
    assert pod.spec()["restartPolicy"] == "Never"


def test_deployer_gets_strategy_resources_and_pod_level_fields() -> None:
    pod = deployer(CustomParams("d:1"), resources_json='{"limits":{"cpu":"1"}}')
    assert container_of(pod)["resources"] == {"limits": {"cpu": "1"}}
    spec = pod.spec()
    assert {k: spec[k] for k in POD_LEVEL} == {
        **POD_LEVEL,
        "securityContext": POD_SECURITY,
        "serviceAccountName": DEPLOYER_SERVICE_ACCOUNT,
    }
    assert "volumes" not in spec and "affinity" not in spec


@pytest.mark.parametrize("pod_level", [True, False], ids=["template-names-an-account", "template-names-none"])
def test_the_deployer_runs_as_the_deployer_service_account_with_its_token(pod_level: bool) -> None:
    # Given a template whose pods run as the app's own account (or as the namespace's default)
    body = template(pod_level=pod_level).to_dict()
    body["spec"]["automountServiceAccountToken"] = False
    tmpl = PodTemplate(json.dumps(body, sort_keys=True))
    # Then the deployer runs as "deployer" (as on OpenShift), with a token to scale ReplicaSets
    spec = deployer(CustomParams("d:1"), tmpl=tmpl).spec()
    assert DEPLOYER_SERVICE_ACCOUNT == "deployer"
    assert (spec["serviceAccountName"], spec["automountServiceAccountToken"]) == ("deployer", True)
    # And a hook pod still runs as the app does
    assert hook_pod(MIGRATE).spec()["serviceAccountName"] == POD_LEVEL["serviceAccountName"]


RESTRICTED_APP = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [
        {"name": "api", "image": "api:2", "securityContext": RESTRICTED_CONTAINER},
    ],
}
CONTAINER_LEVEL_APP = {
    "containers": [
        {
            "name": "api",
            "image": "api:2",
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 1001,
                "readOnlyRootFilesystem": True,
                "seccompProfile": {"type": "Localhost", "localhostProfile": "api.json"},
                **RESTRICTED_CONTAINER,
            },
        }
    ],
}


@pytest.mark.parametrize("spec", [RESTRICTED_APP, CONTAINER_LEVEL_APP], ids=["pod-level", "container-level"])
def test_hook_and_deployer_pods_of_a_restricted_app_pass_pod_security_restricted(
    spec: dict[str, Any],
) -> None:
    tmpl = PodTemplate(json.dumps({"metadata": {"labels": {"app": "api"}}, "spec": spec}, sort_keys=True))
    assert restricted_violations(spec) == []  # the app's own pods pass

    for pod in (
        hook_pod(Hook(FailurePolicy.ABORT, "api", ("/bin/migrate",)), tmpl=tmpl),
        deployer(CustomParams("d:1"), tmpl=tmpl),
    ):
        assert restricted_violations(pod.spec()) == [], pod.name


@pytest.mark.parametrize(
    ("container_context", "expected"),
    [
        (None, RESTRICTED_CONTAINER),
        ({"runAsUser": 0}, {"runAsUser": 0, **RESTRICTED_CONTAINER}),  # the template said so: kept
        (
            {"allowPrivilegeEscalation": True},
            {"allowPrivilegeEscalation": True, "capabilities": {"drop": ["ALL"]}},
        ),
        (
            {"capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}},
            {
                "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                "allowPrivilegeEscalation": False,
            },
        ),
        ({"privileged": True}, {"privileged": True, "capabilities": {"drop": ["ALL"]}}),
        ({"capabilities": {"add": ["SYS_ADMIN"]}}, {"capabilities": {"add": ["SYS_ADMIN"]}}),
    ],
    ids=["nothing", "root-kept", "escalation-kept", "net-bind", "privileged", "sys-admin"],
)
def test_the_hook_container_derives_its_security_context_from_the_template_container(
    container_context: dict[str, Any] | None, expected: dict[str, Any]
) -> None:
    container: dict[str, Any] = {"name": "api", "image": "api:2"}
    if container_context is not None:
        container["securityContext"] = container_context
    tmpl = PodTemplate(json.dumps({"spec": {"containers": [container]}}, sort_keys=True))

    hook = container_of(hook_pod(Hook(FailurePolicy.ABORT, "api", ("/bin/migrate",)), tmpl=tmpl))

    assert hook["securityContext"] == expected


# -- evaluate_hook -----------------------------------------------------------------------------------


def observed(
    phase: str,
    *,
    revision: int = 2,
    attempt: int = 1,
    created_at: float = 90.0,
    finished_at: float | None = 100.0,
    role: str = "hook-mid",
) -> ObservedPod:
    return ObservedPod(
        "shop",
        "api-bcdf245678-" + role,
        role,
        phase,
        revision=revision,
        attempt=attempt,
        app="api",
        created_at=created_at,
        finished_at=finished_at,
    )


ALL_POLICIES = (FailurePolicy.ABORT, FailurePolicy.RETRY, FailurePolicy.IGNORE)
START = HookStatus(HookVerdict.START)
RUNNING = HookStatus(HookVerdict.RUNNING)
SUCCEEDED = HookStatus(HookVerdict.SUCCEEDED)
IGNORED = HookStatus(HookVerdict.IGNORED)
FAILED = HookStatus(HookVerdict.FAILED)
RETRY = HookStatus(HookVerdict.RETRY)

VERDICTS: list[tuple[str, ObservedPod | None, FailurePolicy, str, float, float, HookStatus]] = [
    # (id, pod, policy, phase, deadline, now, expected)
    *[(f"no pod {p}", None, p, "pre", 1000.0, 0.0, START) for p in ALL_POLICIES],
    (
        "earlier revision's pod",
        observed("Succeeded", revision=1),
        FailurePolicy.ABORT,
        "mid",
        1e3,
        1.0,
        START,
    ),
    ("later revision's pod", observed("Failed", revision=3), FailurePolicy.RETRY, "mid", 1e3, 1.0, START),
    *[
        (f"{phase} {p} {pod_phase}", observed(pod_phase), p, phase, 1000.0, 101.0, RUNNING)
        for pod_phase in ("Pending", "Running", "Unknown")
        for p in ALL_POLICIES
        for phase in ("pre", "post")
    ],
    *[
        (f"{phase} {p} succeeded", observed("Succeeded"), p, phase, 1000.0, 101.0, SUCCEEDED)
        for p in ALL_POLICIES
        for phase in ("pre", "mid", "post")
    ],
    *[(f"post {p} failed", observed("Failed"), p, "post", 1000.0, 101.0, IGNORED) for p in ALL_POLICIES],
    ("post Retry failed past deadline", observed("Failed"), FailurePolicy.RETRY, "post", 0.0, 1e4, IGNORED),
    ("pre Ignore failed", observed("Failed"), FailurePolicy.IGNORE, "pre", 1000.0, 101.0, IGNORED),
    ("mid Ignore failed", observed("Failed"), FailurePolicy.IGNORE, "mid", 1000.0, 101.0, IGNORED),
    ("pre Abort failed", observed("Failed"), FailurePolicy.ABORT, "pre", 1000.0, 101.0, FAILED),
    ("mid Abort failed", observed("Failed"), FailurePolicy.ABORT, "mid", 1000.0, 101.0, FAILED),
    # Retry: attempt 1 finished at 100 → backoff 5 s → next attempt at 105
    (
        "retry waits",
        observed("Failed"),
        FailurePolicy.RETRY,
        "mid",
        1000.0,
        101.0,
        HookStatus(HookVerdict.WAIT_RETRY, 105.0),
    ),
    (
        "retry waits until the instant",
        observed("Failed"),
        FailurePolicy.RETRY,
        "pre",
        1000.0,
        104.999,
        HookStatus(HookVerdict.WAIT_RETRY, 105.0),
    ),
    ("retry at the instant", observed("Failed"), FailurePolicy.RETRY, "mid", 1000.0, 105.0, RETRY),
    ("retry later", observed("Failed"), FailurePolicy.RETRY, "mid", 1000.0, 500.0, RETRY),
    (
        "retry due exactly at the deadline",
        observed("Failed"),
        FailurePolicy.RETRY,
        "mid",
        105.0,
        105.0,
        RETRY,
    ),
    (
        "retry would start after the deadline",
        observed("Failed"),
        FailurePolicy.RETRY,
        "mid",
        104.0,
        101.0,
        FAILED,
    ),
    # attempt 3 waits 20 s; attempt 6 waits the 60 s cap
    (
        "third attempt backoff",
        observed("Failed", attempt=3),
        FailurePolicy.RETRY,
        "mid",
        1000.0,
        110.0,
        HookStatus(HookVerdict.WAIT_RETRY, 120.0),
    ),
    (
        "capped backoff",
        observed("Failed", attempt=6),
        FailurePolicy.RETRY,
        "mid",
        1000.0,
        110.0,
        HookStatus(HookVerdict.WAIT_RETRY, 160.0),
    ),
    (
        "capped backoff past deadline",
        observed("Failed", attempt=6),
        FailurePolicy.RETRY,
        "mid",
        159.0,
        110.0,
        FAILED,
    ),
    # no finish time recorded: the backoff counts from creation
    (
        "no finish time",
        observed("Failed", finished_at=None),
        FailurePolicy.RETRY,
        "mid",
        1000.0,
        91.0,
        HookStatus(HookVerdict.WAIT_RETRY, 95.0),
    ),
]


@pytest.mark.parametrize(
    ("pod", "policy", "phase", "deadline", "now", "expected"),
    [case[1:] for case in VERDICTS],
    ids=[case[0] for case in VERDICTS],
)
def test_evaluate_hook(
    pod: ObservedPod | None,
    policy: FailurePolicy,
    phase: str,
    deadline: float,
    now: float,
    expected: HookStatus,
) -> None:
    assert evaluate_hook(pod, policy, HookPhase(phase), revision=2, deadline=deadline, now=now) == expected


@pytest.mark.parametrize(
    ("verdict", "done"),
    [
        (HookVerdict.START, False),
        (HookVerdict.RUNNING, False),
        (HookVerdict.WAIT_RETRY, False),
        (HookVerdict.RETRY, False),
        (HookVerdict.SUCCEEDED, True),
        (HookVerdict.IGNORED, True),
        (HookVerdict.FAILED, False),
    ],
)
def test_verdict_done(verdict: HookVerdict, done: bool) -> None:
    assert verdict.done is done


@pytest.mark.parametrize(
    ("attempt", "seconds"),
    [(1, 5.0), (2, 10.0), (3, 20.0), (4, 40.0), (5, 60.0), (6, 60.0), (10, 60.0), (50, 60.0)],
)
def test_retry_backoff(attempt: int, seconds: float) -> None:
    assert retry_backoff(attempt) == seconds
