"""The template hash: the identity of a pod template, used in ReplicaSet names and labels.

How it is computed (stable across gitdeploy versions; changing it would roll every app):

1. The pod template is normalised (:func:`normalise_template`): mapping entries whose value is
   ``null``, an empty mapping or an empty list are dropped (Kubernetes serialises with
   ``omitempty``, so ``env: []`` and no ``env`` mean the same), and gitdeploy's own
   ``gitdeploy.io/template-hash`` label is removed (it is added after hashing).
2. The result is written as canonical JSON: keys sorted, no white space, UTF-8, no NaN/Infinity.
3. SHA-256 of those bytes, followed by ``"#<collision_count>"`` when a collision count is given.
4. The first 47 bits of the digest are written in the 27-letter alphabet Kubernetes uses for safe
   names (no vowels, no confusable characters), as exactly :data:`HASH_LENGTH` characters.

The hash therefore ignores key order, YAML vs JSON, comments and quoting, and everything outside
the template (replicas, strategy, triggers, metadata); any change inside the template changes it.

Worked example: ``{"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name":
"web", "image": "nginx:1.25"}]}}`` has canonical JSON
``{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx:1.25","name":"web"}]}}``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gitdeploy.core.models import PodTemplate

TEMPLATE_HASH_LABEL = "gitdeploy.io/template-hash"
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
HASH_LENGTH = 10


def normalise_template(value: Any) -> Any:
    """Drop null/empty mapping values and gitdeploy's own hash label, recursively."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            cleaned = normalise_template(item)
            if cleaned is None or cleaned == {} or cleaned == []:
                continue
            out[str(key)] = cleaned
        return out
    if isinstance(value, list):
        return [normalise_template(item) for item in value]
    return value


def canonical_json(value: Any) -> str:
    """Sorted keys, no white space, no NaN/Infinity: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_template(template: dict[str, Any]) -> PodTemplate:
    """Normalise a pod template and freeze it as :class:`PodTemplate` (keeping the template as
    given, without gitdeploy's hash label, for writing when normalising changed it)."""
    normalised = normalise_template(template)
    unchanged = normalised == template  # the common case: nothing empty, no hash label
    _drop_hash_label(normalised)
    canonical = canonical_json(normalised)
    if unchanged:
        return PodTemplate(canonical)
    given = json.loads(canonical_json(template))
    _drop_hash_label(given)
    written = canonical_json(given)
    return PodTemplate(canonical, "" if written == canonical else written)


def _drop_hash_label(template: dict[str, Any]) -> None:
    labels = (template.get("metadata") or {}).get("labels")
    if isinstance(labels, dict) and TEMPLATE_HASH_LABEL in labels:
        del labels[TEMPLATE_HASH_LABEL]
        if not labels:
            del template["metadata"]["labels"]
            if not template["metadata"]:
                del template["metadata"]


def encode_safe(number: int, length: int = HASH_LENGTH) -> str:
    """Write ``number`` in :data:`SAFE_ALPHABET`, most significant letter first, zero-padded.

    >>> encode_safe(0, 3)
    'bbb'
    >>> encode_safe(28, 3)
    'bcc'
    """
    base = len(SAFE_ALPHABET)
    letters = []
    for _ in range(length):
        number, digit = divmod(number, base)
        letters.append(SAFE_ALPHABET[digit])
    return "".join(reversed(letters))


def template_hash(template: PodTemplate, collision_count: int | None = None) -> str:
    """The short, DNS-safe hash of a canonical template (see the module docstring).

    ``collision_count`` changes the hash when ``<app>-<hash>`` already names a ReplicaSet with
    another template, as Kubernetes' ``status.collisionCount`` does.
    """
    payload = template.canonical_json
    if collision_count:
        payload += f"#{collision_count}"
    digest = hashlib.sha256(payload.encode("utf-8")).digest()
    return encode_safe(int.from_bytes(digest[:8], "big") >> 17)  # 47 bits: 27**10 > 2**47
