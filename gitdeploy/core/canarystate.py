"""Where a revision's canary stands, as the annotations of its ReplicaSet keep it (the walk
itself is :mod:`gitdeploy.core.rollout.canarywalk`). Every value is prefixed with the revision
it belongs to, so a ReplicaSet reused by a later revision starts again at step 0:

* :data:`CANARY_STEP_ANNOTATION` ``3:2``: revision 3 is at step index 2;
* :data:`CANARY_PAUSED_AT_ANNOTATION` ``3:2:<timestamp>``: the pause at index 2 began then;
* :data:`CANARY_PROMOTE_ANNOTATION` ``3:2`` or ``3:full`` (written by ``rollout promote``):
  the step at index 2 is done, or every step is;
* :data:`CANARY_ABORT_ANNOTATION` ``3:<who>`` (written by ``rollout abort``, or by the walk
  when an analysis fails or the progress deadline aborts): back to the
  stable; the revision then Fails (reason ``RolloutAborted``) and is held until git changes;
* :data:`CANARY_STEPS_ANNOTATION` ``3:w25,p,w50,p30`` (written by the walk with the step):
  the revision's steps (:func:`~gitdeploy.core.canarysteps.encode_steps`), so that ``status``
  and ``history`` can say "step 2/4" from the cluster alone;
* :data:`CANARY_PROMOTIONS_ANNOTATION` ``3:1=alice@laptop;full=bob@ci`` (written by
  ``rollout promote`` with the promote itself, in the same request): who promoted which step;
* :data:`CANARY_ANALYSIS_ANNOTATION` ``3:4:{...}`` and :data:`CANARY_BACKGROUND_ANNOTATION`: the
  run of the analysis step at index 4, and of the background analysis
  (:mod:`gitdeploy.core.rollout.canaryanalysis`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.core.timestamps import parse_timestamp

CANARY_STEP_ANNOTATION = "gitdeploy.io/canary-step"
CANARY_PAUSED_AT_ANNOTATION = "gitdeploy.io/canary-paused-at"
CANARY_PROMOTE_ANNOTATION = "gitdeploy.io/canary-promote"
CANARY_ABORT_ANNOTATION = "gitdeploy.io/canary-abort"
CANARY_STEPS_ANNOTATION = "gitdeploy.io/canary-steps"
CANARY_PROMOTIONS_ANNOTATION = "gitdeploy.io/canary-promotions"
CANARY_ANALYSIS_ANNOTATION = "gitdeploy.io/canary-analysis"
CANARY_BACKGROUND_ANNOTATION = "gitdeploy.io/canary-background-analysis"
PROMOTE_FULL = "full"
BACKGROUND_RUN_KEY = -1
"""The step key of the background analysis's run (a step's run has the step's index)."""
CANARY_RESTART: Mapping[str, str] = MappingProxyType(
    {
        name: ""
        for name in (
            CANARY_STEP_ANNOTATION,
            CANARY_PAUSED_AT_ANNOTATION,
            CANARY_PROMOTE_ANNOTATION,
            CANARY_ABORT_ANNOTATION,
            CANARY_PROMOTIONS_ANNOTATION,
            CANARY_ANALYSIS_ANNOTATION,
            CANARY_BACKGROUND_ANNOTATION,
        )
    }
)
"""The annotations that start a revision's canary walk again (``deploy --retry``)."""


@dataclass(frozen=True, slots=True)
class CanaryState:
    """Where a revision's canary stands, as its ReplicaSet's annotations say."""

    step: int = 0
    """The index of the step it is at (``len(steps)``: past the last one)."""
    paused_at: float | None = None
    """When the pause at ``step`` began."""
    promoted: int | None = None
    """The index of a step someone promoted (declared done)."""
    full: bool = False
    """Someone promoted past every step (``promote --full``)."""
    aborted_by: str | None = None
    """Who aborted it (``rollout abort``), if anyone."""


def canary_request(rs: ObservedReplicaSet) -> tuple[str, str]:
    """What ``rollout promote`` and ``rollout abort`` last wrote on ``rs`` (the annotations as
    they are, ``("", "")`` for none): a watch that sees it change wakes the loop at once."""
    return rs.annotation(CANARY_PROMOTE_ANNOTATION), rs.annotation(CANARY_ABORT_ANNOTATION)


def own_value(rs: ObservedReplicaSet, name: str) -> str | None:
    """The annotation ``name`` of ``rs`` without its revision prefix, None when it is missing or
    belongs to another revision."""
    revision, sep, value = rs.annotation(name).partition(":")
    return value if sep and revision == str(rs.state.revision) else None


def read_canary_state(rs: ObservedReplicaSet) -> CanaryState:
    """The canary state of ``rs``'s current revision from its annotations (others' ignored)."""

    def mine(name: str) -> list[str]:
        value = own_value(rs, name)
        return [] if value is None else value.split(":", 1)

    step, paused, promote, abort = (
        mine(name)
        for name in (
            CANARY_STEP_ANNOTATION,
            CANARY_PAUSED_AT_ANNOTATION,
            CANARY_PROMOTE_ANNOTATION,
            CANARY_ABORT_ANNOTATION,
        )
    )
    index = int(step[0]) if step and step[0].isdigit() else 0
    paused_at = parse_timestamp(paused[1]) if len(paused) == 2 and paused[0] == str(index) else None
    promoted = int(promote[0]) if promote and promote[0].isdigit() else None
    return CanaryState(
        step=index,
        paused_at=paused_at,
        promoted=promoted,
        full=bool(promote) and promote[0] == PROMOTE_FULL,
        aborted_by=":".join(abort) if abort else None,
    )


def read_promotions(rs: ObservedReplicaSet) -> tuple[tuple[str, str], ...]:
    """``((step, who), ...)`` of ``rs``'s current revision, in the order they were promoted;
    ``step`` is a 0-based index as text, or ``full``.

    >>> from gitdeploy.core.scaling.replicasets import ReplicaSetState
    >>> rs = ObservedReplicaSet("shop", "web", ReplicaSetState("web-a", "a", 3, 0.0),
    ...     ((CANARY_PROMOTIONS_ANNOTATION, "3:1=alice@laptop;full=bob@ci"),))
    >>> read_promotions(rs)
    (('1', 'alice@laptop'), ('full', 'bob@ci'))
    """
    value = own_value(rs, CANARY_PROMOTIONS_ANNOTATION)
    entries = (entry.partition("=") for entry in (value or "").split(";") if entry)
    return tuple((step, who) for step, _, who in entries)


def promotion_annotations(rs: ObservedReplicaSet, step: str, by: str) -> dict[str, str]:
    """What ``rollout promote`` writes, in one request: the promote the walk reads, and ``by``
    added to who promoted (``step``: an index as text, or ``full``).

    >>> from gitdeploy.core.scaling.replicasets import ReplicaSetState
    >>> rs = ObservedReplicaSet("shop", "web", ReplicaSetState("web-a", "a", 3, 0.0))
    >>> promotion_annotations(rs, "1", "al;ice")[CANARY_PROMOTIONS_ANNOTATION]
    '3:1=al,ice'
    """
    revision = rs.state.revision
    log = [f"{s}={who}" for s, who in (*read_promotions(rs), (step, by.replace(";", ",")))]
    return {
        CANARY_PROMOTE_ANNOTATION: f"{revision}:{step}",
        CANARY_PROMOTIONS_ANNOTATION: f"{revision}:{';'.join(log)}",
    }
