"""gitdeploy.cluster layer (see DESIGN.md).

The kubernetes package's ``__init__`` imports every part of the client (the dynamic client,
websocket streams, informers, leader election, the config loaders), about a fifth of a
second that a command such as ``gitdeploy status`` waits for and never uses. gitdeploy imports
the parts it uses by their own names (``kubernetes.client``, ``kubernetes.config``,
``kubernetes.watch``), so the package is registered here without running its ``__init__``;
any submodule still imports as usual. A process that imported kubernetes before gitdeploy keeps
the package as it is.
"""

import importlib.util
import sys


def _register_kubernetes_without_its_init() -> None:
    if "kubernetes" in sys.modules:
        return
    spec = importlib.util.find_spec("kubernetes")
    if spec is not None:  # not installed: the first import says so
        sys.modules["kubernetes"] = importlib.util.module_from_spec(spec)


_register_kubernetes_without_its_init()
