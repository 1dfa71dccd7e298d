"""gitdeploy.localcluster layer (see DESIGN.md)."""
