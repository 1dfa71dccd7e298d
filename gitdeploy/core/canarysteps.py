"""What an Argo Rollouts canary asks for (``spec.strategy.canary`` of a ``Rollout``), as typed,
immutable values: the steps, the background analysis and the bounds.

Only the fields gitdeploy can honour without a traffic router exist here; the manifests layer
refuses the others (traffic routing, ``setCanaryScale``, experiments, ...) with what to use
instead. Durations are whole seconds.

>>> params = CanaryParams(steps=(SetWeight(20), Pause(), SetWeight(50), Pause(60)))
>>> [step.describe() for step in params.steps]
['setWeight 20%', 'pause (until promoted)', 'setWeight 50%', 'pause 60s']
>>> params.max_surge, params.max_unavailable, params.abort_scale_down_delay_seconds
('25%', '25%', None)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # analysistemplates reads models, which reads this module
    from gitdeploy.core.analysistemplates import AnalysisTemplate


@dataclass(frozen=True, slots=True)
class AnalysisArg:
    """An argument given to an analysis (``args`` of a step or of the background analysis): a
    ``value``, or the pod-template hash of the stable or latest ReplicaSet
    (``valueFrom.podTemplateHashValue``)."""

    name: str
    value: str | None = None
    pod_template_hash: str | None = None
    """``Stable`` or ``Latest`` when the value is a pod-template hash."""


@dataclass(frozen=True, slots=True)
class AnalysisRef:
    """Which AnalysisTemplates (by name, in the Rollout's namespace) to run, with what args."""

    templates: tuple[str, ...]
    args: tuple[AnalysisArg, ...] = ()


@dataclass(frozen=True, slots=True)
class SetWeight:
    """Scale the canary to ``weight`` percent of the pods (and the stable to the rest)."""

    weight: int

    def describe(self) -> str:
        return f"setWeight {self.weight}%"


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``duration_seconds``, or until someone promotes the rollout when it is None."""

    duration_seconds: int | None = None

    def describe(self) -> str:
        if self.duration_seconds is None:
            return "pause (until promoted)"
        return f"pause {self.duration_seconds}s"


@dataclass(frozen=True, slots=True)
class AnalysisStep:
    """Run an analysis and go on when it succeeds; a failed one aborts the rollout."""

    analysis: AnalysisRef

    def describe(self) -> str:
        return f"analysis {', '.join(self.analysis.templates)}"


CanaryStep = SetWeight | Pause | AnalysisStep


@dataclass(frozen=True, slots=True)
class BackgroundAnalysis:
    """An analysis that runs beside the steps from ``starting_step`` (an index into the steps)
    until the last step is done (the canary then grows to full size without it); its failure
    aborts the rollout, an inconclusive result holds the walk until ``rollout promote``."""

    analysis: AnalysisRef
    starting_step: int = 0


@dataclass(frozen=True, slots=True)
class CanaryParams:
    """A canary without a traffic router: the weight is the share of pods. Argo Rollouts'
    defaults: bounds 25%/25%."""

    steps: tuple[CanaryStep, ...] = ()
    max_surge: int | str = "25%"
    max_unavailable: int | str = "25%"
    analysis: BackgroundAnalysis | None = None
    abort_scale_down_delay_seconds: int | None = None
    """As written (None when not): Argo Rollouts honours it only with a traffic router, so a
    basic canary's abort rolls back to the stable at once (see
    :func:`~gitdeploy.core.planning.canarytimeline.abort_line`)."""
    progress_deadline_abort: bool = False
    """Abort (scale the canary down) when the progress deadline passes, not only mark it."""
    templates: tuple[AnalysisTemplate, ...] = ()
    """The AnalysisTemplates the steps name (the repo-wide pass finds them in the Rollout's
    namespace): a run resolves its metrics from these."""


def encode_steps(steps: tuple[CanaryStep, ...]) -> str:
    """``steps`` in a few characters, for an annotation that lets ``status`` and ``history``
    describe a canary from the cluster alone (:func:`decode_steps` reads it back).

    >>> encode_steps((SetWeight(25), Pause(), Pause(30), AnalysisStep(AnalysisRef(("a", "b")))))
    'w25,p,p30,a=a+b'
    """
    return ",".join(_encode_step(step) for step in steps)


def _encode_step(step: CanaryStep) -> str:
    if isinstance(step, SetWeight):
        return f"w{step.weight}"
    if isinstance(step, Pause):
        return "p" if step.duration_seconds is None else f"p{step.duration_seconds}"
    return "a=" + "+".join(step.analysis.templates)


def decode_steps(text: str) -> tuple[CanaryStep, ...] | None:
    """The steps :func:`encode_steps` wrote; None when ``text`` is not such a value (an
    annotation edited by hand).

    >>> decode_steps("w25,p,p30,a=a+b")[:3], decode_steps("a=a+b")[0].analysis.templates
    ((SetWeight(weight=25), Pause(duration_seconds=None), Pause(duration_seconds=30)), ('a', 'b'))
    >>> decode_steps(""), decode_steps("w25,x")
    ((), None)
    """
    steps: list[CanaryStep] = []
    for part in text.split(",") if text else ():
        if part.startswith("a="):
            steps.append(AnalysisStep(AnalysisRef(tuple(part[2:].split("+")))))
        elif part[:1] == "w" and part[1:].isdigit():
            steps.append(SetWeight(int(part[1:])))
        elif part == "p" or (part[:1] == "p" and part[1:].isdigit()):
            steps.append(Pause(int(part[1:]) if part[1:] else None))
        else:
            return None
    return tuple(steps)
