"""An app's history: the app record, its rebuild from ReplicaSets, and rollback as record changes.

* :mod:`.records`: the app record, the durable revision log and control state;
* :mod:`.recovery`: rebuilding a record from the app's ReplicaSets after it was lost;
* :mod:`.control`: what ``gitdeploy rollback`` and ``gitdeploy deploy`` write into a record for the
  loop to carry out (the loop's side is :mod:`gitdeploy.controller.rollback`).
"""
