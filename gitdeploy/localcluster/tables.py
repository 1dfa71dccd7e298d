"""Server-side printing: ``meta.k8s.io/v1 Table`` responses, which ``kubectl get`` asks for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gitdeploy.localcluster.resources import ResourceType
from gitdeploy.localcluster.timefmt import parse_time

__all__ = ["human_age", "to_table", "wants_table"]

Row = Callable[[dict[str, Any], float], list[Any]]


def wants_table(accept: str) -> bool:
    """True when the ``Accept`` header asks for a Table (``as=Table;g=meta.k8s.io``)."""
    return "as=Table" in accept


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
    containers = (pod.get("status") or {}).get("containerStatuses") or []
    ready = sum(1 for c in containers if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in containers)
    total = len((pod.get("spec") or {}).get("containers") or [])
    return [pod["metadata"]["name"], f"{ready}/{total}", _pod_status(pod), restarts, _age(pod, now)]


def _rs_row(rs: dict[str, Any], now: float) -> list[Any]:
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    return [
        rs["metadata"]["name"],
        spec.get("replicas", 1),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        _age(rs, now),
    ]


def _event_row(event: dict[str, Any], now: float) -> list[Any]:
    last = parse_time(event.get("lastTimestamp") or event.get("eventTime")) or now
    involved = event.get("involvedObject") or event.get("regarding") or {}
    return [
        human_age(now - last),
        event.get("type", ""),
        event.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        event.get("message") or event.get("note") or "",
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


_EVENT_COLUMNS = [
    ("Last Seen", "string"),
    ("Type", "string"),
    ("Reason", "string"),
    ("Object", "string"),
    ("Message", "string"),
]

_COLUMNS: dict[str, tuple[list[tuple[str, str]], Row]] = {
    "/pods": (
        [
            ("Name", "string"),
            ("Ready", "string"),
            ("Status", "string"),
            ("Restarts", "integer"),
            ("Age", "string"),
        ],
        _pod_row,
    ),
    "apps/replicasets": (
        [
            ("Name", "string"),
            ("Desired", "integer"),
            ("Current", "integer"),
            ("Ready", "integer"),
            ("Age", "string"),
        ],
        _rs_row,
    ),
    "/events": (_EVENT_COLUMNS, _event_row),
    "events.k8s.io/events": (_EVENT_COLUMNS, _event_row),
    "/namespaces": ([("Name", "string"), ("Status", "string"), ("Age", "string")], _namespace_row),
    "/configmaps": ([("Name", "string"), ("Data", "integer"), ("Age", "string")], _configmap_row),
    "coordination.k8s.io/leases": ([("Name", "string"), ("Holder", "string"), ("Age", "string")], _lease_row),
}


def to_table(
    resource: ResourceType, items: list[dict[str, Any]], now: float, list_meta: dict[str, Any]
) -> dict[str, Any]:
    """A Table of ``items`` with the columns kubectl shows for ``resource``."""
    columns, row = _COLUMNS.get(resource.key, ([("Name", "string"), ("Age", "string")], _default_row))
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
                "priority": 0,
            }
            for name, kind in columns
        ],
        "rows": [
            {
                "cells": row(item, now),
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": item.get("metadata", {}),
                },
            }
            for item in items
        ],
    }
