"""Drift: ReplicaSets of a settled app whose ``spec.replicas`` is not what gitdeploy set them to.

Once an app's current revision is Complete, gitdeploy keeps its ReplicaSet at the app's size and
every older one at 0. Anything else was done by someone else (``kubectl scale rs``, an editor):
the next pass scales it back, as the Deployment controller would, and says so in a
``DriftCorrected`` event; ``gitdeploy status`` shows it as ``OutOfSync`` meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gitdeploy.core.scaling.replicasets import ReplicaSetState

DRIFT_CORRECTED = "DriftCorrected"
"""The reason of the event a pass that undoes drift records on the app."""


@dataclass(frozen=True)
class Drift:
    """ReplicaSet ``name`` asks for ``replicas`` pods where gitdeploy set ``wanted``."""

    name: str
    replicas: int
    wanted: int

    def render(self) -> str:
        """What the status says of it.

        >>> Drift("web-abc12", 0, 2).render()
        'web-abc12 was scaled to 0 by hand (gitdeploy set 2)'
        """
        return f"{self.name} was scaled to {self.replicas} by hand (gitdeploy set {self.wanted})"


def find_drift(
    current: ReplicaSetState, others: Iterable[ReplicaSetState], replicas: int
) -> tuple[Drift, ...]:
    """The drift of a settled app whose ``current`` ReplicaSet runs its Complete revision at
    ``replicas`` pods: the current one at another size, and any other one not at 0.

    >>> new = ReplicaSetState("web-b", "b", 2, 2.0, replicas=0)
    >>> old = ReplicaSetState("web-a", "a", 1, 1.0, replicas=1)
    >>> [d.render() for d in find_drift(new, [old], 2)]
    ['web-b was scaled to 0 by hand (gitdeploy set 2)', 'web-a was scaled to 1 by hand (gitdeploy set 0)']
    >>> find_drift(ReplicaSetState("web-b", "b", 2, 2.0, replicas=2), [], 2)
    ()
    """
    found = [Drift(current.name, current.replicas, replicas)] if current.replicas != replicas else []
    found += [Drift(rs.name, rs.replicas, 0) for rs in others if rs.replicas != 0]
    return tuple(found)


def describe_correction(drift: Sequence[Drift], scaled_to: Mapping[str, int]) -> str:
    """What a pass undid: each drifted ReplicaSet and what the pass scaled it to (``scaled_to``);
    a rolling update's bounds may take it back over more than one step.

    >>> describe_correction([Drift("web-abc12", 0, 2)], {"web-abc12": 2})
    'web-abc12 was scaled to 0 by hand; scaled back to 2'
    >>> describe_correction([Drift("web-old", 4, 0)], {"web-old": 2})
    'web-old was scaled to 4 by hand; scaled to 2 on the way back to 0'
    >>> describe_correction([Drift("web-old", 4, 0)], {})
    'web-old was scaled to 4 by hand; scaled back to 0 in a later step'
    """
    parts = []
    for found in drift:
        to = scaled_to.get(found.name)
        if to == found.wanted:
            done = f"scaled back to {found.wanted}"
        elif to is not None:
            done = f"scaled to {to} on the way back to {found.wanted}"
        else:
            done = f"scaled back to {found.wanted} in a later step"
        parts.append(f"{found.name} was scaled to {found.replicas} by hand; {done}")
    return "; ".join(parts)


__all__ = ["DRIFT_CORRECTED", "Drift", "describe_correction", "find_drift"]
