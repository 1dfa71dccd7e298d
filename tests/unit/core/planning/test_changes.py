"""The plan classification: one table of (baseline app, head app) -> kind, and the details of each kind."""

from __future__ import annotations

import doctest
from dataclasses import replace

import pytest

from gitdeploy.core.canarysteps import CanaryParams, Pause, SetWeight
from gitdeploy.core.commits import CommitInfo
from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.core.hashing import canonical_template, template_hash
from gitdeploy.core.models import (
    App,
    AppKey,
    AppKind,
    FailurePolicy,
    Hook,
    Location,
    RecreateParams,
    RepoSettings,
    RollingParams,
    Selector,
    Strategy,
    StrategyType,
    Triggers,
)
from gitdeploy.core.planning import changes as planning
from gitdeploy.core.planning.changes import (
    Baseline,
    ChangeKind,
    DesiredSnapshot,
    EarlierTemplate,
    plan_app,
    plan_changes,
)

KEY = AppKey("demo", "web")
ROLLING = Strategy(StrategyType.ROLLING_UPDATE, rolling=RollingParams())
CONFIG_CHANGE = Triggers(config_change=True)


def make_app(
    image: str = "nginx:1.25",
    *,
    replicas: int | None = 3,
    strategy: Strategy = ROLLING,
    triggers: Triggers = CONFIG_CHANGE,
    paused: bool = False,
    kind: AppKind = AppKind.DEPLOYMENT,
    key: AppKey = KEY,
    file: str = "apps/web.yaml",
) -> App:
    template = canonical_template(
        {
            "metadata": {"labels": {"app": key.name}},
            "spec": {"containers": [{"name": key.name, "image": image}]},
        }
    )
    return App(
        kind=kind,
        api_version="apps/v1",
        key=key,
        location=Location(file, 1),
        template=template,
        template_hash=template_hash(template),
        selector=Selector(match_labels=(("app", key.name),)),
        strategy=strategy,
        triggers=triggers,
        replicas=replicas,
        paused=paused,
    )


COMMIT = CommitInfo(
    "a" * 40, "Ada", "ada@example.com", 1.0, "Cy", "cy@example.com", 1.0, "Add web", "Add web"
)
NO_CONFIG_CHANGE = Triggers(config_change=False)

CASES: list[tuple[str, App | None, App | None, dict[str, object], ChangeKind]] = [
    ("identical", make_app(), make_app(), {}, ChangeKind.UNCHANGED),
    ("image bump", make_app(), make_app("nginx:1.26"), {}, ChangeKind.ROLLOUT),
    ("image bump with replicas", make_app(), make_app("nginx:1.26", replicas=5), {}, ChangeKind.ROLLOUT),
    ("replicas only", make_app(), make_app(replicas=5), {}, ChangeKind.SCALE),
    ("replicas no longer set: live count kept", make_app(), make_app(replicas=None), {}, ChangeKind.SETTINGS),
    (
        "strategy only",
        make_app(),
        make_app(strategy=Strategy(StrategyType.RECREATE)),
        {},
        ChangeKind.SETTINGS,
    ),
    ("pausing", make_app(), make_app(paused=True), {}, ChangeKind.SETTINGS),
    ("new app", None, make_app(), {}, ChangeKind.ADD),
    ("gone app", make_app(), None, {}, ChangeKind.REMOVE),
    ("new template, paused", make_app(), make_app("nginx:1.26", paused=True), {}, ChangeKind.MANUAL),
    (
        "new template, no ConfigChange trigger",
        make_app(triggers=NO_CONFIG_CHANGE),
        make_app("nginx:1.26", triggers=NO_CONFIG_CHANGE),
        {},
        ChangeKind.MANUAL,
    ),
    (
        "new template, pinned (live)",
        make_app(),
        make_app("nginx:1.26"),
        {"pinned": "rolled back"},
        ChangeKind.MANUAL,
    ),
    (
        "earlier template",
        make_app(),
        make_app("nginx:1.24"),
        {"earlier": EarlierTemplate(COMMIT)},
        ChangeKind.ROLLBACK,
    ),
    (
        "earlier template but paused: manual wins",
        make_app(),
        make_app("nginx:1.24", paused=True),
        {"earlier": EarlierTemplate(COMMIT)},
        ChangeKind.MANUAL,
    ),
    (
        "problems at the head",
        make_app(),
        None,
        {"head_problems": [Diagnostic("apps/web.yaml", 7, 3, "demo/web", "bad")]},
        ChangeKind.INVALID,
    ),
    (
        "valid again after an invalid baseline",
        None,
        make_app(),
        {"invalid_at_base": True},
        ChangeKind.ROLLOUT,
    ),
]


@pytest.mark.parametrize(("name", "before", "after", "extra", "kind"), CASES, ids=[c[0] for c in CASES])
def test_plan_app_kind(
    name: str, before: App | None, after: App | None, extra: dict[str, object], kind: ChangeKind
) -> None:
    assert plan_app(KEY, before, after, **extra).kind is kind  # type: ignore[arg-type]


def test_rollout_details_resolve_fenceposts_and_hooks() -> None:
    pre = Hook(FailurePolicy.ABORT, "web", ("/bin/migrate",))
    strategy = Strategy(
        StrategyType.ROLLING, rolling=RollingParams(max_surge="50%", max_unavailable=1, pre=pre)
    )
    plan = plan_app(
        KEY, make_app(replicas=4, strategy=strategy), make_app("nginx:1.26", replicas=4, strategy=strategy)
    )
    assert plan.kind is ChangeKind.ROLLOUT
    assert plan.reason == "web image nginx:1.25 -> nginx:1.26"
    assert plan.rollout is not None
    assert (plan.rollout.surge_pods, plan.rollout.unavailable_pods) == (2, 1)
    assert plan.rollout.describe() == "Rolling, maxSurge 50% (2 pods), maxUnavailable 1 (1 pod) of 4 replicas"
    assert [h.render() for h in plan.rollout.hooks] == [
        "pre: /bin/migrate in container web, on failure Abort"
    ]


@pytest.mark.parametrize(
    ("before_replicas", "after_replicas", "expected"),
    [(3, 3, 3), (3, None, 3), (None, None, 1), (None, 7, 7)],
)
def test_rollout_replicas_follow_the_live_count_when_unset(
    before_replicas: int | None, after_replicas: int | None, expected: int
) -> None:
    plan = plan_app(KEY, make_app(replicas=before_replicas), make_app("nginx:1.26", replicas=after_replicas))
    assert plan.rollout is not None and plan.rollout.replicas == expected


def test_recreate_rollout_has_no_fenceposts() -> None:
    recreate = Strategy(StrategyType.RECREATE, recreate=RecreateParams())
    plan = plan_app(KEY, make_app(strategy=recreate), make_app("nginx:1.26", strategy=recreate))
    assert plan.rollout is not None and plan.rollout.surge_pods is None
    assert plan.rollout.describe() == "Recreate: stop all 3 old pods, then start 3 new ones"


def test_a_canary_rollout_names_its_bounds_and_steps() -> None:
    params = CanaryParams(
        steps=(SetWeight(25), Pause(30), SetWeight(75), Pause()), max_surge=1, max_unavailable=0
    )
    canary = Strategy(StrategyType.CANARY, canary=params)
    plan = plan_app(
        KEY, make_app(replicas=4, strategy=canary), make_app("nginx:1.26", replicas=4, strategy=canary)
    )
    assert plan.rollout is not None and (plan.rollout.surge_pods, plan.rollout.unavailable_pods) == (1, 0)
    assert plan.rollout.describe() == (
        "Canary, maxSurge 1 (1 pod), maxUnavailable 0 (0 pods) of 4 replicas; "
        "4 steps, timed pauses 30s in all, 1 pause until promoted"
    )
    assert plan.rollout.steps == (
        "1. setWeight 25 → canary 1, stable 3",
        "2. pause 30s",
        "3. setWeight 75 → canary 3, stable 1",
        "4. pause until promoted (`gitdeploy rollout promote`)",
        "then full size → canary 4, stable 0",
    )
    assert plan.rollout.on_abort == "on abort: back to the stable at once, within maxSurge and maxUnavailable"


@pytest.mark.parametrize("prune", [True, False])
def test_remove_says_whether_prune_is_on(prune: bool) -> None:
    plan = plan_app(KEY, make_app(), None, settings=RepoSettings(prune=prune))
    assert plan.prune is prune
    assert ("prune is on" in plan.reason) is prune


def test_remove_of_an_app_that_opts_out_of_prune_keeps_it() -> None:
    kept = replace(make_app(), annotations=(("gitdeploy.io/prune", "false"),))
    plan = plan_app(KEY, kept, None, settings=RepoSettings(prune=True))
    assert plan.prune is False
    assert plan.reason == 'no longer in git: keeps running, never pruned (gitdeploy.io/prune: "false")'


def test_manual_reasons_and_rollback_named() -> None:
    manual = plan_app(
        KEY,
        make_app(triggers=NO_CONFIG_CHANGE),
        make_app("nginx:1.26", paused=True, triggers=NO_CONFIG_CHANGE),
    )
    assert manual.manual_reasons == ("paused: true", "no ConfigChange trigger")
    rollback = plan_app(KEY, make_app(), make_app("nginx:1.24"), earlier=EarlierTemplate(COMMIT, revision=2))
    assert rollback.reason.startswith(
        'back to the template of revision 2, commit aaaaaaaaaaaa "Add web" by Ada'
    )


def test_plan_changes_sorts_by_kind_and_routes_problems() -> None:
    db = AppKey("demo", "db")
    gone = AppKey("demo", "gone")
    broken_file = Diagnostic("apps/gone.yaml", 3, 1, "", "not valid YAML")
    elsewhere = Diagnostic("apps/other.yaml", 1, 1, "", "not valid YAML")
    baseline = Baseline(
        "base",
        (make_app(), make_app(key=db, file="apps/db.yaml"), make_app(key=gone, file="apps/gone.yaml")),
    )
    head = DesiredSnapshot(
        apps=(make_app("nginx:1.26"), make_app(key=db, file="apps/db.yaml", replicas=1)),
        diagnostics=(broken_file, elsewhere),
    )
    plan = plan_changes(baseline, head)
    assert [(a.key.name, a.kind) for a in plan.apps] == [
        ("gone", ChangeKind.INVALID),  # its file no longer parses: invalid, not removed
        ("web", ChangeKind.ROLLOUT),
        ("db", ChangeKind.SCALE),
    ]
    assert plan.problems == (elsewhere,)
    assert not plan.valid and plan.has_changes
    assert plan.counts()[ChangeKind.ROLLOUT] == 1 and plan.unchanged == 0


def test_plan_changes_counts_unchanged_and_is_valid_without_problems() -> None:
    plan = plan_changes(Baseline("base", (make_app(),)), DesiredSnapshot(apps=(make_app(),)))
    assert (plan.apps, plan.unchanged, plan.valid, plan.has_changes) == ((), 1, True, False)


def test_earlier_templates_are_looked_up_only_for_new_templates() -> None:
    same, bumped = make_app(key=AppKey("demo", "a")), make_app()
    pairs = planning.apps_with_new_template([same, bumped], [same, replace(bumped, template_hash="other")])
    assert [after.key for _, after in pairs] == [KEY]


def test_docstring_examples() -> None:
    assert doctest.testmod(planning).failed == 0
