"""gitdeploy.source layer (see DESIGN.md)."""
