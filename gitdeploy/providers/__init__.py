"""The analysis providers: how a metric of an AnalysisTemplate is measured (a web request, a
Prometheus query), at the edge, over HTTP with httpx. What a measurement means (its conditions,
the run it belongs to) is :mod:`gitdeploy.core.analysis`'s."""
