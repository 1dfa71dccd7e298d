"""Template drift: a ReplicaSet whose pod template was changed by hand (``kubectl edit rs``).

A ReplicaSet's template is what every pod it makes from then on runs. gitdeploy writes it once,
when it creates the ReplicaSet, and records a digest of the template *as the API server stored
it* (server defaults and normalised quantities included) in ``gitdeploy.io/template-digest``; it
records the digest again whenever it restores the template. A read-back template whose digest
differs from the annotation was changed by someone else. The comparison is exact, so no server
default can pass for a hand change; what changed is told field by field against the revision's
recorded template with the server's defaults filled in
(:func:`~gitdeploy.core.templatediff.diff_templates`).

The fix is the one a Deployment user expects of its controller: the ReplicaSet goes back to the
recorded template (its name, revision and hash stay: they are the recorded ones), and the pods made
from the edited template are replaced within the app's bounds: pods not ready at once, ready ones
while the app keeps ``min_available`` ready pods (one at a time when every pod is ready and the
bounds allow none to go, since a pod already running the wrong template is no rollout to surge).
While pods are being replaced the ReplicaSet carries ``gitdeploy.io/replacing-pods``.

A ReplicaSet made by an earlier gitdeploy has no digest: its template is taken as it is and the
digest of it recorded (:func:`needs_digest`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gitdeploy.core.hashing import canonical_template
from gitdeploy.core.models import PodTemplate
from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.core.templatediff import POD_SCOPE, FieldChange, diff_templates

TEMPLATE_DIGEST_ANNOTATION = "gitdeploy.io/template-digest"
REPLACING_PODS_ANNOTATION = "gitdeploy.io/replacing-pods"
_GITDEPLOY_LABELS = ("labels.gitdeploy.io/", "labels.app.kubernetes.io/managed-by")


def template_digest(template: PodTemplate) -> str:
    """A short digest of a template as read back from the API server.

    >>> template_digest(PodTemplate('{"spec":{}}')) == template_digest(PodTemplate('{"spec":{}}'))
    True
    """
    return hashlib.sha256(template.canonical_json.encode()).hexdigest()[:16]


def needs_digest(rs: ObservedReplicaSet) -> bool:
    """A ReplicaSet with a template but no digest recorded yet (made by an earlier gitdeploy)."""
    return rs.template is not None and not rs.annotation(TEMPLATE_DIGEST_ANNOTATION)


def edited_by_hand(rs: ObservedReplicaSet) -> bool:
    """Whether ``rs``'s template is not the one gitdeploy last wrote (no digest: not known)."""
    recorded = rs.annotation(TEMPLATE_DIGEST_ANNOTATION)
    return bool(recorded) and rs.template is not None and template_digest(rs.template) != recorded


@dataclass(frozen=True)
class TemplateDrift:
    """ReplicaSet ``name``'s template was changed by hand: ``changes`` from the recorded one
    (empty when the recorded template is not at hand, as in ``gitdeploy status``), or its pods
    made from such a template are still being replaced (``replacing``)."""

    name: str
    changes: tuple[FieldChange, ...] = ()
    replacing: bool = False

    def render(self) -> str:
        """What the status and the event say of it.

        >>> TemplateDrift("web-a", (FieldChange("container web", "image", "n:1", "n:9"),)).render()
        'web-a: its pod template was changed by hand (container web image: n:1 -> n:9)'
        >>> TemplateDrift("web-a", replacing=True).render()
        'web-a: pods made from a pod template changed by hand are being replaced'
        """
        if self.replacing:
            return f"{self.name}: pods made from a pod template changed by hand are being replaced"
        told = "; ".join(_change(c) for c in self.changes)
        return f"{self.name}: its pod template was changed by hand" + (f" ({told})" if told else "")


def _change(change: FieldChange) -> str:
    prefix = "" if change.scope == POD_SCOPE else f"{change.scope} "
    return prefix + change.render()


def find_template_drift(rs: ObservedReplicaSet, recorded: PodTemplate | None = None) -> TemplateDrift | None:
    """The template drift of ``rs`` against its digest; the fields that differ from ``recorded``
    (git's template of the revision, without gitdeploy's labels) when it is given."""
    if not edited_by_hand(rs):
        return TemplateDrift(rs.name, replacing=True) if rs.annotation(REPLACING_PODS_ANNOTATION) else None
    assert rs.template is not None
    changes: tuple[FieldChange, ...] = ()
    if recorded is not None:
        changes = tuple(
            c
            for c in diff_templates(recorded, canonical_template(rs.template.to_dict()))
            if not c.field.startswith(_GITDEPLOY_LABELS)
        )
    return TemplateDrift(rs.name, changes)


def pod_fingerprint(labels: dict[str, Any], containers: Sequence[Any]) -> str:
    """What of a pod comes from the template it was made from and stays as made: its labels and
    each container's name, image, command, args and env (admission adds mounts and tolerations,
    never these), as canonical JSON."""
    shown = [
        {k: c.get(k) for k in ("name", "image", "command", "args", "env") if c.get(k)}
        for c in containers
        if isinstance(c, dict)
    ]
    return json.dumps({"labels": labels, "containers": shown}, sort_keys=True, separators=(",", ":"))


def template_fingerprint(template: PodTemplate) -> str:
    """:func:`pod_fingerprint` of the pods ``template`` makes (a template as read back)."""
    body = template.to_dict()
    labels = (body.get("metadata") or {}).get("labels") or {}
    return pod_fingerprint(dict(labels), (body.get("spec") or {}).get("containers") or [])


@dataclass(frozen=True)
class TemplatePod:
    """A pod of a ReplicaSet whose template was restored: its fingerprint and readiness."""

    name: str
    fingerprint: str
    ready: bool
    deleting: bool = False


def pods_to_replace(
    pods: Sequence[TemplatePod], template: PodTemplate, *, ready: int, min_available: int, replicas: int
) -> tuple[tuple[str, ...], int]:
    """The pods made from another template than ``template`` to delete now, and how many such pods
    there are in all. Not-ready ones go at once; ready ones while ``ready - min_available`` allows,
    else one when all ``replicas`` pods are ready (see the module docstring).

    >>> t = PodTemplate('{"metadata":{"labels":{"app":"web"}},'
    ...                 '"spec":{"containers":[{"image":"n:1","name":"w"}]}}')
    >>> good = TemplatePod("a", template_fingerprint(t), True)
    >>> bad = TemplatePod("b", pod_fingerprint({"app": "web"}, [{"image": "n:9", "name": "w"}]), True)
    >>> pods_to_replace([good, bad], t, ready=2, min_available=2, replicas=2)
    (('b',), 1)
    >>> pods_to_replace([good, bad], t, ready=1, min_available=2, replicas=2)
    ((), 1)
    """
    wanted = template_fingerprint(template)
    stale = [p for p in pods if p.fingerprint != wanted and not p.deleting]
    going = [p.name for p in stale if not p.ready]
    budget = max(ready - min_available, 1 if ready >= replicas and not any(p.deleting for p in pods) else 0)
    going += [p.name for p in stale if p.ready][:budget]
    return tuple(going), len(stale)


__all__ = [
    "REPLACING_PODS_ANNOTATION",
    "TEMPLATE_DIGEST_ANNOTATION",
    "TemplateDrift",
    "TemplatePod",
    "edited_by_hand",
    "find_template_drift",
    "needs_digest",
    "pod_fingerprint",
    "pods_to_replace",
    "template_digest",
    "template_fingerprint",
]
