"""Server-side printing: ``meta.k8s.io/v1 Table`` responses, which ``kubectl get`` asks for.

As kube-apiserver, every Table carries the wide columns (``priority: 1``; kubectl shows them with
``-o wide``), each row carries the object's metadata, the whole object (``includeObject=Object``,
which ``kubectl get --sort-by`` asks for) or nothing (``None``), and a watch that asks for a Table
gets each event's object as a one-row Table, with the column definitions in the first event only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.resources import ResourceType
from gitdeploy.localcluster.store import dumps
from gitdeploy.localcluster.timefmt import parse_time

__all__ = ["TableRequest", "human_age", "table_event", "table_request", "to_table", "without_headers"]

Row = Callable[[dict[str, Any], float], list[Any]]
Column = tuple[str, str, int]
"""A column's name, type and priority (0: always shown; 1: shown by ``kubectl get -o wide``)."""

_INCLUDE = ("Metadata", "Object", "None")


@dataclass(frozen=True)
class TableRequest:
    """A request for Tables: ``include`` is its ``includeObject`` (``Metadata``, ``Object`` or
    ``None``); ``headers`` is false for a watch's Tables after the first."""

    include: str = "Metadata"
    headers: bool = True


def table_request(accept: str, include_object: str | None) -> TableRequest | None:
    """The Table asked for by the ``Accept`` header (``as=Table;g=meta.k8s.io``) and the
    ``includeObject`` parameter; None when the request wants plain objects."""
    if "as=Table" not in accept:
        return None
    include = include_object or "Metadata"
    if include not in _INCLUDE:
        raise ApiError.bad_request(f'unrecognized includeObject value: "{include}"')
    return TableRequest(include)


def human_age(seconds: float) -> str:
    """``45s``, ``12m``, ``3h5m``, ``4d``, as kubectl shows ages."""
    whole = max(0, int(seconds))
    if whole < 120:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m"
    if whole < 86400:
        hours, minutes = divmod(whole // 60, 60)
        return f"{hours}h{minutes}m" if minutes and hours < 10 else f"{hours}h"
    return f"{whole // 86400}d"


def _age(obj: dict[str, Any], now: float) -> str:
    created = parse_time(obj.get("metadata", {}).get("creationTimestamp"))
    return "<unknown>" if created is None else human_age(now - created)


def _pod_status(pod: dict[str, Any]) -> str:
    status = pod.get("status") or {}
    ended = status.get("phase") in ("Succeeded", "Failed")
    if pod.get("metadata", {}).get("deletionTimestamp") and not ended:
        return "Terminating"
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason") not in (None, "ContainerCreating"):
            return str(state["waiting"]["reason"])
        if "waiting" in state and status.get("phase") == "Pending":
            return "ContainerCreating"
    if status.get("phase") == "Succeeded":
        return "Completed"
    if status.get("phase") == "Failed":
        return "Error"
    return str(status.get("phase") or "Pending")


def _pod_row(pod: dict[str, Any], now: float) -> list[Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    ready = sum(1 for c in containers if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in containers)
    total = len(spec.get("containers") or [])
    gates = spec.get("readinessGates") or []
    true_conditions = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
    gates_cell = (
        f"{sum(1 for g in gates if g.get('conditionType') in true_conditions)}/{len(gates)}"
        if gates
        else "<none>"
    )
    return [
        pod["metadata"]["name"],
        f"{ready}/{total}",
        _pod_status(pod),
        str(restarts),
        _age(pod, now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_cell,
    ]


def _selector(selector: dict[str, Any]) -> str:
    """``metav1.FormatLabelSelector``: ``app=web,tier in (a,b)``, ``<none>`` when empty."""
    parts = [f"{key}={value}" for key, value in (selector.get("matchLabels") or {}).items()]
    for expression in selector.get("matchExpressions") or []:
        key, op = expression.get("key", ""), str(expression.get("operator", ""))
        values = ",".join(expression.get("values") or [])
        if op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            parts.append(f"{key} {'notin' if op == 'NotIn' else op.lower()} ({values})")
    return ",".join(parts) or "<none>"


def _rs_row(rs: dict[str, Any], now: float) -> list[Any]:
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [
        rs["metadata"]["name"],
        spec.get("replicas", 1),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        _age(rs, now),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        _selector(spec.get("selector") or {}),
    ]


def _event_row(event: dict[str, Any], now: float) -> list[Any]:
    first = parse_time(event.get("firstTimestamp") or event.get("eventTime"))
    last = parse_time(event.get("lastTimestamp")) or first
    series = event.get("series") or {}
    if series.get("lastObservedTime"):
        last = parse_time(series["lastObservedTime"])
    involved = event.get("involvedObject") or event.get("regarding") or {}
    kind, name = str(involved.get("kind", "")).lower(), involved.get("name", "")
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingController") or ""
    host = source.get("host") or event.get("reportingInstance") or ""
    return [
        "<unknown>" if last is None else human_age(now - last),
        event.get("type", ""),
        event.get("reason", ""),
        f"{kind}/{name}" if name else kind,
        involved.get("fieldPath", ""),
        f"{component}, {host}" if host else component,
        str(event.get("message") or event.get("note") or "").strip(),
        "<unknown>" if first is None else human_age(now - first),
        int(series.get("count") or event.get("count") or 1),
        event["metadata"]["name"],
    ]


def _namespace_row(ns: dict[str, Any], now: float) -> list[Any]:
    return [ns["metadata"]["name"], (ns.get("status") or {}).get("phase", "Active"), _age(ns, now)]


def _configmap_row(cm: dict[str, Any], now: float) -> list[Any]:
    return [
        cm["metadata"]["name"],
        len(cm.get("data") or {}) + len(cm.get("binaryData") or {}),
        _age(cm, now),
    ]


def _lease_row(lease: dict[str, Any], now: float) -> list[Any]:
    return [lease["metadata"]["name"], (lease.get("spec") or {}).get("holderIdentity", ""), _age(lease, now)]


def _default_row(obj: dict[str, Any], now: float) -> list[Any]:
    return [obj["metadata"]["name"], _age(obj, now)]


_EVENT_COLUMNS: list[Column] = [
    ("Last Seen", "string", 0),
    ("Type", "string", 0),
    ("Reason", "string", 0),
    ("Object", "string", 0),
    ("Subobject", "string", 1),
    ("Source", "string", 1),
    ("Message", "string", 0),
    ("First Seen", "string", 1),
    ("Count", "string", 1),
    ("Name", "string", 1),
]

_COLUMNS: dict[str, tuple[list[Column], Row]] = {
    "/pods": (
        [
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ],
        _pod_row,
    ),
    "apps/replicasets": (
        [
            ("Name", "string", 0),
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            ("Age", "string", 0),
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ],
        _rs_row,
    ),
    "/events": (_EVENT_COLUMNS, _event_row),
    "events.k8s.io/events": (_EVENT_COLUMNS, _event_row),
    "/namespaces": (
        [("Name", "string", 0), ("Status", "string", 0), ("Age", "string", 0)],
        _namespace_row,
    ),
    "/configmaps": ([("Name", "string", 0), ("Data", "integer", 0), ("Age", "string", 0)], _configmap_row),
    "coordination.k8s.io/leases": (
        [("Name", "string", 0), ("Holder", "string", 0), ("Age", "string", 0)],
        _lease_row,
    ),
}
_DEFAULT: tuple[list[Column], Row] = ([("Name", "string", 0), ("Age", "string", 0)], _default_row)


def _row_object(item: dict[str, Any], include: str) -> dict[str, Any] | None:
    if include == "Object":
        return item
    if include == "None":
        return None
    metadata = item.get("metadata", {})
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata}


def to_table(
    resource: ResourceType,
    items: list[dict[str, Any]],
    now: float,
    list_meta: dict[str, Any],
    request: TableRequest | None = None,
) -> dict[str, Any]:
    """A Table of ``items`` with the columns kube-apiserver prints for ``resource`` (wide ones too)."""
    columns, row = _COLUMNS.get(resource.key, _DEFAULT)
    request = request or TableRequest()
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": [
            {
                "name": name,
                "type": kind,
                "format": "name" if name == "Name" else "",
                "description": name,
                "priority": priority,
            }
            for name, kind, priority in columns
        ]
        if request.headers
        else [],
        "rows": [{"cells": row(item, now), "object": _row_object(item, request.include)} for item in items],
    }


def table_event(resource: ResourceType, line: bytes, now: float, request: TableRequest) -> bytes:
    """A watch event line with its object as a one-row Table, as kube-apiserver sends a watch that
    asked for a Table (``request.headers``: with the column definitions, which only the first
    event has); an ``ERROR`` event is left as is."""
    event = json.loads(line)
    if event.get("type") == "ERROR":
        return line
    obj = event["object"]
    meta = {"resourceVersion": (obj.get("metadata") or {}).get("resourceVersion", "")}
    table = to_table(resource, [obj], now, meta, request)
    return (dumps({"type": event["type"], "object": table}) + "\n").encode()


def without_headers(request: TableRequest) -> TableRequest:
    """The same request for the Tables that follow a watch's first."""
    return replace(request, headers=False)
