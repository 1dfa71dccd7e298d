"""Knobs of the simulated kubelet, saved in the state directory so a restart keeps them."""

from __future__ import annotations

import fnmatch
import json
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["ImageBehaviour", "SimulationConfig"]


class ImageBehaviour:
    """What the simulated kubelet does with an image (see :meth:`SimulationConfig.behaviour`)."""

    OK = "ok"
    PULL_FAILURE = "pull-failure"
    CRASH = "crash"
    UNREADY = "unready"
    HANG = "hang"


@dataclass(frozen=True)
class SimulationConfig:
    """How pods behave.

    * ``pod_start_seconds``: a long-running pod is Pending for this long, then Running and Ready.
    * ``job_seconds``: a run-to-completion pod (``restartPolicy`` Never/OnFailure) ends this long
      after it was created: ``Succeeded``, or ``Failed`` when its image matches a failing pattern.
    * ``image_pull_failure`` / ``image_crash`` / ``image_unready`` / ``image_hang``: shell-style
      patterns (``fnmatch``) on the image reference, e.g. ``*:broken`` or ``registry.local/missing/*``.
      A run-to-completion pod of a hanging image never ends by itself (a hung hook or deployer).

    Any pod with ``activeDeadlineSeconds`` is stopped that long after it started, as the kubelet
    does: ``Failed`` with reason ``DeadlineExceeded``.
    """

    pod_start_seconds: float = 2.0
    job_seconds: float = 5.0
    image_pull_failure: tuple[str, ...] = ()
    image_crash: tuple[str, ...] = ()
    image_unready: tuple[str, ...] = ()
    image_hang: tuple[str, ...] = ()

    def behaviour(self, image: str) -> str:
        """The :class:`ImageBehaviour` of ``image``; pull failure wins over crash over unready."""
        for patterns, outcome in (
            (self.image_pull_failure, ImageBehaviour.PULL_FAILURE),
            (self.image_crash, ImageBehaviour.CRASH),
            (self.image_unready, ImageBehaviour.UNREADY),
            (self.image_hang, ImageBehaviour.HANG),
        ):
            if any(fnmatch.fnmatchcase(image, pattern) for pattern in patterns):
                return outcome
        return ImageBehaviour.OK

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> SimulationConfig:
        data = json.loads(text)
        return cls(
            pod_start_seconds=float(data.get("pod_start_seconds", 2.0)),
            job_seconds=float(data.get("job_seconds", 5.0)),
            image_pull_failure=tuple(data.get("image_pull_failure", ())),
            image_crash=tuple(data.get("image_crash", ())),
            image_unready=tuple(data.get("image_unready", ())),
            image_hang=tuple(data.get("image_hang", ())),
        )

    def save(self, path: Path) -> None:
        path.write_text(self.to_json() + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> SimulationConfig | None:
        try:
            return cls.from_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
