"""The HTTP front of the embedded cluster: who a request is, where it goes and whether it may.

The wire is httpwire.py's, the paths routing.py's; reads are answered in apireads.py, writes in
apiwrites.py, discovery, OpenAPI, access reviews and test support in nonresource.py.

:class:`LocalCluster` is the object to use in process::

    cluster = LocalCluster(state_dir, clock=FakeClock()).start()
    ...  # cluster.url, cluster.token, cluster.kubeconfig_path, cluster.stats, cluster.write_gate
    cluster.stop()

It binds to 127.0.0.1 only, and every request must carry ``Authorization: Bearer <token>``: the
cluster's ``token`` (its admin, allowed everything) or its ``service_account_token`` (authorised by
the RBAC of ``access``, see access.py).
Before serving any read it materialises the simulation transitions that are due by the clock (a
write does so in its own transaction), so reads always see pods and ReplicaSets as of
``clock.now()``; between requests a thread of its own does so when they are due (within 0.2 s on a
fake clock), so that watches hear of them (see kubelet.py).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import secrets
import socket
import ssl
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from gitdeploy.clock import Clock, SystemClock
from gitdeploy.localcluster.access import Access, authorise, request_info
from gitdeploy.localcluster.apierrors import ApiError, status_object
from gitdeploy.localcluster.apireads import ApiReads
from gitdeploy.localcluster.apiwrites import ApiWrites
from gitdeploy.localcluster.config import SimulationConfig
from gitdeploy.localcluster.httpwire import ClusterServer
from gitdeploy.localcluster.kubeconfig import load_or_create_token, write_kubeconfig
from gitdeploy.localcluster.kubelet import Kubelet
from gitdeploy.localcluster.nonresource import NonResourceEndpoints
from gitdeploy.localcluster.registry import Registry
from gitdeploy.localcluster.resources import RESOURCES
from gitdeploy.localcluster.routing import parse_route, request_verb
from gitdeploy.localcluster.stats import WRITE_VERBS, RequestStats
from gitdeploy.localcluster.store import Store, WatchWindow
from gitdeploy.localcluster.tlscert import ensure_certificate
from gitdeploy.localcluster.writegate import WriteGate

__all__ = ["LocalCluster"]

LOOPBACK = "127.0.0.1"


class _Handler(ApiReads, ApiWrites, NonResourceEndpoints):
    """One connection's requests: who asks (its token), what it asks (its route and verb), and
    whether it may; then the read, the write or the other endpoint that answers it."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        cluster = self.server.cluster
        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query, keep_blank_values=True).items()}
        self._body_read = False
        self._asked_write: tuple[str, str, str] | None = None
        try:
            self._access = cluster._identify(self.fields.get("authorization", ""))
            self._route(cluster, method, url.path, query)
            if self._asked_write is not None:
                cluster.stats.wrote(self.fields.get("user-agent", ""), *self._asked_write, code=200)
        except ApiError as problem:
            if self._asked_write is not None:
                cluster.stats.wrote(self.fields.get("user-agent", ""), *self._asked_write, code=problem.code)
            with contextlib.suppress(ApiError):
                self._read_body()  # a refused request's body must not be read as the next request
            self._send_json(problem.code, problem.to_status())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as problem:  # an internal error must still answer as the API does
            cluster._log(f"internal error on {method} {self.path}: {problem!r}")
            self._send_json(500, status_object(500, "InternalError", f"internal error: {problem}"))

    def _route(self, cluster: LocalCluster, method: str, path: str, query: dict[str, str]) -> None:
        if self._route_beside_resources(cluster, method, path):
            return
        asked = request_info(method, path, query.get("watch") in ("1", "true")) if self._access else None
        if asked is not None:
            authorise(self._access, asked)
        route = parse_route(path)
        if route is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        verb = request_verb(method, route, query)
        cluster.stats.record(verb, route.resource_label, self.fields.get("user-agent", ""))
        if verb in WRITE_VERBS:
            where = "/".join(part for part in (route.namespace, route.name) if part)
            self._asked_write = (verb, route.resource_label, where)
        if verb in ("get", "list", "watch"):  # a write fires what is due in its own transaction
            cluster.registry.materialise()
        if verb == "watch":
            self._watch(cluster, route, query)
        elif verb == "list":
            self._list(cluster, route, query)
        elif verb == "get":
            self._get(cluster, route, query)
        else:
            self._write_through_gate(cluster, verb, route, query)


class LocalCluster:
    """An embedded cluster serving the state in ``state_dir`` over HTTP on 127.0.0.1.

    ``tls`` serves HTTPS with a self-signed certificate (``ca_path``), as the daemon does
    because kubectl sends no token over plain HTTP; in-process tests may use plain HTTP.
    ``clock`` drives the simulation (share a ``FakeClock`` with the code under test);
    ``config`` sets the simulation knobs; ``watch_window`` how much watch history each resource
    keeps (by default as kube-apiserver's watch cache does); ``port`` 0 picks a free port (a previous port is
    tried first by the daemon so addresses survive restarts when possible).
    """

    def __init__(
        self,
        state_dir: Path,
        *,
        clock: Clock | None = None,
        config: SimulationConfig | None = None,
        port: int = 0,
        watch_window: WatchWindow | None = None,
        write_kubeconfig_file: bool = True,
        tls: bool = False,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.clock: Clock = clock or SystemClock()
        self.config = config or SimulationConfig()
        self.stats = RequestStats()
        self.access: Access | None = None
        """The RBAC of the ServiceAccount whose token is ``service_account_token`` (gitdeploy's,
        from deploy/ in the tests that model production): what it is not granted is 403 Forbidden,
        in a real API server's words. None: that token is allowed nothing but discovery."""
        self.service_account_token = secrets.token_urlsafe(32)
        self.write_gate = WriteGate()
        self.store = Store(
            self.state_dir / "cluster.db", watch_window=watch_window, clock=self.clock.now, log=self._log
        )
        self.registry = Registry(self.store, self.clock, self.config)
        self.token = load_or_create_token(self.state_dir)
        self.kubeconfig_path = self.state_dir / "kubeconfig"
        self._port = port
        self.tls = tls
        self.ca_path: Path | None = None
        self._write_kubeconfig = write_kubeconfig_file
        self._server: ClusterServer | None = None
        self._thread: threading.Thread | None = None
        self._kubelet = Kubelet(self.registry, self._log)
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> LocalCluster:
        """Bind, create the default namespaces, write the kubeconfig and serve in a thread."""
        self.registry.bootstrap()
        try:
            server = ClusterServer((LOOPBACK, self._port), _Handler)
        except OSError:
            if not self._port:
                raise
            server = ClusterServer((LOOPBACK, 0), _Handler)
        server.cluster = self
        ca_pem: str | None = None
        if self.tls:
            cert, key = ensure_certificate(self.state_dir)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            server.socket = context.wrap_socket(
                server.socket, server_side=True, do_handshake_on_connect=False
            )
            self.ca_path = cert
            ca_pem = cert.read_text(encoding="utf-8")
        self._server = server
        if self._write_kubeconfig:
            write_kubeconfig(self.kubeconfig_path, self.url, self.token, ca_pem=ca_pem)
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="localcluster-http", daemon=True
        )
        self._thread.start()
        self._kubelet.start()
        return self

    def stop(self) -> None:
        """Stop serving, close open connections (ending watches) and the database."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            with self._connections_lock:
                connections = list(self._connections)
            for connection in connections:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._kubelet.stop()
        self.store.close()

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- facts ---------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the cluster is not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{LOOPBACK}:{self.port}"

    def info(self) -> dict[str, Any]:
        """What ``GET /gitdeploy/v1/info`` answers: address, state dir and simulation knobs."""
        return {
            "url": self.url,
            "stateDir": str(self.state_dir),
            "kubeconfig": str(self.kubeconfig_path),
            "config": json.loads(self.config.to_json()),
            "objects": self.counts(),
        }

    def counts(self) -> dict[str, int]:
        """Number of stored objects per resource (for ``gitdeploy cluster status``)."""
        with self.store.read() as txn:
            return {r.qualified: txn.count(r.key) for r in RESOURCES}

    # -- internals -------------------------------------------------------------------------------

    def _identify(self, header: str) -> Access | None:
        """Who a request is: None for the admin token, the ServiceAccount's access for its token
        (empty when ``access`` is unset); 401 for anything else."""
        scheme, _, token = header.partition(" ")
        given = token.strip().encode()
        if scheme.lower() == "bearer" and hmac.compare_digest(given, self.token.encode()):
            return None
        if scheme.lower() == "bearer" and hmac.compare_digest(given, self.service_account_token.encode()):
            return self.access or Access("gitdeploy", "gitdeploy", ())
        raise ApiError(401, "Unauthorized", "Unauthorized")

    def _track(self, connection: socket.socket, *, add: bool) -> None:
        with self._connections_lock:
            if add:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _log(self, message: str) -> None:
        print(f"localcluster: {message}", file=sys.stderr, flush=True)
