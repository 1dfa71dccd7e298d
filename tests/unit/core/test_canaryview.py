"""A canary as status and history show it, read from a ReplicaSet's annotations and pods (pure):
the walk's annotations as the walk and `rollout promote` / `rollout abort` write them."""

from __future__ import annotations

import pytest

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.runs import AnalysisRun, Measurement, MetricResult
from gitdeploy.core.analysis.stored import encode_run
from gitdeploy.core.canarystate import (
    CANARY_ABORT_ANNOTATION,
    CANARY_ANALYSIS_ANNOTATION,
    CANARY_BACKGROUND_ANNOTATION,
    CANARY_PROMOTIONS_ANNOTATION,
    CANARY_STEPS_ANNOTATION,
    promotion_annotations,
    read_canary_state,
    read_promotions,
)
from gitdeploy.core.canarysteps import (
    AnalysisRef,
    AnalysisStep,
    CanaryStep,
    Pause,
    SetWeight,
    decode_steps,
    encode_steps,
)
from gitdeploy.core.canaryview import read_canary_view
from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.core.rollout.canarywalk import Walk, walk_annotations
from gitdeploy.core.scaling.replicasets import ReplicaSetState

T = 1_700_000_000.0
STEPS: tuple[CanaryStep, ...] = (
    SetWeight(25),
    Pause(),
    SetWeight(50),
    Pause(30),
    AnalysisStep(AnalysisRef(("error-rate",))),
    SetWeight(75),
    Pause(),
)


def canary_rs(walk: Walk, ready: int = 0, extra: dict[str, str] | None = None) -> ObservedReplicaSet:
    """Revision 3's canary ReplicaSet with the annotations the walk left at ``walk`` (and ``extra``)."""
    annotations = dict(walk_annotations(3, walk, STEPS)) | (extra or {})
    state = ReplicaSetState("web-abc", "abc", 3, T, replicas=ready, ready=ready, available=ready)
    return ObservedReplicaSet("shop", "web", state, tuple(annotations.items()))


@pytest.mark.parametrize(
    ("walk", "ready", "now", "live", "steady"),
    [
        (Walk(0, None, None, False), 1, T, "step 1/7, setWeight 25 (1/1 canary pods ready)", None),
        (Walk(1, T, None, True), 1, T + 500, "step 2/7, paused (waiting for promote)", None),
        # a pause whose sizes are not reached yet has not begun: it says what it waits for
        (Walk(1, None, None, False), 0, T, "step 2/7, pause (until promoted) (0/1 canary pods ready)", None),
        (Walk(2, None, None, False), 1, T, "step 3/7, setWeight 50 (1/2 canary pods ready)", None),
        (Walk(3, T, 30.0, False), 2, T + 18, "step 4/7, pause 30s (resumes in 12s)", "step 4/7, pause 30s"),
        (Walk(3, T, 0.5, False), 2, T + 31, "step 4/7, pause 30s (resumes in 0s)", "step 4/7, pause 30s"),
        (Walk(4, None, None, False), 2, T, "step 5/7, analysis error-rate", None),
        (Walk(7, None, None, False), 3, T, "steps done (7/7), to full size (3/4 pods ready)", None),
    ],
)
def test_status_says_where_the_canary_is_now(
    walk: Walk, ready: int, now: float, live: str, steady: str | None
) -> None:
    view = read_canary_view(canary_rs(walk, ready), replicas=4)
    assert view is not None
    assert (view.describe(now), view.describe(None)) == (live, steady or live)


def test_an_abort_says_who_and_where() -> None:
    rs = canary_rs(Walk(1, T, None, True), extra={CANARY_ABORT_ANNOTATION: "3:ada@laptop"})
    view = read_canary_view(rs, 4)
    assert view is not None and view.describe(T) == "aborted by ada@laptop at step 2/7"


def running(count: int, wanted: int | None, value: str = "0.01") -> AnalysisRun:
    done = Measurement(AnalysisPhase.SUCCESSFUL, T, T + 1, value)
    rate = MetricResult(
        "error-rate", AnalysisPhase.RUNNING, (done,) * count, count, successful=count, wanted=wanted
    )
    return AnalysisRun(T, (rate,))


@pytest.mark.parametrize(
    ("step", "annotations", "line"),
    [
        # at the analysis step (index 4): its run, from the annotation
        (
            4,
            {CANARY_ANALYSIS_ANNOTATION: encode_run(3, 4, running(2, 5))},
            "step 5/7, analysis error-rate; analysis error-rate: 2/5 measurements, last 0.01 (Successful)",
        ),
        # the background analysis beside a pause, measured until the steps end
        (
            1,
            {CANARY_BACKGROUND_ANNOTATION: encode_run(3, -1, running(3, None, "[0.2]"))},
            "step 2/7, paused (waiting for promote); "
            "background analysis error-rate: 3 measurements, last [0.2] (Successful)",
        ),
        # both at once
        (
            4,
            {
                CANARY_ANALYSIS_ANNOTATION: encode_run(3, 4, running(0, 1)),
                CANARY_BACKGROUND_ANNOTATION: encode_run(3, -1, running(1, None)),
            },
            "step 5/7, analysis error-rate; analysis error-rate: not measured yet; "
            "background analysis error-rate: 1 measurement, last 0.01 (Successful)",
        ),
        # a run of another revision (a reused ReplicaSet), of another step, or one that is over
        (4, {CANARY_ANALYSIS_ANNOTATION: encode_run(2, 4, running(2, 5))}, "step 5/7, analysis error-rate"),
        (
            5,
            {CANARY_ANALYSIS_ANNOTATION: encode_run(3, 4, running(2, 5))},
            "step 6/7, setWeight 75 (0/3 canary pods ready)",
        ),
        (
            4,
            {CANARY_ANALYSIS_ANNOTATION: encode_run(3, 4, AnalysisRun(T, phase=AnalysisPhase.SUCCESSFUL))},
            "step 5/7, analysis error-rate",
        ),
        # past the steps the background analysis is over
        (
            7,
            {CANARY_BACKGROUND_ANNOTATION: encode_run(3, -1, running(3, None))},
            "steps done (7/7), to full size (0/4 pods ready)",
        ),
    ],
)
def test_status_shows_the_running_analysis_with_its_measurements(
    step: int, annotations: dict[str, str], line: str
) -> None:
    paused = T if step == 1 else None
    view = read_canary_view(canary_rs(Walk(step, paused, None, step == 1), extra=annotations), replicas=4)
    assert view is not None and view.describe(T + 5) == view.describe(None) == line


def test_an_aborted_canary_shows_no_analysis_under_way() -> None:
    extra = {
        CANARY_ABORT_ANNOTATION: "3:ada@laptop",
        CANARY_ANALYSIS_ANNOTATION: encode_run(3, 4, running(1, 5)),
    }
    view = read_canary_view(canary_rs(Walk(4, None, None, False), extra=extra), 4)
    assert view is not None and view.describe(T) == "aborted by ada@laptop at step 5/7"


@pytest.mark.parametrize(
    "annotations",
    [
        {},  # no canary: a Deployment's ReplicaSet
        {CANARY_STEPS_ANNOTATION: "2:w25,p"},  # another revision's walk (the ReplicaSet was reused)
        {CANARY_STEPS_ANNOTATION: "3:"},  # a first revision: no steps walked, full size at once
        {CANARY_STEPS_ANNOTATION: "3:w25,zz"},  # edited by hand into nonsense
    ],
)
def test_no_canary_view_without_this_revisions_steps(annotations: dict[str, str]) -> None:
    state = ReplicaSetState("web-abc", "abc", 3, T, replicas=4)
    assert read_canary_view(ObservedReplicaSet("shop", "web", state, tuple(annotations.items())), 4) is None


def promoted(rs: ObservedReplicaSet, step: str, by: str) -> ObservedReplicaSet:
    """``rs`` after ``rollout promote`` wrote its request."""
    annotations = dict(rs.annotations) | promotion_annotations(rs, step, by)
    return ObservedReplicaSet(rs.namespace, rs.app, rs.state, tuple(annotations.items()))


def test_who_promoted_is_kept_beside_the_promote_the_walk_reads() -> None:
    rs = promoted(canary_rs(Walk(1, T, None, True)), "1", "alice@laptop")
    # the walk reads the promote as before: step index 1 is done
    assert read_canary_state(rs).promoted == 1
    rs = promoted(rs, "full", "bob@ci")
    assert read_canary_state(rs).full and read_promotions(rs) == (("1", "alice@laptop"), ("full", "bob@ci"))
    # a later revision reusing the ReplicaSet starts with nobody's promotions
    other = ObservedReplicaSet("shop", "web", ReplicaSetState("web-abc", "abc", 5, T), rs.annotations)
    assert read_promotions(other) == () and read_canary_state(other).promoted is None
    assert promotion_annotations(other, "0", "cy@z")[CANARY_PROMOTIONS_ANNOTATION] == "5:0=cy@z"


@pytest.mark.parametrize(
    ("step", "promotions", "aborted", "summary"),
    [
        (
            7,
            (("1", "al@x"), ("6", "al@x")),
            None,
            "all 7 steps (pauses: step 2 until promoted, step 4 30s, "
            "step 7 until promoted); promoted step 2 by al@x; promoted step 7 by al@x",
        ),
        (1, (), "ada@laptop", "reached step 2/7 (pauses: step 2 until promoted); aborted by ada@laptop"),
        (
            2,
            (("full", "bo@ci"),),
            None,
            "all 7 steps (pauses: step 2 until promoted, step 4 30s, "
            "step 7 until promoted); promoted all steps by bo@ci",
        ),
        (0, (), None, "reached step 1/7"),
    ],
)
def test_history_lists_the_steps_reached_the_pauses_and_who(
    step: int, promotions: tuple[tuple[str, str], ...], aborted: str | None, summary: str
) -> None:
    rs = canary_rs(Walk(step, None, None, False))
    for index, who in promotions:
        rs = promoted(rs, index, who)
    if aborted is not None:
        rs = ObservedReplicaSet(
            "shop", "web", rs.state, (*rs.annotations, (CANARY_ABORT_ANNOTATION, f"3:{aborted}"))
        )
    view = read_canary_view(rs, 4)
    assert view is not None and view.summary() == summary


def test_steps_survive_their_annotation() -> None:
    assert decode_steps(encode_steps(STEPS)) == STEPS
