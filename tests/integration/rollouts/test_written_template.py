"""The pod template gitdeploy writes to a ReplicaSet is the one in git plus gitdeploy's own labels:
hashing normalises the template (empty values do not count), writing must not change it."""

from __future__ import annotations

import json
from typing import Any

import yaml

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
    assert template == in_git
