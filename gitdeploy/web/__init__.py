"""The web dashboard (``gitdeploy dashboard``): an edge, as the cli, that shows what
``status`` and ``history`` compute; nothing in gitdeploy below it imports it."""
