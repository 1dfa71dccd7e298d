"""What ``sync --wait`` and ``rollout status`` say a rollout waits for, in kubectl's words, and
nothing that is not so (issue 24: no "0 old replicas are pending termination" for a new app)."""

from __future__ import annotations

import pytest

from gitdeploy.cli.progress import waiting_line
from gitdeploy.controller.inspect import AppView
from gitdeploy.core.models import AppKey


def view(
    replicas: int, ready: int, up_to_date: int, available: int, phase: str, message: str = ""
) -> AppView:
    return AppView(
        AppKey("shop", "web"), replicas, ready, up_to_date, available, 1, "", phase, "", "", message, ""
    )


@pytest.mark.parametrize(
    ("shown", "line"),
    [
        (view(0, 0, 0, 0, ""), "Waiting for rollout to start..."),
        (
            view(2, 0, 0, 0, "Running"),
            "Waiting for rollout to finish: 0 out of 2 new replicas have been updated...",
        ),
        (
            view(2, 2, 2, 1, "Running"),
            "Waiting for rollout to finish: 1 of 2 updated replicas are available...",
        ),
        (
            view(2, 3, 2, 2, "Running"),
            "Waiting for rollout to finish: 1 old replicas are pending termination...",
        ),
        (
            view(2, 2, 2, 2, "Running", "revision 1: post hook running"),
            "Waiting for rollout to finish: revision 1: post hook running...",
        ),
        (view(2, 2, 2, 2, "Running"), "Waiting for rollout to finish..."),
    ],
)
def test_the_line_says_what_the_rollout_waits_for(shown: AppView, line: str) -> None:
    assert waiting_line(shown) == line
    assert "0 old replicas" not in waiting_line(shown)
