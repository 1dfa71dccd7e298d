"""The HTTP front of the embedded cluster: routing, authentication, JSON in and out.

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
import functools
import hmac
import itertools
import json
import secrets
import socket
import ssl
import sys
import threading
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from gitdeploy.clock import Clock, SystemClock
from gitdeploy.localcluster import discovery, openapidocs
from gitdeploy.localcluster.access import ACCESS_REVIEW_PATH, Access, authorise, request_info, review_access
from gitdeploy.localcluster.apierrors import ApiError, status_object
from gitdeploy.localcluster.config import SimulationConfig
from gitdeploy.localcluster.fieldvalidation import refuse_unknown_fields
from gitdeploy.localcluster.kubeconfig import load_or_create_token, write_kubeconfig
from gitdeploy.localcluster.kubelet import Kubelet
from gitdeploy.localcluster.ownerrefs import admit_owner_references
from gitdeploy.localcluster.protowire import PROTOBUF, access_review_from_protobuf, object_from_protobuf
from gitdeploy.localcluster.registry import Registry
from gitdeploy.localcluster.resources import RESOURCES, ResourceType, find_resource
from gitdeploy.localcluster.stats import RequestStats
from gitdeploy.localcluster.store import Store, WatchWindow, dumps
from gitdeploy.localcluster.tables import TableRequest, table_event, table_request, to_table, without_headers
from gitdeploy.localcluster.tlscert import ensure_certificate
from gitdeploy.localcluster.watch import ListResult, Query, list_objects, watch_events
from gitdeploy.localcluster.writegate import GatePhase, WriteGate

__all__ = ["LocalCluster", "Route", "parse_route"]

LOOPBACK = "127.0.0.1"
_DEFAULT_WATCH_SECONDS = 1800
MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024
"""The API server's limit on a request body (``MaxRequestBodyBytes``): 413 beyond it."""
_MAX_HEADER_LINE = 65536  # the stdlib's limits
_MAX_HEADERS = 100


@dataclass(frozen=True)
class Route:
    """A parsed API path."""

    resource: ResourceType
    namespace: str | None
    name: str | None
    subresource: str

    @property
    def resource_label(self) -> str:
        """``replicasets`` or ``replicasets/scale``, as counted in the request stats."""
        return f"{self.resource.plural}/{self.subresource}" if self.subresource else self.resource.plural


def parse_route(path: str) -> Route | None:
    """Parse ``/api/v1/...`` or ``/apis/<group>/<version>/...`` into a :class:`Route`; None if not one."""
    parts = [part for part in path.split("/") if part]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        inner = find_resource(group, version, rest[2])
        if inner is not None and inner.namespaced:
            namespace, rest = rest[1], rest[2:]
    resource = find_resource(group, version, rest[0])
    if resource is None or len(rest) > 3:
        return None
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else ""
    if subresource and subresource not in resource.subresources:
        return None
    if resource.namespaced and name is not None and namespace is None:
        return None
    return Route(resource, namespace, name, subresource)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    cluster: LocalCluster

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (common at shutdown) is not an error; anything else is logged."""
        problem = sys.exc_info()[1]
        if isinstance(problem, ConnectionError):
            return
        self.cluster._log(f"error while serving {client_address}: {problem!r}")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stalls on a watch's small writes
    wbufsize = 64 * 1024  # a response leaves in one write, when handle_one_request flushes
    server: _Server
    raw_requestline: bytes
    fields: dict[str, str]
    """The request's headers by lower-case name (``headers`` is not set for most requests)."""
    _body_read: bool = False
    """The body of the request being answered has been read (each request's is read once)."""
    _access: Access | None = None
    """Who the request being answered is: None for the admin, else a ServiceAccount's RBAC."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the daemon's log is for problems, not for every request."""

    def parse_request(self) -> bool:
        """The request line and headers of an ``HTTP/1.x`` request, split by hand: the stdlib
        parses headers with the ``email`` package, which costs more than serving a small request.
        Anything else (another version, a malformed request line) goes to the stdlib's parser."""
        requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        words = requestline.split()
        if len(words) != 3 or words[2] not in ("HTTP/1.1", "HTTP/1.0"):
            parsed = super().parse_request()
            self.fields = {name.lower(): value for name, value in self.headers.items()} if parsed else {}
            return parsed
        self.requestline = requestline
        self.command, path, self.request_version = words
        self.path = "/" + path.lstrip("/") if path.startswith("//") else path
        fields: dict[str, str] = {}
        for _ in range(_MAX_HEADERS + 1):
            line = self.rfile.readline(_MAX_HEADER_LINE + 1)
            if len(line) > _MAX_HEADER_LINE:
                self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long")
                return False
            if line in (b"\r\n", b"\n", b""):
                break
            name, colon, value = line.decode("iso-8859-1").partition(":")
            if not colon or not name or name[0] in " \t":  # no name, or obsolete line folding
                self.send_error(HTTPStatus.BAD_REQUEST, "Bad header line")
                return False
            fields[name.strip().lower()] = value.strip()
        else:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers")
            return False
        self.fields = fields
        connection = fields.get("connection", "").lower()
        self.close_connection = connection == "close" or (
            self.request_version == "HTTP/1.0" and connection != "keep-alive"
        )
        if fields.get("expect", "").lower() == "100-continue" and self.request_version == "HTTP/1.1":
            return self.handle_expect_100()
        return True

    def setup(self) -> None:
        super().setup()
        self.server.cluster._track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.cluster._track(self.connection, add=False)

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

    # -- plumbing ------------------------------------------------------------------------------

    def _send(self, code: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, code: int, value: Any) -> None:
        stored = self.server.cluster.store.encoded(value) if isinstance(value, dict) else None
        self._send(code, (stored or dumps(value)).encode())

    def _read_raw(self) -> bytes:
        length = int(self.fields.get("content-length") or 0)
        if length > MAX_REQUEST_BODY_BYTES and not self._body_read:
            self._body_read = True
            while length > 0:  # read and drop it, so that the answer reaches the client
                chunk = self.rfile.read(min(length, 1 << 16))
                if not chunk:
                    break
                length -= len(chunk)
            raise ApiError(
                413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}"
            )
        raw = self.rfile.read(length) if length and not self._body_read else b""
        self._body_read = True
        return raw

    def _read_body(self) -> Any:
        raw = self._read_raw()
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as problem:
            raise ApiError.bad_request(f"the request body is not JSON: {problem}") from problem

    def _read_write_body(self, route: Route) -> Any:
        """A write's body: JSON, or protobuf for the few kinds kubectl's typed client sends so."""
        if self.fields.get("content-type", "").startswith(PROTOBUF):
            return object_from_protobuf(route.resource.kind, self._read_raw())
        return self._read_body()

    def _dispatch(self, method: str) -> None:
        cluster = self.server.cluster
        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query, keep_blank_values=True).items()}
        self._body_read = False
        try:
            self._access = cluster._identify(self.fields.get("authorization", ""))
            self._route(cluster, method, url.path, query)
        except ApiError as problem:
            with contextlib.suppress(ApiError):
                self._read_body()  # a refused request's body must not be read as the next request
            self._send_json(problem.code, problem.to_status())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as problem:  # an internal error must still answer as the API does
            cluster._log(f"internal error on {method} {self.path}: {problem!r}")
            self._send_json(500, status_object(500, "InternalError", f"internal error: {problem}"))

    def _route_beside_resources(self, cluster: LocalCluster, method: str, path: str) -> bool:
        """Answer a request for something other than a resource (gitdeploy's own test support,
        OpenAPI, discovery, access reviews); False if ``path`` is a resource's."""
        if path.startswith("/gitdeploy/v1/"):
            self._gitdeploy(cluster, method, path)
            return True
        if path.startswith(openapidocs.PREFIX) and method == "GET":
            self._openapi(cluster, path)
            return True
        document = self._discovery(path) if method == "GET" else None
        if document is not None:
            cluster.stats.record("get", "discovery")
            self._send_json(200, document)
            return True
        if path.rstrip("/") == ACCESS_REVIEW_PATH and method == "POST":
            cluster.stats.record("create", "selfsubjectaccessreviews")
            protobuf = self.fields.get("content-type", "").startswith(PROTOBUF)  # kubectl sends it so
            review = access_review_from_protobuf(self._read_raw()) if protobuf else self._read_body()
            self._send_json(201, review_access(self._access, review))
            return True
        return False

    def _route(self, cluster: LocalCluster, method: str, path: str, query: dict[str, str]) -> None:
        if self._route_beside_resources(cluster, method, path):
            return
        asked = request_info(method, path, query.get("watch") in ("1", "true")) if self._access else None
        if asked is not None:
            authorise(self._access, asked)
        route = parse_route(path)
        if route is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        verb = self._verb(method, route, query)
        cluster.stats.record(verb, route.resource_label)
        if verb in ("get", "list", "watch"):  # a write fires what is due in its own transaction
            cluster.registry.materialise()
        namespace = route.namespace or ""
        if verb == "watch":
            self._watch(cluster, route, query)
        elif verb == "list":
            result = list_objects(
                cluster.store,
                route.resource,
                route.namespace,
                Query.parse(query.get("labelSelector"), query.get("fieldSelector")),
                limit=int(query["limit"])
                if query.get("limit", "").isdigit() and int(query["limit"]) > 0
                else None,
                continue_token=query.get("continue") or None,
            )
            self._send_list(cluster, route.resource, result, self._table_request(query))
        elif verb == "get":
            self._get(cluster, route, query)
        else:
            label = f"{verb} {route.resource_label} {namespace}/{route.name or ''}"
            body = self._read_write_body(route)  # before the gate: a dropped write leaves no bytes unread
            options = body if verb.startswith("delete") and isinstance(body, dict) else {}
            dry = query.get("dryRun") == "All" or "All" in (options.get("dryRun") or ())
            dry_run = cluster.store.dry_run() if dry else contextlib.nullcontext()
            with cluster.write_gate.passage(label, route.namespace), dry_run:
                code, answer = self._write(cluster, verb, route, query, body)
            self._send_json(code, answer)

    def _get(self, cluster: LocalCluster, route: Route, query: dict[str, str]) -> None:
        registry, namespace, name = cluster.registry, route.namespace or "", str(route.name)
        if route.subresource == "log":
            self._send(200, registry.pod_log(namespace, name).encode(), "text/plain")
        elif route.subresource == "scale":
            self._send_json(200, registry.get_scale(namespace, name))
        else:
            obj = registry.get(route.resource, namespace, name)
            table = self._table_request(query)
            if table is not None:
                meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
                self._send_json(200, to_table(route.resource, [obj], cluster.clock.now(), meta, table))
            else:
                self._send_json(200, obj)

    def _write(
        self, cluster: LocalCluster, verb: str, route: Route, query: dict[str, str], body: Any
    ) -> tuple[int, Any]:
        """Apply a create, update, patch, delete or deletecollection: the status code and body."""
        registry, namespace = cluster.registry, route.namespace or ""
        strict = query.get("fieldValidation") == "Strict" and not route.subresource
        if strict and verb in ("create", "update", "patch"):
            refuse_unknown_fields(route.resource, verb, self.fields.get("content-type", ""), body)
        access, subresource = self._access, route.subresource or ""
        admit = (
            None
            if access is None
            else functools.partial(admit_owner_references, access, route.resource, subresource)
        )
        if verb == "create":
            return 201, registry.create(route.resource, namespace, body, admit)
        if verb == "update":
            return 200, registry.replace(
                route.resource, namespace, str(route.name), body, route.subresource, admit
            )
        if verb == "patch":
            content_type = self.fields.get("content-type", "")
            return 200, registry.patch(
                route.resource, namespace, str(route.name), content_type, body, route.subresource, admit
            )
        if verb == "delete":
            options = dict(body) if isinstance(body, dict) else {}
            if str(query.get("gracePeriodSeconds", "")).isdigit():
                options["gracePeriodSeconds"] = int(str(query["gracePeriodSeconds"]))
            deleted = registry.delete(
                route.resource,
                namespace,
                str(route.name),
                options,
                query.get("propagationPolicy"),
            )
            return 200, deleted
        selection = Query.parse(query.get("labelSelector"), query.get("fieldSelector"))
        removed = registry.delete_collection(
            route.resource,
            route.namespace,
            lambda obj: selection.matches_row(dumps(obj["metadata"].get("labels") or {}), dumps(obj)),
        )
        items = {"kind": f"{route.resource.kind}List", "apiVersion": route.resource.api_version}
        return 200, {**items, "metadata": {}, "items": removed}

    @staticmethod
    def _verb(method: str, route: Route, query: dict[str, str]) -> str:
        if method == "GET":
            if route.name is None:
                return "watch" if query.get("watch") in ("1", "true", "True") else "list"
            return "get"
        if route.subresource == "log":
            raise ApiError(405, "MethodNotAllowed", "the log subresource is read-only")
        if method == "POST" and route.name is None:
            return "create"
        if method == "PUT" and route.name is not None:
            return "update"
        if method == "PATCH" and route.name is not None:
            return "patch"
        if method == "DELETE":
            return "delete" if route.name is not None else "deletecollection"
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on this path")

    def _openapi(self, cluster: LocalCluster, path: str) -> None:
        cluster.stats.record("get", "openapi")
        if path.rstrip("/") == openapidocs.PREFIX:
            self._send_json(200, openapidocs.index())
            return
        body = openapidocs.document(path)
        if body is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        self._send(200, body)

    def _discovery(self, path: str) -> dict[str, Any] | None:
        clean = "/" + path.strip("/")
        if clean == "/version":
            return discovery.version_info()
        if clean == "/api":
            host, port = self.server.server_address[:2]
            return discovery.api_versions(f"{host!s}:{port}")
        if clean == "/apis":
            return discovery.api_group_list()
        if clean == "/api/v1":
            return discovery.api_resource_list("v1")
        parts = clean.strip("/").split("/")
        if parts[0] == "apis" and len(parts) == 2:
            return discovery.api_group(parts[1])
        if parts[0] == "apis" and len(parts) == 3:
            return discovery.api_resource_list(f"{parts[1]}/{parts[2]}")
        return None

    def _table_request(self, query: dict[str, str]) -> TableRequest | None:
        return table_request(self.fields.get("accept", ""), query.get("includeObject"))

    def _send_list(
        self, cluster: LocalCluster, resource: ResourceType, result: ListResult, table: TableRequest | None
    ) -> None:
        if table is not None:
            items = [json.loads(body) for body in result.bodies]
            self._send_json(200, to_table(resource, items, cluster.clock.now(), result.list_meta(), table))
        else:
            self._send(200, result.to_json(resource).encode())

    def _watch(self, cluster: LocalCluster, route: Route, query: dict[str, str]) -> None:
        table = self._table_request(query)
        timeout = float(query.get("timeoutSeconds") or _DEFAULT_WATCH_SECONDS)
        deadline = threading.Event()
        timer = threading.Timer(timeout, deadline.set)
        timer.daemon = True
        timer.start()
        events = watch_events(
            cluster.store,
            route.resource,
            route.namespace,
            Query.parse(query.get("labelSelector"), query.get("fieldSelector")),
            query.get("resourceVersion"),
            keep_going=lambda: not deadline.is_set() and not cluster._stopping.is_set(),
        )
        try:
            first = next(events, None)  # errors (a bad selector...) still answer with a Status
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            pending = [first] if first is not None else []
            for event in itertools.chain(pending, events):
                line = event
                if table is not None:  # a Table per event, as kubectl get -w asks
                    line = table_event(route.resource, event, cluster.clock.now(), table)
                    table = without_headers(table)
                self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        finally:
            timer.cancel()

    def _gitdeploy(self, cluster: LocalCluster, method: str, path: str) -> None:
        clean = path.rstrip("/")
        if clean == "/gitdeploy/v1/stats" and method == "GET":
            self._send_json(200, cluster.stats.to_json())
        elif (clean == "/gitdeploy/v1/stats" and method == "DELETE") or (
            clean == "/gitdeploy/v1/stats/reset" and method == "POST"
        ):
            cluster.stats.reset()
            self._send_json(200, cluster.stats.to_json())
        elif clean == "/gitdeploy/v1/writegate":
            self._write_gate(cluster, method)
        elif clean == "/gitdeploy/v1/info" and method == "GET":
            self._send_json(200, cluster.info())
        else:
            raise ApiError(404, "NotFound", f"no such gitdeploy endpoint: {method} {path}")

    def _write_gate(self, cluster: LocalCluster, method: str) -> None:
        """Test support (see :mod:`gitdeploy.localcluster.writegate`): PUT arms, GET tells, DELETE disarms."""
        gate = cluster.write_gate
        if method == "PUT":
            body = self._read_body()
            if not isinstance(body, dict):
                raise ApiError.bad_request('expected {"at": N, "phase": "before"|"after", "namespace": NS}')
            try:
                at, phase = int(body.get("at", 0)), GatePhase(str(body.get("phase", "before")))
            except ValueError as problem:
                raise ApiError.bad_request(f"bad write gate: {problem}") from problem
            namespace = body.get("namespace")
            gate.arm(at, phase, str(namespace) if namespace is not None else None)
        elif method == "DELETE":
            gate.disarm()
        elif method != "GET":
            raise ApiError(405, "MethodNotAllowed", f"{method} /gitdeploy/v1/writegate")
        self._send_json(200, gate.to_json())


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
        self.store = Store(self.state_dir / "cluster.db", watch_window=watch_window, clock=self.clock.now)
        self.registry = Registry(self.store, self.clock, self.config)
        self.token = load_or_create_token(self.state_dir)
        self.kubeconfig_path = self.state_dir / "kubeconfig"
        self._port = port
        self.tls = tls
        self.ca_path: Path | None = None
        self._write_kubeconfig = write_kubeconfig_file
        self._server: _Server | None = None
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
            server = _Server((LOOPBACK, self._port), _Handler)
        except OSError:
            if not self._port:
                raise
            server = _Server((LOOPBACK, 0), _Handler)
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
