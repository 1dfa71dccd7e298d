"""The app page's hook logs: the end of the logs of the pre, mid and post hook pods and Custom
deployer pods of the newest revisions, read from the pod log API as ``kubectl logs --tail`` does.

Each log is bounded (its last :data:`LOG_LINES` lines, at most :data:`LOG_BYTES` bytes) and shown
as text, its colour codes and control characters removed (as the tail a revision keeps). When the
pod is gone (deleted with its ReplicaSet, or by hand), the tail its revision kept in the app record
is shown if there is one, and the page says so; a log the cluster refuses to give (RBAC: the
account may not get ``pods/log``) or cannot get (the node unreachable) is a sentence saying which.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.core.history.records import RevisionEntry, plain_log
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import ObservedPod
from gitdeploy.core.rollout.hooks import DEPLOYER_ROLE
from gitdeploy.errors import ForbiddenError, GitdeployError, NotFoundError

LOG_LINES: Final = 50
LOG_BYTES: Final = 8 * 1024
REVISIONS_WITH_LOGS: Final = 3
"""Hook logs are read for the newest revisions only: each is an API call at every live refresh."""
MAX_PODS: Final = 8
PHASE_ORDER: Final = {"deployer": 0, "pre": 1, "mid": 2, "post": 3}
"""The order a revision runs them in."""


@dataclass(frozen=True)
class HookLog:
    """One hook or deployer pod of a revision and the end of its log."""

    revision: int
    phase: str
    """``pre``, ``mid``, ``post`` or ``deployer``."""
    pod: str
    outcome: str
    text: str
    note: str = ""
    """Why the live log is not shown (or where the text shown comes from); empty when it is live."""


@dataclass(frozen=True)
class _Wanted:
    revision: int
    phase: str
    pod: str
    outcome: str
    kept: str


def wanted_pods(entries: Sequence[RevisionEntry], live: Iterable[ObservedPod]) -> list[_Wanted]:
    """The hook and deployer pods of the newest revisions, newest revision first: those the record
    names, and those running now that it does not name yet. Analysis pods are not hooks."""
    newest = sorted(entries, key=lambda e: e.revision, reverse=True)[:REVISIONS_WITH_LOGS]
    shown = {e.revision for e in newest}
    found = [_Wanted(e.revision, h.phase, h.pod, h.outcome, h.log) for e in newest for h in e.hooks]
    named = {w.pod for w in found}
    for pod in live:
        hook = pod.role.startswith("hook-") or pod.role == DEPLOYER_ROLE
        if hook and pod.name not in named and (pod.revision in shown or not shown):
            found.append(_Wanted(pod.revision, pod.role.removeprefix("hook-"), pod.name, pod.phase, ""))
    found.sort(key=lambda w: (-w.revision, PHASE_ORDER.get(w.phase, len(PHASE_ORDER)), w.pod))
    return found[:MAX_PODS]


def read_hook_logs(cluster: Cluster, key: AppKey, entries: Sequence[RevisionEntry]) -> list[HookLog]:
    """The logs the app page shows (see the module's docstring)."""
    try:
        live = cluster.list_app_pods(key.namespace, key.name)
    except GitdeployError:  # may not list pods: the record still names the finished ones
        live = []
    return [_read(cluster, key.namespace, w) for w in wanted_pods(entries, live)]


def _read(cluster: Cluster, namespace: str, wanted: _Wanted) -> HookLog:
    def shown(text: str, note: str = "") -> HookLog:
        return HookLog(wanted.revision, wanted.phase, wanted.pod, wanted.outcome, text, note)

    try:
        return shown(plain_log(cluster.tail_pod_log(namespace, wanted.pod, LOG_LINES, LOG_BYTES)))
    except NotFoundError:
        if wanted.kept:
            return shown(wanted.kept, f"pod {wanted.pod} is gone; the end of its log kept on revision "
                         f"{wanted.revision} follows")  # fmt: skip
        return shown(
            "", f"pod {wanted.pod} is gone (deleted with its ReplicaSet, or by hand), and its log with it"
        )
    except ForbiddenError:
        note = (f"the cluster refuses this dashboard the log of pod {wanted.pod}: its account may not "
                f"get pods/log in namespace {namespace} (RBAC)")  # fmt: skip
        return shown(wanted.kept, note + ("; the end kept on the revision follows" if wanted.kept else ""))
    except GitdeployError as unavailable:
        return shown(wanted.kept, f"the log of pod {wanted.pod} could not be read: {unavailable.message}")
