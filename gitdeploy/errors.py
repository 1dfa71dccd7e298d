"""The one small error vocabulary of gitdeploy (DESIGN.md, "Errors").

* :class:`PermanentError`: retrying will not help (an invalid manifest, an unknown revision,
  an unsafe URL). Surface it in status and on the CLI.
* :class:`TransientError`: try again after ``retry_after`` seconds (git unreachable, API 5xx,
  a 409 conflict).

Adapters translate library exceptions into these at their edge; everything above them only
ever sees these two.
"""

from __future__ import annotations


class GitdeployError(Exception):
    """Base of every error gitdeploy raises on purpose.

    ``hint`` says what the user can do about it; the CLI prints it after the message.
    """

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class PermanentError(GitdeployError):
    """Do not retry: the input or request is wrong and must be changed."""


class TransientError(GitdeployError):
    """Retry after ``retry_after`` seconds; nothing is wrong with the request itself."""

    def __init__(self, message: str, *, hint: str = "", retry_after: float = 5.0) -> None:
        super().__init__(message, hint=hint)
        self.retry_after = retry_after


class NotFoundError(PermanentError):
    """The object asked for does not exist (HTTP 404 from the API)."""


class ForbiddenError(PermanentError):
    """The API server refused the request for want of a permission (HTTP 403 from RBAC)."""


class AlreadyExistsError(PermanentError):
    """An object with that name exists already (HTTP 409, reason AlreadyExists)."""


class ExpiredError(TransientError):
    """The resourceVersion a watch asked for is older than the API server keeps (HTTP 410 Gone):
    list again and watch from the list's resourceVersion."""


class ConflictError(TransientError):
    """Someone else changed the object first (HTTP 409 on a stale resourceVersion): re-read, retry."""


class StaleReadError(ConflictError):
    """A write named the resourceVersion its pass read, and the object changed since (its
    controller's status, another writer): nothing is wrong, the next pass reads it again, as soon
    as a watch tells of the change or after ``retry_after``."""


class DamagedRecordError(PermanentError):
    """An app record (``ConfigMap gitdeploy.<app>``) whose content cannot be read: that app is held
    as it runs until the record is repaired or deleted; every other app goes on."""
