"""deploy/: every manifest validates against the Kubernetes schemas, RBAC is exactly least privilege,
and the pieces (Deployment, Service, Secret mount, Role namespace, image user) fit together."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

import click
import kubernetes_validate
import pytest
import yaml

from gitdeploy.cli.main import cli
from gitdeploy.core.rollout.hooks import DEPLOYER_SERVICE_ACCOUNT

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
MANIFESTS = sorted(DEPLOY.glob("*.yaml")) + sorted(DEPLOY.glob("*.yml"))

# The Kubernetes versions the manifests must validate against: the newest schemas in
# kubernetes-validate and an older release still common in managed clusters.
K8S_VERSIONS = [kubernetes_validate.latest_version(), "1.30.0"]

EXPECTED_RULES: dict[tuple[str, str], set[str]] = {
    ("apps", "replicasets"): {"get", "list", "watch", "create", "patch", "update", "delete"},
    ("apps", "replicasets/finalizers"): {"update"},
    ("", "pods"): {"get", "list", "watch", "create", "delete"},
    ("", "pods/log"): {"get"},
    ("", "events"): {"create", "patch", "list"},
    ("", "configmaps"): {"get", "list", "watch", "create", "update", "patch", "delete"},
}
DEPLOYER_RULES: dict[tuple[str, str], set[str]] = {
    ("apps", "replicasets"): {"get", "list", "watch", "patch", "update"},
    ("apps", "replicasets/scale"): {"get", "patch", "update"},
    ("", "pods"): {"get", "list", "watch"},
    ("", "events"): {"create", "patch"},
}
LEADER_RULES = [
    {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["create", "get", "list", "watch", "update", "delete"],
    },
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
]
"""The leader Lease, the member Leases of ``run --sharding`` (``gitdeploy-member-<hash>``, names
unknown beforehand, so not limited by name) and its head announcement ``gitdeploy-head``, which
every replica watches (no patch of Leases), and the events on a member Lease that sum up a
handover of many apps: gitdeploy's namespace alone."""


Doc = dict[str, Any]


def load_all() -> list[tuple[Path, Doc]]:
    docs: list[tuple[Path, Doc]] = []
    for path in MANIFESTS:
        with path.open(encoding="utf-8") as handle:
            docs.extend((path, doc) for doc in yaml.safe_load_all(handle) if doc is not None)
    return docs


def only(kind: str, name: str | None = None) -> Doc:
    found = [
        doc
        for _, doc in load_all()
        if doc["kind"] == kind and (name is None or doc["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''} in deploy/, found {len(found)}"
    return found[0]


def test_deploy_holds_the_expected_kinds() -> None:
    kinds = sorted(doc["kind"] for _, doc in load_all())

    assert kinds == sorted(
        [
            *["Namespace", "ServiceAccount", "Deployment", "Service"],
            *["Role", "RoleBinding"],  # rbac.yaml
            *["Role", "RoleBinding"],  # leader-election.yaml
            *["ServiceAccount", "Role", "RoleBinding"],  # deployer.yaml
        ]
    )


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("path", MANIFESTS, ids=[p.name for p in MANIFESTS])
def test_manifest_validates_strictly(path: Path, version: str) -> None:
    with path.open(encoding="utf-8") as handle:
        docs = [doc for doc in yaml.safe_load_all(handle) if doc is not None]

    assert docs, f"{path.name} holds no document"
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)


def test_strict_validation_catches_a_misspelt_field() -> None:
    deployment = only("Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}

    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, kubernetes_validate.latest_version(), strict=True)


# -- RBAC -----------------------------------------------------------------------------------------


def rules_of(role: Doc) -> dict[tuple[str, str], set[str]]:
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        assert not rule.get("resourceNames"), "rules are per resource type"
        assert not rule.get("nonResourceURLs")
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    return granted


def test_role_grants_exactly_the_least_privilege_set() -> None:
    assert rules_of(only("Role", "gitdeploy")) == EXPECTED_RULES


def test_leader_election_role_manages_leases_only_in_gitdeploys_own_namespace() -> None:
    role = only("Role", "gitdeploy-leader-election")
    binding = only("RoleBinding", "gitdeploy-leader-election")
    home = only("Deployment")["metadata"]["namespace"]

    assert role["rules"] == LEADER_RULES
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == home
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == only("RoleBinding", "gitdeploy")["subjects"]


def test_no_cluster_wide_rights_and_no_wildcards() -> None:
    kinds = {doc["kind"] for _, doc in load_all()}
    assert not kinds & {"ClusterRole", "ClusterRoleBinding"}

    for rule in [
        *only("Role", "gitdeploy")["rules"],
        *only("Role", "gitdeploy-deployer")["rules"],
        *LEADER_RULES,
    ]:
        for key in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[key], rule
        assert "escalate" not in rule["verbs"] and "bind" not in rule["verbs"]


def test_role_binding_gives_the_role_to_gitdeploys_service_account() -> None:
    role, binding = only("Role", "gitdeploy"), only("RoleBinding", "gitdeploy")
    account = only("ServiceAccount", "gitdeploy")

    assert binding["metadata"]["namespace"] == role["metadata"]["namespace"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": account["metadata"]["name"],
            "namespace": account["metadata"]["namespace"],
        }
    ]


def test_the_deployer_role_only_scales_replica_sets_and_reads_pods() -> None:
    # deploy/deployer.yaml: what the Custom strategy's deployer pod may do in a managed namespace
    assert rules_of(only("Role", "gitdeploy-deployer")) == DEPLOYER_RULES


def test_deployer_yaml_binds_its_role_to_the_deployer_account_of_the_managed_namespace() -> None:
    account, role = only("ServiceAccount", DEPLOYER_SERVICE_ACCOUNT), only("Role", "gitdeploy-deployer")
    binding = only("RoleBinding", "gitdeploy-deployer")
    managed = only("Role", "gitdeploy")["metadata"]["namespace"]  # rbac.yaml's, replaced the same way

    assert account["metadata"]["namespace"] == role["metadata"]["namespace"] == managed
    assert binding["metadata"]["namespace"] == managed
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "gitdeploy-deployer",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": DEPLOYER_SERVICE_ACCOUNT, "namespace": managed}
    ]


# -- the Deployment -------------------------------------------------------------------------------


def pod_spec() -> Doc:
    spec: Doc = only("Deployment")["spec"]["template"]["spec"]
    return spec


def container() -> Doc:
    containers = pod_spec()["containers"]
    assert len(containers) == 1
    found: Doc = containers[0]
    return found


def run_options() -> list[click.Option]:
    run = cli.get_command(click.Context(cli), "run")
    assert run is not None
    return [param for param in run.params if isinstance(param, click.Option)]


def flags() -> dict[str, str]:
    """``run``'s flags in the Deployment: ``--name=value``, or a bare switch (``--sharding``)."""
    args = container()["args"]
    assert args[0] == "run"
    switches = {opt for option in run_options() if option.is_flag for opt in option.opts}
    parsed: dict[str, str] = {}
    for arg in args[1:]:
        name, sep, value = arg.partition("=")
        assert sep or name in switches, f"write flags as --name=value: {arg}"
        parsed[name] = value
    return parsed


def test_gitdeploy_objects_live_in_its_namespace() -> None:
    namespace = only("Namespace")["metadata"]["name"]

    for kind in ("Deployment", "Service"):
        assert only(kind)["metadata"]["namespace"] == namespace, kind
    assert only("ServiceAccount", "gitdeploy")["metadata"]["namespace"] == namespace
    assert (
        only("Deployment")["spec"]["template"]["spec"]["serviceAccountName"]
        == (only("ServiceAccount", "gitdeploy")["metadata"]["name"])
    )


def test_namespace_enforces_the_restricted_pod_security_standard() -> None:
    labels = only("Namespace")["metadata"]["labels"]

    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_pod_runs_non_root_with_a_locked_down_security_context() -> None:
    pod = pod_spec()["securityContext"]
    box = container()["securityContext"]

    assert pod["runAsNonRoot"] is True
    assert isinstance(pod["runAsUser"], int) and pod["runAsUser"] > 0
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
    assert box["allowPrivilegeEscalation"] is False
    assert box["readOnlyRootFilesystem"] is True
    assert box["capabilities"] == {"drop": ["ALL"]}
    assert box.get("privileged", False) is False
    assert box.get("runAsUser", pod["runAsUser"]) != 0


def test_probes_use_health_endpoints_on_the_named_port() -> None:
    box = container()
    ports = {p["name"]: p["containerPort"] for p in box["ports"]}

    assert box["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert box["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert "http" in ports
    assert flags()["--listen"] == f":{ports['http']}"


def test_resources_have_requests_and_limits() -> None:
    resources = container()["resources"]

    assert {"cpu", "memory"} <= resources["requests"].keys()
    assert {"cpu", "memory"} <= resources["limits"].keys()


def test_writable_paths_are_empty_dirs_and_the_state_dir_is_one() -> None:
    volumes = {v["name"]: v for v in pod_spec()["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container()["volumeMounts"]}
    env = {e["name"]: e["value"] for e in container()["env"]}

    state_dir = env["GITDEPLOY_STATE_DIR"]
    assert "emptyDir" in volumes[mounts[state_dir]]
    assert "emptyDir" in volumes[mounts["/tmp"]]


def test_webhook_secret_file_comes_from_a_read_only_secret_volume() -> None:
    secret_file = flags()["--webhook-secret-file"]
    directory, key = posixpath.split(secret_file)
    mount = next(m for m in container()["volumeMounts"] if m["mountPath"] == directory)
    volume = next(v for v in pod_spec()["volumes"] if v["name"] == mount["name"])

    assert mount["readOnly"] is True
    assert volume["secret"]["secretName"]
    assert {"key": key, "path": key} in volume["secret"]["items"]


def test_run_flags_name_repo_and_the_managed_namespace_of_the_role() -> None:
    given = flags()

    assert given["--repo"].startswith(("https://", "ssh://"))
    assert given["--namespace"] == only("Role", "gitdeploy")["metadata"]["namespace"]
    assert given["--log-format"] == "json"


def test_service_reaches_the_pods_on_the_http_port() -> None:
    service = only("Service")
    deployment = only("Deployment")
    template_labels = deployment["spec"]["template"]["metadata"]["labels"]

    assert deployment["spec"]["selector"]["matchLabels"].items() <= template_labels.items()
    assert service["spec"]["selector"].items() <= template_labels.items()
    assert [(p["name"], p["targetPort"]) for p in service["spec"]["ports"]] == [("http", "http")]


def test_three_replicas_share_the_apps_with_leases_in_gitdeploys_namespace() -> None:
    deployment = only("Deployment")

    assert deployment["spec"]["replicas"] == 3
    assert "--sharding" in flags()
    # member Leases go to the pod's own namespace, where leader-election.yaml's Role is
    assert "--lease-namespace" not in flags() and "--no-leader-elect" not in flags()
    assert (
        only("Role", "gitdeploy-leader-election")["metadata"]["namespace"]
        == deployment["metadata"]["namespace"]
    )


def test_run_flags_exist_once_the_run_command_does() -> None:
    known = {opt for option in run_options() for opt in option.opts}

    assert set(flags()) <= known, set(flags()) - known
