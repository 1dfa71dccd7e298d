"""API errors, returned to clients as Kubernetes ``Status`` objects.

The official client turns a ``Status`` with a non-2xx code into ``ApiException(status=code,
reason=...)``, so callers see the same errors as on a real cluster.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ApiError", "status_object"]


class ApiError(Exception):
    """An error the API answers with: HTTP ``code``, Kubernetes ``reason`` and a message."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def to_status(self) -> dict[str, Any]:
        return status_object(self.code, self.reason, self.message, self.details)

    @classmethod
    def not_found(cls, qualified: str, name: str, kind: str = "") -> ApiError:
        group = qualified.split(".", 1)[1] if "." in qualified else ""
        plural = qualified.split(".", 1)[0]
        return cls(
            404,
            "NotFound",
            f'{qualified} "{name}" not found',
            details={"name": name, "group": group, "kind": plural},
        )

    @classmethod
    def already_exists(cls, qualified: str, name: str) -> ApiError:
        group = qualified.split(".", 1)[1] if "." in qualified else ""
        return cls(
            409,
            "AlreadyExists",
            f'{qualified} "{name}" already exists',
            details={"name": name, "group": group, "kind": qualified.split(".", 1)[0]},
        )

    @classmethod
    def conflict(cls, qualified: str, name: str, why: str = "") -> ApiError:
        group = qualified.split(".", 1)[1] if "." in qualified else ""
        text = (
            why
            or "the object has been modified; please apply your changes to the latest version and try again"
        )
        return cls(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {qualified} "{name}": {text}',
            details={"name": name, "group": group, "kind": qualified.split(".", 1)[0]},
        )

    @classmethod
    def invalid(cls, kind: str, group: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
        """422: ``causes`` are ``(field, message)`` pairs, each message worded as the API server's
        (``Required value: ...``): its first words give the cause's reason (``FieldValueRequired``)."""
        summary = ", ".join(f"{field}: {message}" for field, message in causes)
        return cls(
            422,
            "Invalid",
            f'{kind}{"." + group if group else ""} "{name}" is invalid: {summary}',
            details={
                "name": name,
                "group": group,
                "kind": kind,
                "causes": [
                    {"reason": _cause_reason(message), "message": message, "field": field}
                    for field, message in causes
                ],
            },
        )

    @classmethod
    def bad_request(cls, message: str) -> ApiError:
        return cls(400, "BadRequest", message)


_CAUSE_REASONS = {
    "Required value": "FieldValueRequired",
    "Too long": "FieldValueTooLong",
    "Too many": "FieldValueTooMany",
    "Unsupported value": "FieldValueNotSupported",
    "Forbidden": "FieldValueForbidden",
    "Duplicate value": "FieldValueDuplicate",
    "Not found": "FieldValueNotFound",
}


def _cause_reason(message: str) -> str:
    """The reason of a cause whose message begins as the API server's ``field.Error`` words it."""
    head = message.partition(":")[0]
    return _CAUSE_REASONS.get(head, "FieldValueInvalid")


def status_object(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A ``meta/v1 Status`` body."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        status["details"] = details
    return status
