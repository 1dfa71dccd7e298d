"""The same kubectl commands against the real control plane and the embedded cluster give the same
columns, rows, explanations and refusals (tests/integration/localcluster/test_kubectl.py checks
each against the embedded cluster alone)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.kubectl import Kubectl
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.gitdeploy_cli import wait_for

MANIFEST = """
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, namespace: NS}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: registry.test/web:1, ports: [{containerPort: 80}]}]}
"""


@pytest.fixture
def both(
    control_plane: ControlPlane, embedded_kubectl: Kubectl, tmp_path: Path
) -> Iterator[tuple[str, Kubectl, Kubectl]]:
    """A namespace of the same name on both, each with the ReplicaSet of MANIFEST applied."""
    namespace = f"kc-{uuid.uuid4().hex[:6]}"
    real = Kubectl(control_plane.admin_kubeconfig, tmp_path / "home")
    try:
        for kubectl in (real, embedded_kubectl):
            kubectl.run("create", "namespace", namespace)
            kubectl.run("apply", "-f", "-", stdin=MANIFEST.replace("NS", namespace))
        wait_for(
            "the real ReplicaSet's pod", lambda: bool(real.run("get", "pods", "-n", namespace, "-o", "name"))
        )
        yield namespace, real, embedded_kubectl
    finally:
        control_plane.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def _rows(kubectl: Kubectl, *args: str) -> list[list[str]]:
    return [line.split() for line in kubectl.run(*args).splitlines()]


def test_get_shows_the_same_columns(both: tuple[str, Kubectl, Kubectl]) -> None:
    namespace, real, embedded = both
    for args in (("get", "rs"), ("get", "rs", "-o", "wide"), ("get", "pods"), ("get", "pods", "-o", "wide")):
        real_rows, embedded_rows = (
            _rows(real, *args, "-n", namespace),
            _rows(embedded, *args, "-n", namespace),
        )
        assert real_rows[0] == embedded_rows[0], args
        assert len(real_rows) == len(embedded_rows) == 2, (real_rows, embedded_rows)
    wide = ("get", "rs", "-n", namespace, "-o", "wide")
    pick = [0, 1, 5, 6, 7]  # NAME DESIRED CONTAINERS IMAGES SELECTOR (not the moving counts and ages)
    assert [_rows(real, *wide)[1][i] for i in pick] == [_rows(embedded, *wide)[1][i] for i in pick]
    wait_for("the real events", lambda: bool(real.run("get", "events", "-n", namespace, "-o", "name")))
    events = ("get", "events", "-n", namespace, "--sort-by=.lastTimestamp")
    assert _rows(real, *events)[0] == _rows(embedded, *events)[0]
    assert _rows(real, *events, "-o", "wide")[0] == _rows(embedded, *events, "-o", "wide")[0]


def _structure(explained: str) -> list[str]:
    """``kubectl explain``'s header and field lines (name and type), without the descriptions,
    which the embedded cluster's OpenAPI documents leave out (see scripts/localcluster-openapi)."""
    return [
        line.strip()
        for line in explained.splitlines()
        if line.startswith(("KIND:", "VERSION:", "FIELD:")) or re.match(r"^  \S+\t<", line)
    ]


def test_get_all_explain_can_i_and_strict_apply_answer_alike(both: tuple[str, Kubectl, Kubectl]) -> None:
    namespace, real, embedded = both

    def kinds(kubectl: Kubectl) -> list[str]:
        rows = _rows(kubectl, "get", "all", "-n", namespace)
        return sorted({row[0].split("/")[0] for row in rows if row and row[0] != "NAME"})

    assert kinds(real) == kinds(embedded) == ["pod", "replicaset.apps"]
    for field in ("rs.spec", "pods.spec.terminationGracePeriodSeconds"):  # the fields and their types
        structure = _structure(real.run("explain", field))
        assert len(structure) >= 3 and structure == _structure(embedded.run("explain", field))
    for kubectl in (real, embedded):
        assert kubectl.run("auth", "can-i", "delete", "rs", "-n", namespace).strip() == "yes"
    typo = MANIFEST.replace("NS", namespace).replace(
        "name: web, image", "name: web, imagePullPolcy: Always, image"
    )
    created = typo.replace("name: web, namespace", "name: typo, namespace")
    for kubectl in (real, embedded):
        kubectl.run("apply", "-f", "-", stdin=created, expect=1)
    assert real.last_stderr == embedded.last_stderr
    assert 'unknown field "spec.template.spec.containers[0].imagePullPolcy"' in real.last_stderr
    refusals = []
    for kubectl in (real, embedded):  # a patch: the value shown is what the server made of the patch
        kubectl.run("apply", "-f", "-", stdin=typo, expect=1)
        head, _, rest = kubectl.last_stderr.partition(' Invalid value: "')
        refusals.append((head, rest[rest.index('": strict decoding error') :]))
    assert refusals[0] == refusals[1]
    assert refusals[0][0] == "The request is invalid: patch:"


def _pod_template(described: str) -> list[str]:
    """The "Pod Template:" section of ``kubectl describe rs``, which shows the defaulted fields."""
    lines = described.splitlines()
    start = lines.index("Pod Template:")
    end = next(i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" "))
    return [" ".join(line.split()) for line in lines[start:end]]


def test_describe_shows_the_same_pod_template(both: tuple[str, Kubectl, Kubectl]) -> None:
    namespace, real, embedded = both
    sections = [_pod_template(k.run("describe", "rs", "web", "-n", namespace)) for k in (real, embedded)]
    assert sections[0] == sections[1]
    assert "Port: 80/TCP" in sections[0]


def test_watch_keeps_the_same_columns(both: tuple[str, Kubectl, Kubectl]) -> None:
    namespace, real, embedded = both
    for kubectl in (real, embedded):
        watching = kubectl.watch("get", "rs", "-n", namespace, "-w")
        try:
            first = watching.until("web")
            assert first[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
            kubectl.run("scale", "rs", "web", "-n", namespace, "--replicas=3")
            row = watching.until("web")[-1].split()
            while row[1] != "3":
                row = watching.until("web")[-1].split()
            assert len(row) == 5, row
        finally:
            watching.stop()


def test_diff_shows_the_same_change_and_makes_none(both: tuple[str, Kubectl, Kubectl]) -> None:
    namespace, real, embedded = both
    scaled = MANIFEST.replace("NS", namespace).replace("replicas: 1", "replicas: 4")
    for kubectl in (real, embedded):
        diff = kubectl.run("diff", "-f", "-", stdin=scaled, expect=1)
        assert "-  replicas: 1\n+  replicas: 4" in diff
        assert kubectl.run("get", "rs", "web", "-n", namespace, "-o", "jsonpath={.spec.replicas}") == "1"
