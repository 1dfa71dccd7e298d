"""The rollout engine: one pass for one app, as a pure function of desired and observed state.

:func:`plan_pass` looks at what the app should run (:class:`Target`) and what the cluster runs
(:class:`Snapshot`: the app's ReplicaSets, its hook and deployer pods, its record) at time ``now``,
and returns one :class:`Step`: the actions to take now, the record to write (if anything reached an
outcome), the events to record, the status, and when to look again. It never sleeps or waits.

Where the state of a rollout lives, so that a restarted gitdeploy resumes it:

* the new ReplicaSet's annotations: revision, commit, cause, phase (``Running``, ``Complete``,
  ``Failed``), when the rollout started and when it last made progress;
* a canary's step, when its pause began, and promote and abort requests (its annotations too);
* the hook and deployer pods (named after the ReplicaSet, annotated with revision and attempt);
* the app record (outcomes of finished revisions, a rollback pin).

The record wins over an annotation: a crash between writing an outcome to the record and annotating
the ReplicaSet is repaired on the next pass. Rollout arithmetic is :mod:`gitdeploy.core.scaling.rollingmath`,
:mod:`~gitdeploy.core.scaling.proportional`, :mod:`~gitdeploy.core.scaling.progress` and
:mod:`~gitdeploy.core.scaling.retention`; this package sequences it with the strategies and hooks:

* :mod:`.inputs` and :mod:`.outputs`: Target and Snapshot in, Step (actions, events) out;
* :mod:`.context`: :class:`~.context.RolloutContext`, what a pass knows and accumulates;
* :mod:`.plan`: :func:`plan_pass`, which repairs the record, holds, starts or settles, else
  hands the pass to the strategy of :data:`~.strategies.STRATEGIES`;
* :mod:`.start` (a revision starts, a superseded one is cancelled), :mod:`.outcome` (complete,
  failed, automatic rollback, history limit), :mod:`.hookgate`, :mod:`.completion`,
  :mod:`.status`, :mod:`.settled` (settled and held apps);
* one module per strategy: :mod:`.rolling`, :mod:`.recreate`, :mod:`.custom`, and
  :mod:`.canarywalk` (a Rollout's steps, over the replica arithmetic of :mod:`.canary`).

>>> starts_rollout("5d8f", Snapshot())  # the first pass over a new app starts revision 1
True
"""

from __future__ import annotations

from gitdeploy.core.history.recovery import revision_entry_of
from gitdeploy.core.rollout.context import (
    DEFAULT_REQUEUE_SECONDS,
    STATUS_BEHIND,
    WATCHED_REQUEUE_SECONDS,
    RolloutContext,
    effective_replicas,
)
from gitdeploy.core.rollout.inputs import (
    Snapshot,
    Target,
    counts_terminating_pods,
    starts_rollout,
    wants_pod_census,
)
from gitdeploy.core.rollout.outputs import (
    Action,
    AppPhase,
    CreatePod,
    CreateReplicaSet,
    DeletePod,
    DeleteReplicaSet,
    Event,
    PatchReplicaSet,
    Step,
)
from gitdeploy.core.rollout.plan import plan_pass

__all__ = [
    "DEFAULT_REQUEUE_SECONDS",
    "STATUS_BEHIND",
    "WATCHED_REQUEUE_SECONDS",
    "Action",
    "AppPhase",
    "CreatePod",
    "CreateReplicaSet",
    "DeletePod",
    "DeleteReplicaSet",
    "Event",
    "PatchReplicaSet",
    "RolloutContext",
    "Snapshot",
    "Step",
    "Target",
    "counts_terminating_pods",
    "effective_replicas",
    "plan_pass",
    "revision_entry_of",
    "starts_rollout",
    "wants_pod_census",
]
