"""``gitdeploy plan --live``: the head of a change against what the cluster runs now.

Two list calls read every managed ReplicaSet and app record (all namespaces); the head is read
from git in full (a live plan is about every app, not only the files a change touches). The
comparison itself is pure: :mod:`gitdeploy.core.planning.livebaseline` builds the baseline and
:func:`gitdeploy.core.planning.changes.plan_changes` classifies.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.desired import DesiredStateReader
from gitdeploy.controller.inspect import read_records
from gitdeploy.controller.planreader import PlanReader, snapshot
from gitdeploy.controller.rollouts import manifest_digest
from gitdeploy.core.commits import CommitInfo
from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.models import App, AppKey
from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.core.planning.changes import Plan, attach_commits, plan_changes
from gitdeploy.core.planning.livebaseline import RunningApp, live_inputs
from gitdeploy.errors import GitdeployError


def read_running(cluster: Cluster) -> list[RunningApp]:
    """Every app gitdeploy manages in the cluster: its ReplicaSets and record, sorted by app."""
    grouped: dict[AppKey, list[ObservedReplicaSet]] = defaultdict(list)
    for rs in cluster.list_replica_sets(None):
        grouped[AppKey(rs.namespace, rs.app)].append(rs)
    records, _damaged = read_records(cluster, None, None)  # a damaged record: judged by its ReplicaSets
    return [
        RunningApp(key, tuple(grouped.get(key, ())), records.get(key, AppRecord()))
        for key in sorted(grouped.keys() | records.keys())
    ]


def pins_holding(running: Iterable[RunningApp], head_apps: Sequence[App]) -> frozenset[AppKey]:
    """Apps whose rollback pin holds at the head, by the rule the loop applies
    (:func:`gitdeploy.controller.rollouts.choose_target`): the manifest is the one the pin was set
    on, and the pinned ReplicaSet still exists."""
    head = {a.key: a for a in head_apps}
    holding = set()
    for app in running:
        pin, at_head = app.record.pin, head.get(app.key)
        if pin is None or at_head is None or manifest_digest(at_head) != pin.manifest_digest:
            continue
        if any(rs.state.template_hash == pin.template_hash and rs.template for rs in app.replica_sets):
            holding.add(app.key)
    return frozenset(holding)


def plan_live(reader: PlanReader, cluster: Cluster, head: str, *, label: str) -> Plan:
    """The plan of deploying ``head`` (a full sha in the reader's mirror) onto what ``cluster`` runs.

    Each app's commits are those between the commit its running revision came from and the head
    (none when that commit is not in the repository, or the app does not run yet).
    """
    loaded = DesiredStateReader(reader.repo, reader.cache).load(head)
    head_state = snapshot(loaded)
    running = read_running(cluster)
    inputs = live_inputs(label, running, head_state.apps, pins_holding=pins_holding(running, head_state.apps))
    plan = plan_changes(inputs.baseline, replace(head_state, apps=inputs.head_apps), earlier=inputs.earlier)
    commits: dict[AppKey, tuple[CommitInfo, ...]] = {}
    for a in plan.apps:
        since = inputs.running_commits.get(a.key)
        if not since:
            continue
        try:
            commits[a.key] = reader.commits_between(since, head, a.files or (a.file,))
        except GitdeployError:
            continue  # the running commit is not in this repository (another branch, a force push)
    return attach_commits(plan, commits)
