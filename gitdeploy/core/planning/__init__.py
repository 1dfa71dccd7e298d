"""Pull-request planning: what merging a change will do, for ``gitdeploy plan``.

* :mod:`.changes`: the classification of every app a change touches;
* :mod:`.livebaseline`: the baseline of ``plan --live``, from what the cluster runs (the loop's
  side is :mod:`gitdeploy.controller.liveplan`).

The field-level template diff it shows is :mod:`gitdeploy.core.templatediff`, shared with drift.
"""
