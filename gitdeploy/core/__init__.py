"""gitdeploy.core layer (see DESIGN.md)."""
