"""Every semantic check and schema rule, table-driven: the right message, at the right line."""

from __future__ import annotations

import pytest

from gitdeploy.core.models import AppKey, AppKind, FailurePolicy, PodReplacementPolicy, StrategyType
from gitdeploy.manifests.documents import ManifestFile
from gitdeploy.manifests.loader import LoadResult, load_files

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.25
"""

DC = """\
apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata:
  name: api
spec:
  replicas: 2
  selector:
    app: api
  template:
    metadata:
      labels:
        app: api
    spec:
      containers:
      - name: api
        image: example/api:1
  strategy:
    type: Rolling
    rollingParams:
      pre:
        failurePolicy: Abort
        execNewPod:
          containerName: api
          command: [migrate]
  triggers:
  - type: ConfigChange
  - type: ImageChange
    imageChangeParams:
      automatic: true
      containerNames: [api]
      from:
        kind: ImageStreamTag
        name: api:latest
"""

STREAM = """\
apiVersion: image.openshift.io/v1
kind: ImageStream
metadata:
  name: api
spec:
  tags:
  - name: latest
    from:
      kind: DockerImage
      name: registry.local/api:latest
"""


def load(files: dict[str, str], settings: str | None = None) -> LoadResult:
    settings_file = ManifestFile("gitdeploy.yaml", settings.encode()) if settings is not None else None
    return load_files([ManifestFile(path, text.encode()) for path, text in files.items()], settings_file)


def test_the_base_manifests_are_valid() -> None:
    result = load({"web.yaml": DEPLOYMENT, "api.yaml": DC, "streams.yaml": STREAM})
    assert result.diagnostics == ()
    assert [str(a.key) for a in result.apps] == ["default/api", "default/web"]


# (id, files, settings, expected file, expected line, message fragment)
CASES: list[tuple[str, dict[str, str], str | None, str, int, str]] = [
    (
        "selector-does-not-match-template",
        {"web.yaml": DEPLOYMENT.replace("      app: web\n  template", "      app: other\n  template")},
        None,
        "web.yaml",
        7,
        "does not match the template labels",
    ),
    (
        "dc-selector-does-not-match-template",
        {"api.yaml": DC.replace("    app: api\n  template", "    app: nope\n  template"), "s.yaml": STREAM},
        None,
        "api.yaml",
        7,
        "does not match the template labels",
    ),
    (
        "selector-expression-not-satisfied",
        {
            "web.yaml": DEPLOYMENT.replace(
                "    matchLabels:\n      app: web\n",
                "    matchExpressions:\n    - {key: tier, operator: In, values: [front]}\n",
            )
        },
        None,
        "web.yaml",
        7,
        "does not match the template labels",
    ),
    (
        "selector-in-without-values",
        {
            "web.yaml": DEPLOYMENT.replace(
                "    matchLabels:\n      app: web\n",
                "    matchLabels:\n      app: web\n    matchExpressions:\n    - {key: app, operator: In}\n",
            )
        },
        None,
        "web.yaml",
        7,
        "needs values for In",
    ),
    (
        "surge-and-unavailable-both-zero",
        {
            "web.yaml": DEPLOYMENT
            + "  strategy:\n    rollingUpdate:\n      maxSurge: 0\n      maxUnavailable: 0%\n"
        },
        None,
        "web.yaml",
        21,
        "both 0",
    ),
    (
        "dc-surge-and-unavailable-both-zero",
        {
            "api.yaml": DC.replace(
                "    rollingParams:\n", "    rollingParams:\n      maxSurge: 0%\n      maxUnavailable: 0\n"
            ),
            "s.yaml": STREAM,
        },
        None,
        "api.yaml",
        21,
        "both 0",
    ),
    (
        "malformed-percentage",
        {"web.yaml": DEPLOYMENT + "  strategy:\n    rollingUpdate:\n      maxSurge: 25 %\n"},
        None,
        "web.yaml",
        20,
        'maxSurge is "25 %"',
    ),
    (
        "fractional-percentage",
        {"web.yaml": DEPLOYMENT + "  strategy:\n    rollingUpdate:\n      maxUnavailable: 12.5%\n"},
        None,
        "web.yaml",
        20,
        'maxUnavailable is "12.5%"',
    ),
    (
        "max-unavailable-over-100-percent",
        {"web.yaml": DEPLOYMENT + "  strategy:\n    rollingUpdate:\n      maxUnavailable: 150%\n"},
        None,
        "web.yaml",
        20,
        "over 100%",
    ),
    (
        "negative-replicas",
        {"web.yaml": DEPLOYMENT.replace("replicas: 3", "replicas: -1")},
        None,
        "web.yaml",
        6,
        "spec.replicas must be at least 0",
    ),
    (
        "replicas-as-string",
        {"web.yaml": DEPLOYMENT.replace("replicas: 3", "replicas: '3'")},
        None,
        "web.yaml",
        6,
        "must be an integer, not a string",
    ),
    (
        "progress-deadline-not-above-min-ready",
        {"web.yaml": DEPLOYMENT + "  minReadySeconds: 30\n  progressDeadlineSeconds: 30\n"},
        None,
        "web.yaml",
        19,
        "progressDeadlineSeconds (30) must be greater than minReadySeconds (30)",
    ),
    (
        "name-not-dns-label",
        {"web.yaml": DEPLOYMENT.replace("name: web\nspec", "name: Web_App\nspec")},
        None,
        "web.yaml",
        4,
        'metadata.name is "Web_App"',
    ),
    (
        "name-too-long-for-replicaset-and-pod-names",
        {"web.yaml": DEPLOYMENT.replace("name: web\nspec", f"name: {'a' * 43}\nspec")},
        None,
        "web.yaml",
        4,
        "at most 42 fit",
    ),
    (
        "restart-policy-not-always",
        {
            "web.yaml": DEPLOYMENT.replace(
                "    spec:\n      containers", "    spec:\n      restartPolicy: OnFailure\n      containers"
            )
        },
        None,
        "web.yaml",
        15,
        "must restart Always",
    ),
    (
        "image-trigger-container-missing",
        {"api.yaml": DC.replace("containerNames: [api]", "containerNames: [apii]"), "s.yaml": STREAM},
        None,
        "api.yaml",
        30,
        "names container 'apii'",
    ),
    (
        "hook-container-missing",
        {"api.yaml": DC.replace("containerName: api", "containerName: sidecar"), "s.yaml": STREAM},
        None,
        "api.yaml",
        23,
        "pre hook names container 'sidecar'",
    ),
    (
        "image-trigger-stream-undefined",
        {"api.yaml": DC},
        None,
        "api.yaml",
        33,
        "defines no such image stream",
    ),
    (
        "image-trigger-tag-undefined",
        {"api.yaml": DC.replace("name: api:latest", "name: api:stable"), "s.yaml": STREAM},
        None,
        "api.yaml",
        33,
        "defines no such tag",
    ),
    (
        "same-app-defined-twice",
        {"a.yaml": DEPLOYMENT, "b.yaml": "# second copy\n" + DEPLOYMENT},
        None,
        "b.yaml",
        2,
        "defined more than once: a.yaml:1, b.yaml:2",
    ),
    (
        "namespace-not-allowed",
        {"web.yaml": DEPLOYMENT.replace("name: web\nspec", "name: web\n  namespace: prod\nspec")},
        "paths: ['.']\nallowedNamespaces: [staging]\n",
        "web.yaml",
        5,
        "namespace 'prod' is not allowed",
    ),
    (
        "unknown-field-with-suggestion",
        {"web.yaml": DEPLOYMENT + "  strategy:\n    rollingUpdate:\n      maxSurg: 1\n"},
        None,
        "web.yaml",
        20,
        "unknown field 'spec.strategy.rollingUpdate.maxSurg'",
    ),
    (
        "missing-selector",
        {"web.yaml": DEPLOYMENT.replace("  selector:\n    matchLabels:\n      app: web\n", "")},
        None,
        "web.yaml",
        5,
        "missing required field 'spec.selector'",
    ),
    (
        "no-containers",
        {
            "web.yaml": DEPLOYMENT.replace(
                "      containers:\n      - name: web\n        image: nginx:1.25\n", "      containers: []\n"
            )
        },
        None,
        "web.yaml",
        15,
        "spec.template.spec.containers must be a list of at least 1",
    ),
    (
        "wrong-strategy-type",
        {"web.yaml": DEPLOYMENT + "  strategy:\n    type: Rolling\n"},
        None,
        "web.yaml",
        19,
        "expected RollingUpdate or Recreate",
    ),
    (
        "recreate-with-rolling-update",
        {"web.yaml": DEPLOYMENT + "  strategy:\n    type: Recreate\n    rollingUpdate: {maxSurge: 1}\n"},
        None,
        "web.yaml",
        20,
        "rollingUpdate is set but the strategy type is Recreate",
    ),
    (
        "custom-without-params",
        {
            "api.yaml": DC.replace(
                "    type: Rolling\n    rollingParams:\n      pre:\n        failurePolicy: Abort\n"
                "        execNewPod:\n          containerName: api\n          command: [migrate]\n",
                "    type: Custom\n",
            ),
            "s.yaml": STREAM,
        },
        None,
        "api.yaml",
        17,
        "Custom strategy needs customParams",
    ),
    (
        "bad-failure-policy",
        {"api.yaml": DC.replace("failurePolicy: Abort", "failurePolicy: Abrt"), "s.yaml": STREAM},
        None,
        "api.yaml",
        21,
        "expected Abort or Retry or Ignore",
    ),
    (
        "unknown-pod-replacement-policy",
        {"web.yaml": DEPLOYMENT + "  podReplacementPolicy: WhenGone\n"},
        None,
        "web.yaml",
        18,
        "expected TerminationStarted or TerminationComplete",
    ),
    (
        "deployment-wrong-api-version",
        {"web.yaml": DEPLOYMENT.replace("apiVersion: apps/v1", "apiVersion: extensions/v1beta1")},
        None,
        "web.yaml",
        1,
        'apiVersion is "extensions/v1beta1"; expected apps/v1',
    ),
    (
        "near-miss-kind",
        {"web.yaml": DEPLOYMENT.replace("kind: Deployment", "kind: Deploymnet")},
        None,
        "web.yaml",
        2,
        "unknown kind 'Deploymnet'",
    ),
    (
        "not-a-kubernetes-object",
        {"values.yaml": "image: nginx\nreplicas: 3\n"},
        None,
        "values.yaml",
        1,
        "not a Kubernetes object",
    ),
    (
        "auto-rollback-annotation-not-boolean",
        {
            "web.yaml": DEPLOYMENT.replace(
                "name: web\nspec", "name: web\n  annotations:\n    gitdeploy.io/auto-rollback: maybe\nspec"
            )
        },
        None,
        "web.yaml",
        6,
        "gitdeploy.io/auto-rollback is 'maybe'",
    ),
    (
        "prune-annotation-not-boolean",
        {
            "web.yaml": DEPLOYMENT.replace(
                "name: web\nspec", "name: web\n  annotations:\n    gitdeploy.io/prune: never\nspec"
            )
        },
        None,
        "web.yaml",
        6,
        "gitdeploy.io/prune is 'never'",
    ),
    (
        "settings-prune-limit-not-a-limit",
        {"web.yaml": DEPLOYMENT},
        "prune: true\npruneLimit: 5 apps\n",
        "gitdeploy.yaml",
        2,
        "pruneLimit",
    ),
    (
        "settings-paths-entry-matches-nothing",
        {"apps/web.yaml": DEPLOYMENT},
        "paths:\n  - apps\n  - appz/\n",
        "gitdeploy.yaml",
        3,
        "paths entry 'appz' matches no manifest file",
    ),
    (
        "settings-unknown-field",
        {"web.yaml": DEPLOYMENT},
        "paths: [apps]\npurne: true\n",
        "gitdeploy.yaml",
        2,
        "unknown field 'purne'",
    ),
]


@pytest.mark.parametrize(
    ("files", "settings", "file", "line", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_check_reports_file_line_and_message(
    files: dict[str, str], settings: str | None, file: str, line: int, fragment: str
) -> None:
    result = load(files, settings)
    matching = [d for d in result.diagnostics if fragment in d.message]
    assert matching, [d.render() for d in result.diagnostics]
    assert (matching[0].file, matching[0].line) == (file, line), matching[0].render()
    assert matching[0].hint, "every problem says what to do"


def test_an_invalid_app_does_not_hide_the_valid_ones() -> None:
    broken = DEPLOYMENT.replace("name: web\n", "name: broken\n").replace("replicas: 3", "replicas: -3")
    result = load({"web.yaml": DEPLOYMENT, "broken.yaml": broken})
    assert [str(a.key) for a in result.apps] == ["default/web"]
    assert result.invalid_apps == (AppKey("default", "broken"),)
    assert result.diagnostics[0].app == "default/broken"


def test_other_kinds_are_listed_as_ignored() -> None:
    service = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {}\n"
    result = load({"web.yaml": DEPLOYMENT + "---\n" + service})
    assert result.diagnostics == ()
    assert [(i.kind, i.name, i.location.line) for i in result.ignored] == [("Service", "web", 19)]


def test_settings_select_paths_namespace_and_auto_rollback() -> None:
    files = {"apps/web.yaml": DEPLOYMENT, "ci/pipeline.yaml": "steps: []\n", ".github/x.yaml": "on: push\n"}
    result = load(files, "paths: [apps]\ndefaultNamespace: shop\nautoRollback: true\n")
    assert result.diagnostics == ()
    (app,) = result.apps
    assert app.key == AppKey("shop", "web")
    assert app.auto_rollback is True


def test_deployment_defaults() -> None:
    (app,) = load({"web.yaml": DEPLOYMENT.replace("  replicas: 3\n", "")}).apps
    assert app.kind is AppKind.DEPLOYMENT
    assert app.replicas is None
    assert app.strategy.type is StrategyType.ROLLING_UPDATE
    assert app.strategy.rolling is not None
    assert (app.strategy.rolling.max_surge, app.strategy.rolling.max_unavailable) == ("25%", "25%")
    assert app.triggers.config_change and app.triggers.image_change == ()
    assert (app.revision_history_limit, app.progress_deadline_seconds, app.min_ready_seconds) == (10, 600, 0)
    assert app.auto_rollback is False
    assert app.pod_replacement_policy is PodReplacementPolicy.TERMINATION_STARTED
    (app,) = load({"web.yaml": DEPLOYMENT + "  podReplacementPolicy: TerminationComplete\n"}).apps
    assert app.pod_replacement_policy is PodReplacementPolicy.TERMINATION_COMPLETE


def test_deployment_config_defaults_and_triggers() -> None:
    dc = DC.replace("  triggers:\n  - type: ConfigChange\n", "  triggers:\n")
    (app,) = load({"api.yaml": dc, "s.yaml": STREAM}).apps
    assert app.kind is AppKind.DEPLOYMENT_CONFIG
    rolling = app.strategy.rolling
    assert rolling is not None
    assert (rolling.max_surge, rolling.max_unavailable) == ("25%", "25%")
    assert (rolling.interval_seconds, rolling.update_period_seconds, rolling.timeout_seconds) == (1, 1, 600)
    assert rolling.pre is not None and rolling.pre.failure_policy is FailurePolicy.ABORT
    assert rolling.pre.command == ("migrate",)
    assert app.triggers.config_change is False
    (trigger,) = app.triggers.image_change
    assert (trigger.stream_namespace, trigger.stream_name, trigger.tag) == ("default", "api", "latest")
    assert app.auto_rollback is True


def test_dc_selector_defaults_to_template_labels() -> None:
    (app,) = load({"api.yaml": DC.replace("  selector:\n    app: api\n", ""), "s.yaml": STREAM}).apps
    assert app.selector.match_labels == (("app", "api"),)
