"""gitdeploy.controller layer (see DESIGN.md)."""
