"""Image references: parse ``registry/repository:tag@digest`` and format digest-pinned references.

Pure (no I/O). The grammar follows the one Docker and the OCI distribution spec use:

* the first path component is a registry host when it contains ``.`` or ``:``, is ``localhost``, or
  is a bracketed IPv6 address; otherwise the image lives on Docker Hub (``docker.io``), and a
  one-component Docker Hub repository gets the ``library/`` prefix (``index.docker.io`` is
  spelled ``docker.io``);
* repository components are lowercase ``[a-z0-9]`` runs joined by ``.``, ``_``, ``__`` or dashes;
* a tag is ``[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}``; with neither tag nor digest the tag is ``latest``;
* a digest is ``algorithm:hex`` (``sha256`` with 64 hex digits, ``sha512`` with 128).

Worked examples (the same cases are table-driven tests in ``tests/unit/images``)::

    nginx                          -> docker.io / library/nginx : latest
    quay.io/org/app:1.2            -> quay.io / org/app : 1.2
    127.0.0.1:5000/app:1           -> 127.0.0.1:5000 / app : 1
    app@sha256:<64 hex>            -> docker.io / library/app @ sha256:<64 hex>   (no tag)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitdeploy.errors import PermanentError

DOCKER_HUB = "docker.io"
"""The registry of references that name no registry host."""

DEFAULT_TAG = "latest"

_MAX_NAME_LENGTH = 255
_HOST_LABEL = r"(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])"
_HOST_RE = re.compile(
    rf"^(?:{_HOST_LABEL}(?:\.{_HOST_LABEL})*|\[[0-9A-Fa-f:.]+\])(?::(?P<port>[0-9]{{1,5}}))?$"
)
_COMPONENT_RE = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_DIGEST_RE = re.compile(r"^(?P<algorithm>[a-z0-9]+(?:[.+_-][a-z0-9]+)*):(?P<encoded>[A-Za-z0-9=_-]+)$")
_HEX_LENGTHS = {"sha256": 64, "sha512": 128}
_HEX_RE = re.compile(r"^[0-9a-f]+$")


class InvalidImageReferenceError(PermanentError, ValueError):
    """An image reference or digest does not follow the grammar; it is both a ``PermanentError``
    (for the controller's error vocabulary) and a ``ValueError`` (for plain Python callers)."""


@dataclass(frozen=True)
class ImageReference:
    """A parsed image reference. ``tag`` is ``None`` only when a digest is given."""

    registry: str
    """Registry host, with its port if any (``docker.io``, ``127.0.0.1:5000``)."""
    repository: str
    """Repository path inside the registry (``library/nginx``)."""
    tag: str | None = DEFAULT_TAG
    digest: str | None = None

    def __post_init__(self) -> None:
        if self.tag is None and self.digest is None:
            raise InvalidImageReferenceError(
                f"image reference {self.registry}/{self.repository} has neither tag nor digest",
                hint="give a tag (repo:tag) or a digest (repo@sha256:...)",
            )

    @property
    def name(self) -> str:
        """``registry/repository`` without tag or digest."""
        return f"{self.registry}/{self.repository}"

    @property
    def manifest_reference(self) -> str:
        """What goes after ``/manifests/`` in the distribution API: the digest if pinned, else the tag."""
        if self.digest is not None:
            return self.digest
        assert self.tag is not None  # guaranteed by __post_init__
        return self.tag

    def __str__(self) -> str:
        return format_image_reference(self)


def parse_image_reference(text: str) -> ImageReference:
    """Parse ``text`` into an :class:`ImageReference`, filling Docker Hub defaults.

    Raises :class:`InvalidImageReferenceError` (a ``PermanentError``) naming what is wrong.
    """
    original = text
    if not text or text != text.strip():
        raise _invalid(original, "it is empty or has surrounding whitespace")
    if any(ch.isspace() for ch in text):
        raise _invalid(original, "it contains whitespace")

    digest: str | None = None
    if "@" in text:
        text, digest_text = text.split("@", 1)
        digest = validate_digest(digest_text, context=original)

    tag: str | None = None
    last_slash = text.rfind("/")
    colon = text.rfind(":")
    if colon > last_slash:
        text, tag = text[:colon], text[colon + 1 :]
        if not _TAG_RE.match(tag):
            raise _invalid(original, f"tag '{tag}' is not valid (letters, digits, '_', '.', '-'; max 128)")

    registry, repository = _split_registry(text, original)
    if not repository:
        raise _invalid(original, "the repository name is empty")
    for component in repository.split("/"):
        if not _COMPONENT_RE.match(component):
            raise _invalid(
                original,
                f"repository component '{component}' is not valid "
                "(lowercase letters and digits, separated by '.', '_', '__' or '-')",
            )
    if len(f"{registry}/{repository}") > _MAX_NAME_LENGTH:
        raise _invalid(original, f"the name is longer than {_MAX_NAME_LENGTH} characters")
    if tag is None and digest is None:
        tag = DEFAULT_TAG
    return ImageReference(registry=registry, repository=repository, tag=tag, digest=digest)


def validate_digest(text: str, *, context: str = "") -> str:
    """Return ``text`` if it is a well-formed digest (``sha256:<64 lowercase hex>``), else raise."""
    what = context or text
    match = _DIGEST_RE.match(text)
    if match is None:
        raise _invalid(what, f"digest '{text}' is not algorithm:hex")
    algorithm, encoded = match["algorithm"], match["encoded"]
    expected = _HEX_LENGTHS.get(algorithm)
    if expected is None:
        raise _invalid(what, f"digest algorithm '{algorithm}' is not supported (use sha256 or sha512)")
    if len(encoded) != expected or not _HEX_RE.match(encoded):
        raise _invalid(what, f"a {algorithm} digest has {expected} lowercase hex digits")
    return text


def format_image_reference(reference: ImageReference) -> str:
    """The fully qualified form: ``registry/repository[:tag][@digest]``."""
    text = reference.name
    if reference.tag is not None:
        text += f":{reference.tag}"
    if reference.digest is not None:
        text += f"@{reference.digest}"
    return text


def format_pinned_reference(reference: ImageReference, digest: str | None = None) -> str:
    """The digest-pinned form ``registry/repository@digest``, with ``digest`` or the reference's own.

    This is what a resolved tag is deployed as, so a moved tag never changes a running template.
    """
    chosen = digest if digest is not None else reference.digest
    if chosen is None:
        raise InvalidImageReferenceError(
            f"image reference {format_image_reference(reference)} is not pinned to a digest",
            hint="resolve the tag to a digest first",
        )
    return f"{reference.name}@{validate_digest(chosen)}"


def _split_registry(text: str, original: str) -> tuple[str, str]:
    first, sep, rest = text.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first.startswith("[")):
        host = _HOST_RE.match(first)
        if host is None:
            raise _invalid(original, f"registry host '{first}' is not a valid host[:port]")
        port = host["port"]
        if port is not None and not 0 < int(port) < 65536:
            raise _invalid(original, f"registry port {port} is out of range")
        registry = DOCKER_HUB if first == "index.docker.io" else first
        if registry == DOCKER_HUB and rest and "/" not in rest:
            rest = f"library/{rest}"
        return registry, rest
    if "/" not in text:
        return DOCKER_HUB, f"library/{text}"
    return DOCKER_HUB, text


def _invalid(text: str, why: str) -> InvalidImageReferenceError:
    return InvalidImageReferenceError(
        f"invalid image reference '{text}': {why}",
        hint="write it as [registry[:port]/]repository[:tag][@sha256:<64 hex digits>], e.g. "
        "quay.io/org/app:1.2 or nginx@sha256:...",
    )
