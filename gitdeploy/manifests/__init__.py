"""gitdeploy.manifests layer (see DESIGN.md)."""
