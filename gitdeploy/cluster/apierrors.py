"""Kubernetes API and network errors as :mod:`gitdeploy.errors` errors, with what to do about each.

Every call of the cluster adapter runs inside :func:`translated`, so no ``ApiException`` nor urllib3
error leaves :mod:`gitdeploy.cluster`: a 404 is a NotFoundError, a stale write a ConflictError, a
refusal that only a person can lift a PermanentError (with the fix), anything that passes by itself
(a 5xx, a timeout, an answer cut mid-way) a TransientError the loop retries with backoff.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)

from gitdeploy.core.observed import PodSpec
from gitdeploy.core.rollout.hooks import DEPLOYER_ROLE
from gitdeploy.errors import (
    AlreadyExistsError,
    ConflictError,
    ExpiredError,
    ForbiddenError,
    GitdeployError,
    NotFoundError,
    PermanentError,
    TransientError,
)


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
        return ForbiddenError(
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
def translated(what: str, pod: PodSpec | None = None) -> Iterator[None]:
    """API and network errors of the block as ours; ``pod``: the pod the block creates."""
    try:
        yield
    except ApiException as bad:
        raise _api_error(bad, what, pod) from bad
    except (HTTPError, OSError, json.JSONDecodeError) as bad:
        raise _network_error(bad, what) from bad
