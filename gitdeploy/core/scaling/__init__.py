"""Replica arithmetic: the Kubernetes deployment controller's sums, and the status they yield.

* :mod:`.replicasets`: what the math knows about one ReplicaSet, and the scale actions it plans;
* :mod:`.rollingmath`: fenceposts, the new ReplicaSet's size, the scale-down budget, one Rolling or
  Recreate step;
* :mod:`.proportional`: resizing an app while more than one ReplicaSet runs pods;
* :mod:`.retention`: which old ReplicaSets the revision history limit deletes;
* :mod:`.progress`: replica counts, completeness and the Available/Progressing conditions.

The strategies of :mod:`gitdeploy.core.rollout` are built from these functions.
"""
