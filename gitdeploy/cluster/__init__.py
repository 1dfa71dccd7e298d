"""gitdeploy.cluster layer (see DESIGN.md)."""
