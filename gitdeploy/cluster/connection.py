"""Connect the official kubernetes client to a cluster: a kubeconfig, a context, or in-cluster."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client
from urllib3.util.retry import Retry

from gitdeploy.errors import PermanentError

SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
CREDENTIALS_REFRESH_SECONDS = 30.0
"""How often at most a kubeconfig's token is looked at again. The client's loader renews a token
5 minutes before it expires, and by itself looks at it before every request, re-reading the proxy
settings of the environment each time: a fifth of the client's CPU per request."""


RETRIES = Retry(total=3, read=1, redirect=0)
"""The client's own retries: a connection that could not be made is tried again at once; a read
that timed out or broke off only once (a kept-alive connection the server closed meanwhile), after
which the call fails as a TransientError and the loop retries the app with backoff. urllib3's
default retries a stalled GET three times, holding its worker four read timeouts long."""


def new_configuration() -> client.Configuration:
    """An empty client configuration with gitdeploy's :data:`RETRIES`."""
    configuration = client.Configuration()
    configuration.retries = RETRIES
    return configuration


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
    from kubernetes import config  # the loaders (OIDC, OAuth, exec plugins): a tenth of a second

    configuration = new_configuration()
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
    if configuration.refresh_api_key_hook is not None:
        configuration.refresh_api_key_hook = throttled(
            configuration.refresh_api_key_hook, CREDENTIALS_REFRESH_SECONDS
        )
    where = f"context {context} of {kubeconfig}" if context else f"{configuration.host} ({kubeconfig})"
    return Connection(client.ApiClient(configuration), where)


def connect_with_token(server: str, token: str, ca_file: Path | None, description: str) -> Connection:
    """A client for a server whose address, bearer token and certificate gitdeploy wrote itself
    (the embedded cluster): what its kubeconfig says, without the kubeconfig loaders."""
    configuration = new_configuration()
    configuration.host = server
    configuration.api_key["BearerToken"] = f"Bearer {token}"
    configuration.ssl_ca_cert = str(ca_file) if ca_file else None
    return Connection(client.ApiClient(configuration), description)


def throttled(refresh: Callable[[Any], None], seconds: float) -> Callable[[Any], None]:
    """``refresh`` (the client's credential refresh hook), run at most once per ``seconds``. The
    loader's hook installs itself again each time it runs: the new one stays behind this one."""
    last = -float("inf")

    def refresh_now_and_then(configuration: Any) -> None:
        nonlocal last, refresh
        now = time.monotonic()
        if now - last < seconds:
            return
        last = now
        refresh(configuration)
        if configuration.refresh_api_key_hook is not refresh_now_and_then:
            refresh = configuration.refresh_api_key_hook
            configuration.refresh_api_key_hook = refresh_now_and_then

    return refresh_now_and_then
