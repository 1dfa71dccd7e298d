"""The API server's reads of resources: get (with the log and scale subresources), list (paged),
and watch (a chunked stream of events until its timeout); each as JSON, or as a Table when asked."""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import TYPE_CHECKING

from gitdeploy.localcluster.httpwire import HttpWire
from gitdeploy.localcluster.resources import ResourceType
from gitdeploy.localcluster.routing import Route
from gitdeploy.localcluster.tables import TableRequest, table_event, table_request, to_table, without_headers
from gitdeploy.localcluster.watch import Bookmarks, ListResult, Query, list_objects, watch_events

if TYPE_CHECKING:
    from gitdeploy.localcluster.server import LocalCluster

__all__ = ["ApiReads"]

_DEFAULT_WATCH_SECONDS = 1800


def tail_lines(log: str, query: dict[str, str]) -> str:
    """The last ``tailLines`` lines of ``log`` when the query asks for them, as the kubelet answers.

    >>> tail_lines("a\\nb\\nc\\n", {"tailLines": "2"}), tail_lines("a\\n", {"tailLines": "0"})
    ('b\\nc\\n', '')
    >>> tail_lines("a\\n", {"tailLines": "9"}), tail_lines("a\\n", {})
    ('a\\n', 'a\\n')
    """
    wanted = query.get("tailLines", "")
    if not wanted.isdigit():
        return log
    lines = log.splitlines(keepends=True)
    return "".join(lines[-int(wanted) :]) if int(wanted) else ""


class ApiReads(HttpWire):
    """Get, list and watch, answered on the wire of :class:`HttpWire`."""

    def _get(self, cluster: LocalCluster, route: Route, query: dict[str, str]) -> None:
        registry, namespace, name = cluster.registry, route.namespace or "", str(route.name)
        if route.subresource == "log":
            self._send(200, tail_lines(registry.pod_log(namespace, name), query).encode(), "text/plain")
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

    def _list(self, cluster: LocalCluster, route: Route, query: dict[str, str]) -> None:
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
        # a Table watch (kubectl get -w) is sent none: it does not ask for them
        asks_bookmarks = table is None and query.get("allowWatchBookmarks") in ("1", "true", "True")
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
            bookmarks=Bookmarks(time.monotonic() + timeout) if asks_bookmarks else None,
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
