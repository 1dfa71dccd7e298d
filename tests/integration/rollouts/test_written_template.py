"""The pod template gitdeploy writes to a ReplicaSet is the one in git plus gitdeploy's own labels:
hashing normalises the template (empty values do not count), writing must not change it. What is
read back also has the API server's defaults, filled in where git sets none (``server_side``)."""

from __future__ import annotations

import json
from typing import Any

import yaml

from gitdeploy.localcluster.defaults import with_defaults
from gitdeploy.localcluster.resources import REPLICASETS
from tests.fixtures.rollouts import World, commit, load_app

MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {note: ""}
    spec:
      terminationGracePeriodSeconds: 0
      securityContext: {}
      nodeSelector: {}
      containers:
      - name: web
        image: nginx:1.25
        args: []
        env:
        - {name: EMPTY, value: ""}
        - {name: ZERO, value: "0"}
        ports: [{containerPort: 8080, protocol: TCP}]
        resources: {requests: {cpu: 500m, memory: 64Mi}, limits: {}}
        volumeMounts: [{name: scratch, mountPath: /tmp}, {name: config, mountPath: /etc/web, readOnly: true}]
      volumes:
      - {name: scratch, emptyDir: {}}
      - name: config
        projected: {sources: [], defaultMode: 420}
"""


def server_side(template: dict[str, Any]) -> dict[str, Any]:
    """``template`` as the API server stores it: with its defaults where ``template`` sets none."""
    defaulted: dict[str, Any] = with_defaults(REPLICASETS, {"spec": {"template": template}})["spec"][
        "template"
    ]
    return defaulted


def test_the_replica_set_template_is_gits_plus_gitdeploys_labels(world: World) -> None:
    app = load_app(MANIFEST)

    world.roll(app, commit("web", 1))

    in_git: dict[str, Any] = yaml.safe_load(MANIFEST)["spec"]["template"]
    name = f"web-{app.template_hash}"
    written = json.loads(world.apps.read_namespaced_replica_set(name, "shop", _preload_content=False).data)
    template = written["spec"]["template"]
    added = {"gitdeploy.io/template-hash": app.template_hash, "gitdeploy.io/app": "web"}
    assert template["metadata"]["labels"] == {**in_git["metadata"]["labels"], **added}
    template["metadata"]["labels"] = in_git["metadata"]["labels"]
    assert template == server_side(in_git)


NUMBERS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: numbers, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: numbers}}
  template:
    metadata: {labels: {app: numbers}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        resources: {requests: {cpu: .25, memory: 67108864}, limits: {cpu: 0.5}}
        volumeMounts: [{name: config, mountPath: /etc/web}]
      volumes:
      - name: config
        configMap: {name: web, defaultMode: 0644, items: [{key: a, path: a, mode: 0400}]}
"""


def test_numbers_are_written_as_kubectl_reads_them(world: World) -> None:
    # Given modes written in octal with a leading 0 and CPU as plain numbers, as kubectl accepts them
    app = load_app(NUMBERS)
    # When it rolls out
    world.roll(app, commit("numbers", 1))
    # Then the ReplicaSet holds what kubectl would have sent (YAML 1.1 numbers: 0644 is 420;
    # a quantity written as a number is the same quantity as text, stored in the API server's
    # canonical form)
    name = f"numbers-{app.template_hash}"
    written = json.loads(world.apps.read_namespaced_replica_set(name, "shop", _preload_content=False).data)
    spec = written["spec"]["template"]["spec"]
    assert spec["volumes"][0]["configMap"]["defaultMode"] == 0o644 == 420
    assert spec["volumes"][0]["configMap"]["items"][0]["mode"] == 0o400
    resources = spec["containers"][0].pop("resources")
    assert resources == {"requests": {"cpu": "250m", "memory": "67108864"}, "limits": {"cpu": "500m"}}
    in_git = server_side(yaml.safe_load(NUMBERS)["spec"]["template"])["spec"]
    del in_git["containers"][0]["resources"]
    assert spec == in_git
