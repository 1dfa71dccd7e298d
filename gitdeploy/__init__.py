"""gitdeploy: a GitOps deployment controller with its own rollout engine."""

__version__ = "0.1.0"
