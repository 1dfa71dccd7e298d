"""gitdeploy's own HTTP endpoints: health, readiness, Prometheus metrics and the git webhook receiver."""
