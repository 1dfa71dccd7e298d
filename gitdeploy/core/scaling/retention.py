"""Revision history limit: which old ReplicaSets to delete (upstream ``cleanupDeployment``).

An app keeps at most ``revision_history_limit`` old ReplicaSets for rollback. Upstream counts every
old ReplicaSet, looks at the surplus with the lowest revisions (creation time, then name, on ties),
and deletes those of them that are empty: ``spec.replicas`` 0 and no pods left (``status.replicas``
0). A non-empty one among them is skipped, not replaced by a newer empty one; it is picked up on a
later pass once it has drained. The current ReplicaSet (running the desired template) is never
deleted. ``None`` keeps everything; 0 keeps no old ReplicaSet (rollback must then rebuild the
template from git, which gitdeploy can do from its revision log).
"""

from __future__ import annotations

from collections.abc import Sequence

from gitdeploy.core.scaling.replicasets import ReplicaSetState


def select_replica_sets_to_delete(
    replica_sets: Sequence[ReplicaSetState],
    current_template_hash: str,
    revision_history_limit: int | None,
) -> tuple[ReplicaSetState, ...]:
    """The old ReplicaSets to delete now, lowest revision first.

    ``replica_sets`` are all of the app's ReplicaSets that are not already being deleted;
    ``current_template_hash`` identifies the new one, which is never selected.

    The Kubernetes documentation's app after three rollouts, limit 1: revisions 1 and 2 go.

    >>> def rs(rev, replicas=0, pods=0):
    ...     return ReplicaSetState(f"web-{rev}", f"h{rev}", rev, float(rev), replicas=replicas, current=pods)
    >>> [r.name for r in select_replica_sets_to_delete([rs(1), rs(2), rs(3), rs(4, 3, 3)], "h4", 1)]
    ['web-1', 'web-2']

    Revision 1 still runs pods: it is skipped and revision 3 is kept anyway (upstream behaviour).

    >>> [r.name for r in select_replica_sets_to_delete([rs(1, 1, 1), rs(2), rs(3), rs(4, 3, 3)], "h4", 1)]
    ['web-2']
    """
    if revision_history_limit is None:
        return ()
    if revision_history_limit < 0:
        raise ValueError(f"revision history limit must not be negative, got {revision_history_limit}")
    old = [rs for rs in replica_sets if rs.template_hash != current_template_hash]
    surplus = len(old) - revision_history_limit
    if surplus <= 0:
        return ()
    oldest_first = sorted(old, key=lambda rs: (rs.revision, rs.created_at, rs.name))
    return tuple(rs for rs in oldest_first[:surplus] if rs.replicas == 0 and rs.current == 0)
