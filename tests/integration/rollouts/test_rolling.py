"""Rolling updates on the embedded cluster, step by step, with the Kubernetes controller's arithmetic."""

from __future__ import annotations

from gitdeploy.core.records import Outcome
from tests.fixtures.rollouts import World, commit, load_app


def nginx(image: str = "nginx:1.14.2", replicas: int = 3, extra: str = "") -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  namespace: demo
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: nginx}}
{extra}  template:
    metadata:
      labels: {{app: nginx}}
    spec:
      containers:
      - name: nginx
        image: {image}
        ports: [{{containerPort: 80}}]
"""


def test_seed_002_walkthrough_scales_one_pod_at_a_time(world: World) -> None:
    # Given nginx-deployment running 3 replicas of nginx:1.14.2
    v1 = load_app(nginx())
    world.roll(v1, commit("Deploy nginx", 1))
    assert world.pods(v1).available == 3
    first = world.record(v1).revisions
    assert [(e.revision, e.outcome) for e in first] == [(1, Outcome.COMPLETE)]

    # When the image changes to nginx:1.16.1 (default maxSurge and maxUnavailable, 25%)
    v2 = load_app(nginx("nginx:1.16.1"))
    before = len(world.events(v2, "ScalingReplicaSet"))
    world.roll(v2, commit("Bump nginx to 1.16.1", 2), check=world.invariants(v2))

    # Then the new ReplicaSet grows and the old one shrinks one pod at a time
    story = world.scaling_story(v2, v2.template_hash)[before:]
    assert story == ["new→1", "old→2", "new→2", "old→1", "new→3", "old→0"]
    # and at every instant at least 3 pods were available and at most 4 existed
    assert world.violations == []
    # and revision 2 names the commit that caused it
    record = world.record(v2)
    assert [(e.revision, e.outcome, e.commit.subject) for e in record.revisions] == [
        (1, Outcome.COMPLETE, "Deploy nginx"),
        (2, Outcome.COMPLETE, "Bump nginx to 1.16.1"),
    ]
    assert record.revisions[1].images == (("nginx", "nginx:1.16.1"),)
    assert world.replica_sets(v2) == {
        f"nginx-deployment-{v1.template_hash}": 0,
        f"nginx-deployment-{v2.template_hash}": 3,
    }
