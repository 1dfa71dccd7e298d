"""The settings ``rollback --change-scaling-settings/--change-strategy/--change-triggers`` bring
back with a revision's template (the seed 003 field table): by default a rollback restores only
the pod template; each group here also restores fields of the revision's manifest."""

from __future__ import annotations

import dataclasses
import functools
import json
import logging

from gitdeploy.core.history.records import Pin
from gitdeploy.core.models import App, AppKind
from gitdeploy.manifests.apps import analyse_app, place_in_namespace
from gitdeploy.manifests.documents import Document

log = logging.getLogger("gitdeploy.controller")

SCALING, STRATEGY, TRIGGERS = "scaling", "strategy", "triggers"
"""The groups: replicas and selector; the strategy (with its hooks); the triggers."""


@functools.lru_cache(maxsize=256)
def _app_of(manifest: str, kind: AppKind, namespace: str) -> App | None:
    """The app a pinned manifest declares (validated again; cached: a pin holds for many passes)."""
    try:
        data = json.loads(manifest)
    except ValueError:
        return None
    analysis = analyse_app(Document("(pinned manifest)", 0, 1, 1, data), kind) if data else None
    if analysis is None or analysis.draft is None:
        return None
    return place_in_namespace(analysis.draft.app, namespace)


def restore_settings(app: App, pin: Pin) -> App:
    """``app`` (git's) with the settings ``pin.restore`` names taken from ``pin.manifest``.

    A manifest that no longer validates (the schema grew stricter since) restores nothing and
    says so in the log; the template still rolls back.
    """
    if not pin.restore or not pin.manifest:
        return app
    old = _app_of(pin.manifest, app.kind, app.namespace)
    if old is None:
        log.warning(
            "[%s] revision %d's manifest no longer validates: only its template is restored",
            app.key,
            pin.revision,
        )
        return app
    changes: dict[str, object] = {}
    if SCALING in pin.restore:
        changes.update(replicas=old.replicas, selector=old.selector)
    if STRATEGY in pin.restore:
        changes.update(strategy=old.strategy)
    if TRIGGERS in pin.restore:
        changes.update(triggers=old.triggers)
    return dataclasses.replace(app, **changes)  # type: ignore[arg-type]


__all__ = ["SCALING", "STRATEGY", "TRIGGERS", "restore_settings"]
