"""Resource quantities as the API server stores them (apimachinery's ``resource.Quantity``).

A quantity is decoded and written back in its canonical form, keeping the kind of suffix it was
given: decimal (``m``, ``k``, ``M``…, or none) as an integer times the largest power of 1000 that
keeps it whole (``0.5`` → ``500m``, ``1000m`` → ``1``, ``1500`` → ``1500``, a number
``1000.0`` → ``1k``); an exponent (``1e3``) as an integer times a power of 10 that is a multiple
of 3 (``1e3`` stays, ``1e4`` → ``10e3``); binary (``Ki``, ``Mi``…) as an integer times the
largest power of 1024 that keeps it whole (``1024Mi`` → ``1Gi``, ``1.5Gi`` → ``1536Mi``), but as
decimal when it is below 1024 or not a whole number (``0.5Ki`` → ``512``). Zero is ``0``; what
is finer than ``1n`` is rounded up to it. Text that is no quantity is left as it is (the caller's
validation refuses it).

Pure and shared: the embedded cluster stores quantities so (localcluster/defaults.py), and
gitdeploy compares templates so (core/serverdefaults.py), a template read back from any cluster
with one from git. ``tests/contract/test_writes.py`` holds it to what a real kube-apiserver
stores (tests/fixtures/serverdefaults.py ``QUANTITIES``).

And as the API client accepts them (:func:`quantities_as_text`): Kubernetes reads a quantity
written as a YAML number (``cpu: 0.5``, ``memory: 67108864``) exactly as the same digits in a
string, and kubectl sends such manifests as they are; the Python client's models accept only
strings. gitdeploy's cluster adapter writes a pod spec with every quantity that is a number turned
into its decimal text, which means the same to the API server. The template hash is computed
from the template as in git, before this.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Any

__all__ = ["canonical_quantity", "canonical_resources", "quantities_as_text"]

_FORM = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX = {power: suffix for suffix, power in _BINARY.items()}
_NANO = Decimal("1e-9")


def _parse(text: str) -> tuple[Decimal, str] | None:
    """``(value, format)`` of a quantity's text (format ``decimal``, ``exponent`` or ``binary``)."""
    found = _FORM.match(text)
    if found is None or found.group(1).count(".") > 1 or found.group(1) in (".", "+.", "-."):
        return None
    number, suffix = found.groups()
    try:
        mantissa = Decimal(number)
        if suffix in _BINARY:
            return mantissa * (1024 ** _BINARY[suffix]), "binary"
        if suffix in _DECIMAL:
            return mantissa.scaleb(_DECIMAL[suffix]), "decimal"
        if suffix[:1] in ("e", "E") and re.fullmatch(r"[-+]?[0-9]+", suffix[1:]):
            return mantissa.scaleb(int(suffix[1:])), "exponent"
    except InvalidOperation:
        return None
    return None


def _decimal_text(value: Decimal, form: str) -> str:
    """An integer times 10**(3k), with k as large as keeps the integer whole."""
    units = int((value / _NANO).to_integral_value(rounding=ROUND_CEILING))
    exponent = -9
    while units and units % 1000 == 0 and exponent < 18:
        units //= 1000
        exponent += 3
    if form == "exponent":
        return f"{units}e{exponent}" if exponent else str(units)
    return f"{units}{_DECIMAL_SUFFIX[exponent]}"


def canonical_quantity(value: Any) -> Any:
    """The canonical text of a quantity given as text or a number; anything else as it is.

    >>> [canonical_quantity(v) for v in ("0.5", 0.5, "1000m", "0.1", "1e3", 1000.0, "1Gi", "1.5Gi")]
    ['500m', '500m', '1', '100m', '1e3', '1k', '1Gi', '1536Mi']
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return value
    parsed = _parse(str(value).strip())
    if parsed is None:
        return value
    amount, form = parsed
    if amount == 0:
        return "0"
    if form == "binary" and abs(amount) >= 1024 and amount == amount.to_integral_value():
        whole, power = int(amount), 0
        while whole % 1024 == 0 and power < 6:
            whole //= 1024
            power += 1
        return f"{whole}{_BINARY_SUFFIX.get(power, '')}"
    return _decimal_text(amount, "exponent" if form == "exponent" else "decimal")


def canonical_resources(resources: Any) -> Any:
    """A container's ``resources`` with its ``requests`` and ``limits`` canonical (new dicts)."""
    if not isinstance(resources, dict):
        return resources
    done = dict(resources)
    for key in ("requests", "limits"):
        amounts = resources.get(key)
        if isinstance(amounts, dict):
            done[key] = {name: canonical_quantity(amount) for name, amount in amounts.items()}
    return done


# -- quantities as text, for the API client ----------------------------------------------------
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
