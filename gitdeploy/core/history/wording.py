"""How a revision is described to people, in the same words wherever it is shown (``gitdeploy
history``, the dashboard): its cause, its outcome, how old it is, and what a pin means."""

from __future__ import annotations

from gitdeploy.core.history.records import Cause, Outcome, Pin, RevisionEntry


def describe_cause(entry: RevisionEntry) -> str:
    """Why the revision exists, with the revision it returns to when it brought one back.

    >>> from gitdeploy.core.history.records import CommitRef
    >>> entry = RevisionEntry(3, "h", "web-h", CommitRef(""), cause=Cause.ROLLBACK, rolled_back_to=1)
    >>> describe_cause(entry)
    'Rollback to revision 1'
    """
    if entry.cause is Cause.AUTO_ROLLBACK and entry.rolled_back_from is not None:
        return f"Automatic rollback after revision {entry.rolled_back_from} failed"
    if entry.rolled_back_to is not None:
        return f"Rollback to revision {entry.rolled_back_to}"
    if entry.returns_to is not None:
        return f"{entry.cause} (template of revision {entry.returns_to})"
    return entry.cause


def describe_outcome(entry: RevisionEntry) -> str:
    """The revision's outcome, with the reason of a failure.

    >>> from gitdeploy.core.history.records import CommitRef
    >>> entry = RevisionEntry(2, "h", "web-h", CommitRef(""), outcome=Outcome.FAILED, reason="Deadline")
    >>> describe_outcome(entry)
    'Failed (Deadline)'
    """
    if entry.outcome is Outcome.FAILED and entry.reason:
        return f"Failed ({entry.reason})"
    return entry.outcome.value


def describe_age(since: float | None, now: float) -> str:
    """``42s``, ``5m``, ``3h``, ``2d`` as kubectl prints ages.

    >>> describe_age(0.0, 59.0), describe_age(0.0, 3600.0 * 5), describe_age(None, 1.0)
    ('59s', '5h', '<unknown>')
    """
    if since is None:
        return "<unknown>"
    seconds = max(int(now - since), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def describe_pin(app: str, pin: Pin) -> str:
    """What a rollback pin holds the app to, why, and the way out.

    >>> for part in describe_pin("shop/web", Pin(1, "abc", "digest", reason="bad")).split("; "):
    ...     print(part)
    pinned to revision 1 (bad) while shop/web's manifest in git is unchanged
    a commit that changes it, or `gitdeploy deploy shop/web --latest`, rolls forward
    """
    why = f" ({pin.reason})" if pin.reason else ""
    return (
        f"pinned to revision {pin.revision}{why} while {app}'s manifest in git is unchanged; "
        f"a commit that changes it, or `gitdeploy deploy {app} --latest`, rolls forward"
    )
