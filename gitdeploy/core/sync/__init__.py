"""How an app compares with git and the cluster, as ``gitdeploy status`` and ``rollout status`` say.

* :mod:`.syncstate`: SYNC and HEALTH, computed from what the cluster shows;
* :mod:`.commitwait`: whether the app reflects a given commit yet (``rollout status --commit``).
"""
