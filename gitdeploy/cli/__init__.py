"""gitdeploy.cli layer (see DESIGN.md)."""
