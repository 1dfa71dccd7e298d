"""Argo Rollouts' ``AnalysisTemplate``: read into the core model with its job, web and prometheus
providers; what gitdeploy cannot honour is refused where it is written."""

from __future__ import annotations

import json

import pytest

from gitdeploy.core.analysistemplates import (
    AnalysisTemplate,
    JobProvider,
    Metric,
    PrometheusProvider,
    TemplateArg,
    WebHeader,
    WebMethod,
    WebProvider,
)
from gitdeploy.core.models import AppKey, Location
from gitdeploy.manifests.documents import ManifestFile
from gitdeploy.manifests.loader import analyse_file
from tests.fixtures.argorollouts import TEMPLATE
from tests.fixtures.manifests import deployment, load_texts


def analysed(text: str) -> AnalysisTemplate | None:
    (analysis,) = analyse_file(ManifestFile("analysis.yaml", text.encode())).analyses
    assert analysis.diagnostics == (), [d.render() for d in analysis.diagnostics]
    return analysis.analysis_template


def test_a_template_is_read_into_the_core_model() -> None:
    job = {
        "backoffLimit": 1,
        "template": {
            "spec": {
                "containers": [
                    {"args": ["http://web.shop/healthz"], "image": "curlimages/curl:8.5.0", "name": "smoke"}
                ],
                "restartPolicy": "Never",
            }
        },
    }
    query = 'sum(rate(http_requests_total{service="{{args.service}}",code!~"5.."}[1m]))'
    assert analysed(TEMPLATE) == AnalysisTemplate(
        key=AppKey("shop", "error-rate"),
        location=Location("analysis.yaml", 1),
        args=(TemplateArg("service"), TemplateArg("threshold", "0.95")),
        metrics=(
            Metric(
                "success-rate",
                PrometheusProvider("http://prometheus.monitoring:9090", query, timeout_seconds=10),
                interval_seconds=60,
                initial_delay_seconds=30,
                count=5,
                success_condition="result[0] >= 0.95",
                failure_condition="result[0] < 0.9",
                failure_limit=2,
                inconclusive_limit=1,
            ),
            Metric("smoke", JobProvider(json.dumps(job, sort_keys=True, separators=(",", ":")))),
            Metric(
                "checker",
                WebProvider(
                    "http://checker.shop/api/ok?service={{args.service}}",
                    WebMethod.POST,
                    (WebHeader("Authorization", "Bearer {{args.token}}"),),
                    body='{"service":"web"}',
                    json_path="{$.ok}",
                    timeout_seconds=5,
                ),
                interval_seconds=30,
                success_condition="result == true",
            ),
        ),
    )


def test_a_template_is_not_an_app() -> None:
    result = load_texts({"analysis.yaml": TEMPLATE, "web.yaml": deployment("web", "default")})
    assert result.diagnostics == ()
    assert [str(a.key) for a in result.apps] == ["default/web"]


def test_a_broken_template_does_not_block_an_app_of_the_same_name() -> None:
    broken = TEMPLATE.replace("name: error-rate\n  namespace: shop", "name: web").replace(
        "count: 5", "count: -1"
    )
    result = load_texts({"analysis.yaml": broken, "web.yaml": deployment("web", "default")})
    (problem,) = result.diagnostics
    assert (problem.line, problem.app, problem.message) == (
        14,
        "default/web",
        "spec.metrics[0].count must be at least 0",
    )
    assert [str(a.key) for a in result.apps] == ["default/web"] and result.invalid_apps == ()


# (id, replaced, replacement, line, message fragment, hint fragment)
REFUSED: list[tuple[str, str, str, int, str, str]] = [
    (
        "datadog-provider",
        "      prometheus:\n",
        "      datadog: {query: x}\n      prometheus:\n",
        21,
        "provider.datadog is not supported: gitdeploy measures with the job, web and prometheus providers",
        "use prometheus, web or job",
    ),
    (
        "two-providers",
        "      job:\n",
        "      web: {url: 'http://x'}\n      job:\n",
        26,
        "metric 'smoke' has 2 providers (job, web): a metric measures with one",
        "keep one provider",
    ),
    (
        "no-provider",
        "    provider:\n      job:\n",
        "    provider: {}\n    x:\n      job:\n",
        26,
        "provider must be not empty",
        "one of job",
    ),
    ("bad-interval", "interval: 1m", "interval: 1 minute", 13, 'interval is "1 minute"', '"5m"'),
    (
        "negative-failure-limit",
        "failureLimit: 2",
        "failureLimit: -2",
        18,
        "failureLimit must be at least 0",
        "",
    ),
    ("templated-count", "count: 5", 'count: "{{args.count}}"', 15, "must be an integer", ""),
    (
        "secret-arg",
        '    value: "0.95"',
        "    valueFrom: {secretKeyRef: {name: s, key: k}}",
        10,
        "valueFrom is not",
        "value",
    ),
    (
        "insecure-web",
        "        timeoutSeconds: 5",
        "        insecure: true",
        49,
        "insecure is not supported",
        "certificate",
    ),
    (
        "dry-run",
        "  metrics:\n",
        "  dryRun: [{metricName: smoke}]\n  metrics:\n",
        11,
        "dryRun is not supported",
        "remove",
    ),
    (
        "job-restart-always",
        "restartPolicy: Never",
        "restartPolicy: Always",
        32,
        "restartPolicy is",
        "OnFailure or Never",
    ),
    ("no-metrics", "  metrics:\n", "  metrics: []\n  x:\n", 11, "metrics must be a list of at least 1", ""),
]


@pytest.mark.parametrize(
    ("old", "new", "line", "message", "hint"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_what_gitdeploy_cannot_honour_is_refused_where_it_is_written(
    old: str, new: str, line: int, message: str, hint: str
) -> None:
    assert old in TEMPLATE
    result = load_texts({"analysis.yaml": TEMPLATE.replace(old, new, 1)})
    matching = [d for d in result.diagnostics if message in d.message]
    assert matching, [d.render() for d in result.diagnostics]
    found = matching[0]
    assert (found.file, found.line, found.app) == ("analysis.yaml", line, "shop/error-rate"), found.render()
    assert hint in found.hint and found.hint, found.render()


def test_the_repo_pass_collects_templates_by_namespace() -> None:
    other = TEMPLATE.replace("  namespace: shop\n", "")
    result = load_texts({"a.yaml": TEMPLATE, "b.yaml": other})
    assert result.diagnostics == ()
    assert [str(t.key) for t in result.analysis_templates] == ["default/error-rate", "shop/error-rate"]


def test_a_template_defined_twice_is_named_at_both_places() -> None:
    result = load_texts({"a.yaml": TEMPLATE, "b.yaml": TEMPLATE})
    (problem,) = result.diagnostics
    assert (problem.file, problem.line, problem.app) == ("b.yaml", 1, "shop/error-rate")
    assert problem.app == "shop/error-rate"
    assert problem.message == "an analysis template of this name is also defined at a.yaml:1"
    assert problem.hint == "keep one definition"
