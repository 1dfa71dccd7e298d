"""Connect the official kubernetes client to a cluster: a kubeconfig, a context, or in-cluster."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client, config

from gitdeploy.errors import PermanentError

SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


@dataclass(frozen=True)
class Connection:
    """An API client and a sentence saying which cluster it talks to."""

    api: client.ApiClient
    description: str


def in_cluster_available() -> bool:
    return "KUBERNETES_SERVICE_HOST" in os.environ and SERVICE_ACCOUNT_TOKEN.exists()


def connect(kubeconfig: str | Path | None = None, context: str | None = None) -> Connection:
    """A client for the kubeconfig (and context) given, else the pod's service account.

    Every client has its own configuration object: nothing is written to the kubernetes package's
    global default, so several clusters can be used in one process (tests do).
    """
    configuration = client.Configuration()
    if kubeconfig is None and context is None and in_cluster_available():
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        return Connection(client.ApiClient(configuration), "the cluster this pod runs in (service account)")
    if kubeconfig is None:
        raise PermanentError(
            "no kubeconfig given", hint="pass --kubeconfig, set KUBECONFIG, or use the embedded cluster"
        )
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig), context=context, client_configuration=configuration
        )
    except (config.ConfigException, OSError) as bad:
        raise PermanentError(
            f"cannot use kubeconfig {kubeconfig}: {bad}",
            hint="check the file and the --context name (kubectl config get-contexts)",
        ) from bad
    where = f"context {context} of {kubeconfig}" if context else f"{configuration.host} ({kubeconfig})"
    return Connection(client.ApiClient(configuration), where)
