"""The analysis runner's pure part: conditions, the phases, and the run's state machine as Argo
Rollouts' analysis controller keeps them. The providers that measure live at the edge
(:mod:`gitdeploy.providers`)."""
