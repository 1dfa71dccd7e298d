"""core/v1 Events gitdeploy records on the objects it acts on, as ``kubectl describe`` shows them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gitdeploy.cluster.apierrors import translated
from gitdeploy.cluster.rawapi import RawApi, discard, timestamp


def _event_order(event: Mapping[str, Any]) -> tuple[float, int]:
    """Oldest first: by timestamp, then by resourceVersion (names are random, so lists are not ordered)."""
    meta = event.get("metadata") or {}
    version = str(meta.get("resourceVersion", ""))
    stamp = event.get("lastTimestamp") or event.get("eventTime") or meta.get("creationTimestamp")
    return timestamp(stamp), int(version) if version.isdigit() else 0


class Events:
    """Recording an Event and listing a namespace's (oldest first)."""

    def __init__(self, kube: RawApi) -> None:
        self.kube = kube

    def record_event(
        self,
        namespace: str,
        involved: tuple[str, str, str],
        reason: str,
        message: str,
        *,
        warning: bool = False,
        now: float,
    ) -> None:
        """A core/v1 Event on (kind, name, uid), as ``kubectl describe`` and ``get events`` show."""
        kind, name, uid = involved
        stamp = datetime.fromtimestamp(now).astimezone().isoformat(timespec="seconds")
        body = {
            "metadata": {"generateName": f"{name}.", "namespace": namespace},
            "involvedObject": {"kind": kind, "name": name, "namespace": namespace, "uid": uid},
            "reason": reason,
            "message": message,
            "type": "Warning" if warning else "Normal",
            "source": {"component": "gitdeploy"},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        with translated(f"record event {reason} on {namespace}/{name}"):
            discard(self.kube.events.create(namespace, body))

    def list_events(self, namespace: str, name: str | None = None) -> list[dict[str, Any]]:
        """Events in ``namespace``, about the object ``name`` when given (oldest first)."""
        events = self.kube.list_json(
            self.kube.events.list, f"list events in {namespace}", namespace=namespace
        )
        if name is not None:
            events = [e for e in events if (e.get("involvedObject") or {}).get("name") == name]
        return sorted(events, key=_event_order)
