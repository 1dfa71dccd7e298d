"""Resource quantities as the API client accepts them.

Kubernetes reads a quantity written as a YAML number (``cpu: 0.5``, ``memory: 67108864``) exactly as
the same digits in a string, and kubectl sends such manifests as they are; the Python client's
models accept only strings. A pod spec is written with every quantity that is a number turned into
its decimal text, which means the same to the API server (it stores ``0.5`` as ``500m`` either way).
The template hash is computed from the template as in git, before this.
"""

from __future__ import annotations

from typing import Any

_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def _as_text(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return str(value) if isinstance(value, int) else repr(value)


def _text_map(amounts: Any) -> Any:
    if not isinstance(amounts, dict):
        return amounts
    return {name: _as_text(amount) for name, amount in amounts.items()}


def _resources(resources: Any) -> Any:
    if not isinstance(resources, dict):
        return resources
    return {
        key: _text_map(value) if key in ("limits", "requests") else value for key, value in resources.items()
    }


def quantities_as_text(pod_spec: dict[str, Any]) -> dict[str, Any]:
    """``pod_spec`` with its quantities that are numbers written as text: containers' (and init and
    ephemeral containers') and the pod's ``resources``, ``overhead``, emptyDir ``sizeLimit``.

    >>> spec = quantities_as_text({"containers": [{"name": "a", "resources": {"limits": {"cpu": 0.5}}}],
    ...                            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": 1024}}]})
    >>> spec["containers"][0]["resources"], spec["volumes"][0]["emptyDir"]
    ({'limits': {'cpu': '0.5'}}, {'sizeLimit': '1024'})
    """
    spec = dict(pod_spec)
    for key in _CONTAINER_LISTS:
        if isinstance(spec.get(key), list):
            spec[key] = [_container(c) for c in spec[key]]
    if "resources" in spec:
        spec["resources"] = _resources(spec["resources"])
    if "overhead" in spec:
        spec["overhead"] = _text_map(spec["overhead"])
    if isinstance(spec.get("volumes"), list):
        spec["volumes"] = [_volume(v) for v in spec["volumes"]]
    return spec


def _container(container: Any) -> Any:
    if not isinstance(container, dict) or "resources" not in container:
        return container
    return {**container, "resources": _resources(container["resources"])}


def _volume(volume: Any) -> Any:
    empty_dir = volume.get("emptyDir") if isinstance(volume, dict) else None
    if not isinstance(empty_dir, dict) or "sizeLimit" not in empty_dir:
        return volume
    return {**volume, "emptyDir": {**empty_dir, "sizeLimit": _as_text(empty_dir["sizeLimit"])}}


__all__ = ["quantities_as_text"]
