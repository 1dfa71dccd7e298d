"""The API server's answers beside resources: discovery, OpenAPI documents, access reviews, and
gitdeploy's own test support under ``/gitdeploy/v1/`` (request stats, the write gate, info)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitdeploy.localcluster import discovery, openapidocs
from gitdeploy.localcluster.access import ACCESS_REVIEW_PATH, review_access
from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.httpwire import HttpWire
from gitdeploy.localcluster.protowire import PROTOBUF, access_review_from_protobuf
from gitdeploy.localcluster.writegate import GatePhase

if TYPE_CHECKING:
    from gitdeploy.localcluster.server import LocalCluster

__all__ = ["NonResourceEndpoints"]


class NonResourceEndpoints(HttpWire):
    """Requests for something other than a resource, answered on the wire of :class:`HttpWire`."""

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
            cluster.stats.record("get", "discovery", self.fields.get("user-agent", ""))
            self._send_json(200, document)
            return True
        if path.rstrip("/") == ACCESS_REVIEW_PATH and method == "POST":
            cluster.stats.record("create", "selfsubjectaccessreviews", self.fields.get("user-agent", ""))
            protobuf = self.fields.get("content-type", "").startswith(PROTOBUF)  # kubectl sends it so
            review = access_review_from_protobuf(self._read_raw()) if protobuf else self._read_body()
            self._send_json(201, review_access(self._access, review))
            return True
        return False

    def _openapi(self, cluster: LocalCluster, path: str) -> None:
        cluster.stats.record("get", "openapi", self.fields.get("user-agent", ""))
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
