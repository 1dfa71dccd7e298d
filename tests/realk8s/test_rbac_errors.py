"""What gitdeploy says when the API server refuses its ServiceAccount, on the real control plane.

A RoleBinding applied before its Role (or an API server whose RBAC cache is still filling after a
start) makes every request a 403 whose message ends in ``RBAC: role... "gitdeploy" not found``.
That is not a permission gitdeploy lacks: it says which Role is missing, retries, and deploys once
the Role is there.
"""

from __future__ import annotations

import json
import re

import pytest

from gitdeploy.core.models import AppKey
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import DEPLOY, ControlPlane
from tests.realk8s.gitdeploy_cli import synced
from tests.realk8s.manifests import deployment, settings

pytestmark = pytest.mark.usefixtures("isolated_git_config")


def apply_part(control_plane: ControlPlane, namespace: str, kind: str) -> None:
    """Only the document of ``kind`` from deploy/rbac.yaml, in ``namespace``."""
    text = re.sub(
        r"(?m)^(\s*)namespace: apps$", rf"\1namespace: {namespace}", (DEPLOY / "rbac.yaml").read_text()
    )
    [part] = [doc for doc in text.split("\n---\n") if re.search(rf"(?m)^kind: {kind}$", doc)]
    control_plane.kubectl("apply", "-f", "-", stdin=part)


def test_a_binding_whose_role_is_missing_is_named_and_retried_not_called_a_missing_permission(
    control_plane: ControlPlane, git_remote: GitRemote, gitdeploy: RunCli
) -> None:
    # Given a namespace with deploy/rbac.yaml's RoleBinding but not yet its Role
    namespace = "rbac-order"
    control_plane.kubectl("create", "namespace", namespace)
    apply_part(control_plane, namespace, "RoleBinding")
    git_remote.commit_and_push(
        "web 1",
        {"gitdeploy.yaml": settings(namespace), "apps/web.yaml": deployment("web", "registry.test/web:1", 1)},
    )

    # When gitdeploy syncs, every request is refused
    refused = gitdeploy(
        "sync", "--repo", git_remote.url, "--wait", "--timeout", "10s", "-o", "json", timeout=120
    )

    # Then the app's message names the missing Role and the way to apply it, as a retried error
    assert refused.returncode == 1, refused.stdout + refused.stderr
    (report,) = json.loads(refused.stdout)
    assert report["app"] == str(AppKey(namespace, "web"))
    message = report["message"]
    assert 'names the Role "gitdeploy", which the API server cannot find' in message, message
    assert "deploy/rbac.yaml | kubectl apply -f -" in message, message
    assert "lacks a permission" not in message

    # When the Role is applied, the next sync deploys
    apply_part(control_plane, namespace, "Role")
    synced(gitdeploy, git_remote)
    control_plane.kubectl("delete", "namespace", namespace, "--wait=false")
