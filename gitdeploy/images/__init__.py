"""gitdeploy.images layer (see DESIGN.md)."""
