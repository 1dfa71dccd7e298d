"""Nothing stale (issue 21) on the real control plane, with ``gitdeploy run`` as deploy/'s
ServiceAccount in restricted namespaces. Its git poll, resync and registry refresh are ten minutes
away, so only its watches can explain what it does within the tests' timeouts:

* **Drift undone at once.** ``kubectl scale rs web-… --replicas=0`` (kubectl of the control plane's
  build, as admin) is undone through the ReplicaSet watch, a ``DriftCorrected`` event says what was
  undone. Scaled again while ``run`` is held (SIGSTOP), the pods go and ``status`` says
  ``OutOfSync Degraded``, naming the hand scale; resumed, ``run`` undoes it from its watch's news.
  No ``gitdeploy status`` on the way says ``Synced Healthy`` while READY is below desired.
  ``kubectl label rs web-… LABEL-`` of gitdeploy's managed-by or app label is put back at once.
* **No false green after a push.** The docs' CI recipe (docs/guides/deploying.md), run as written against this
  cluster
  (``git push`` then ``rollout status APP --commit SHA``), passes for a commit whose revision
  completes and fails, saying why, for one whose image kwok keeps in ``ErrImagePull``.
* **Template edits undone.** ``kubectl patch`` of the running ReplicaSet's image while ``run`` is
  held: ``status`` says ``OutOfSync`` naming the edit; resumed, ``run`` restores the template from
  its watch's news, replaces the pod made from the edited one and says so in a ``DriftCorrected``
  event naming the field, and ``status`` comes back to ``Synced Healthy``.
* **The stream watch.** ``gitdeploy tag`` moves an image stream tag and the trigger rollout starts
  without waiting for ``--image-interval``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.core.rollout.drift import DRIFT_CORRECTED
from tests.fixtures.cli import RunCli, docs_ci_recipe, gitdeploy_executable
from tests.fixtures.controlplane import PULL_FAILURE_IMAGE
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import ControlPlane, audit_events
from tests.realk8s.gitdeploy_cli import ManagedNamespace, Run, at_revision, history, view, wait_for
from tests.realk8s.manifests import (
    DIGEST_A,
    DIGEST_B,
    deployment,
    following_the_stream,
    image_stream,
    settings,
)
from tests.realk8s.observed import events, requests, running_images

pytestmark = pytest.mark.usefixtures("isolated_git_config")

LATER = "600s"
"""The git poll, resync and registry refresh of ``run``: none of them is due within a test."""


def watching_run(runs: Callable[..., Run], name: str, git_remote: GitRemote, namespace: str) -> Run:
    return runs(
        name, "--repo", git_remote.url, "-n", namespace, "--interval", LATER, "--resync-interval", LATER,
        "--image-interval", LATER, "--no-leader-elect",
    )  # fmt: skip


def test_run_undoes_a_hand_scale_at_once_and_status_never_shows_a_false_green(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
) -> None:
    namespace = managed_namespace("drift")
    git_remote.commit_and_push(
        "web 1",
        {
            "gitdeploy.yaml": settings(namespace),
            "apps/web.yaml": deployment("web", "registry.test/web:1", 2, grace=1),
        },
    )
    run = watching_run(runs, "drift", git_remote, namespace)
    wait_for("revision 1", at_revision(gitdeploy, namespace, 1), timeout=90)
    wait_for(
        "gitdeploy's ReplicaSet watch",
        lambda: bool(requests(audit_events(control_plane), namespace, "replicasets", "watch")),
    )
    replica_sets: Any = control_plane.get_json("replicasets", "-n", namespace)
    [name] = [rs["metadata"]["name"] for rs in replica_sets["items"]]
    undone = f"{name} was scaled to 0 by hand; scaled back to 2"

    # When the ReplicaSet is scaled to 0 by hand, run scales it back through its watch
    control_plane.kubectl("scale", "replicaset", name, "-n", namespace, "--replicas", "0")
    seen: list[tuple[int, int, str, str]] = []
    wait_for(
        "run to undo the hand scale (its resync is 10 minutes away)",
        back(control_plane, gitdeploy, namespace, name, seen),
        timeout=60,
    )
    assert events(control_plane, namespace, DRIFT_CORRECTED) == [undone], run.log

    # When it is scaled to 0 while run is held (SIGSTOP), the pods go and status says so
    run.process.send_signal(signal.SIGSTOP)
    try:
        control_plane.kubectl("scale", "replicaset", name, "-n", namespace, "--replicas", "0")
        wait_for("the pods to go", lambda: shown_truly(gitdeploy, namespace, seen)["ready"] == 0)
        held = shown_truly(gitdeploy, namespace, seen)
        assert (held["sync"], held["health"]) == ("OutOfSync", "Degraded"), held
        assert f"{name} was scaled to 0 by hand (gitdeploy set 2)" in held["message"], held
    finally:
        run.process.send_signal(signal.SIGCONT)

    # Then once run goes on, its watch's news undoes it, and no status on the way was a false green
    wait_for(
        "run to undo it after its pause", back(control_plane, gitdeploy, namespace, name, seen), timeout=60
    )
    assert events(control_plane, namespace, DRIFT_CORRECTED) == [undone, undone], run.log
    assert any(ready < replicas for ready, replicas, _, _ in seen), seen
    assert at_revision(gitdeploy, namespace, 1)(), "a hand scale made a new revision"

    # When a label of gitdeploy's is removed by hand (`kubectl label rs web-… LABEL-`; without
    # managed-by, run's selector watch is told DELETED), run puts it back through its watch
    removed = ("app.kubernetes.io/managed-by", "gitdeploy.io/app")
    for label in removed:
        control_plane.kubectl("label", "replicaset", name, "-n", namespace, f"{label}-")
        wait_for(f"run to put {label} back", _labelled(control_plane, namespace, name, label))
    told = [e for e in events(control_plane, namespace, DRIFT_CORRECTED) if e != undone]
    assert sorted(told) == sorted(
        f"{name}: its labels were changed by hand ({label}: removed); restored them" for label in removed
    )
    assert at_revision(gitdeploy, namespace, 1)(), "a relabel made a new revision"


def _labelled(control_plane: ControlPlane, namespace: str, name: str, label: str) -> Callable[[], bool]:
    def check() -> bool:
        found: Any = control_plane.get_json("replicaset", name, "-n", namespace)
        return label in (found["metadata"].get("labels") or {})

    return check


def shown_truly(gitdeploy: RunCli, namespace: str, seen: list[tuple[int, int, str, str]]) -> dict[str, Any]:
    """``gitdeploy status``'s view of the app, kept in ``seen``; never Synced Healthy below READY."""
    shown = view(gitdeploy, namespace)
    assert shown is not None, "gitdeploy status shows no app"
    seen.append((shown["ready"], shown["replicas"], shown["sync"], shown["health"]))
    ready, replicas, sync, health = seen[-1]
    assert not (ready < replicas and (sync, health) == ("Synced", "Healthy")), (
        f"status says Synced Healthy with READY {ready}/{replicas}: {shown}"
    )
    return shown


def back(
    control_plane: ControlPlane,
    gitdeploy: RunCli,
    namespace: str,
    name: str,
    seen: list[tuple[int, int, str, str]],
) -> Callable[[], bool]:
    """ReplicaSet ``name`` asks for 2 pods again, both ready, and ``status`` shows them."""

    def check() -> bool:
        ready = shown_truly(gitdeploy, namespace, seen)["ready"]
        found: Any = control_plane.get_json("replicaset", name, "-n", namespace)
        return bool(
            found["spec"]["replicas"] == 2 and found["status"].get("readyReplicas") == 2 and ready == 2
        )

    return check


def ci_recipe(
    git_remote: GitRemote, kubeconfig: Path, app: str, subject: str, manifest: str
) -> tuple[str, subprocess.CompletedProcess[str]]:
    """Commit ``manifest`` as ``web`` in the working clone and run the docs' CI recipe as written
    (it pushes, then waits for that commit) for ``app``, with ``KUBECONFIG`` set to gitdeploy's
    account."""
    git_remote.write_files({"apps/web.yaml": manifest})
    git_remote.commit_all(subject)
    sha = git_remote.head_sha()
    env = {
        **git_remote.env,
        "KUBECONFIG": str(kubeconfig),
        "NO_COLOR": "1",
        "PATH": f"{Path(gitdeploy_executable()).parent}{os.pathsep}{os.environ['PATH']}",
    }
    recipe = docs_ci_recipe().replace("APP=shop/web ", f"APP={app} ")
    assert f"APP={app} " in recipe, "the docs' recipe no longer sets APP=shop/web"
    done = subprocess.run(
        ["bash", "-e", "-c", recipe], cwd=git_remote.work, env=env,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    return sha, done


def test_the_ci_recipe_passes_a_good_commit_and_fails_one_whose_revision_fails(
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    gitdeploy_kubeconfig: Path,
    runs: Callable[..., Run],
) -> None:
    namespace = managed_namespace("ciwait")
    git_remote.commit_and_push(
        "web 1",
        {"gitdeploy.yaml": settings(namespace), "apps/web.yaml": deployment("web", "registry.test/web:1", 2)},
    )
    runs(
        "ciwait", "--repo", git_remote.url, "-n", namespace, "--interval", "1s", "--no-leader-elect",
    )  # fmt: skip
    wait_for("revision 1", at_revision(gitdeploy, namespace, 1), timeout=90)

    # a new image: the recipe ends when the pushed commit's revision is complete
    sha, done = ci_recipe(
        git_remote,
        gitdeploy_kubeconfig,
        f"{namespace}/web",
        "web 2",
        deployment("web", "registry.test/web:2", 2, grace=1),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f'app "{namespace}/web" at commit {sha[:7]}: revision 2 complete' in done.stdout, done.stdout
    assert (history(gitdeploy, f"{namespace}/web")[-1]["outcome"]) == "Complete"

    # an image kwok keeps in ErrImagePull, past a 5 s progress deadline: the job fails, saying why
    missing = deployment("web", PULL_FAILURE_IMAGE, 2, grace=1, progressDeadlineSeconds=5)
    sha, done = ci_recipe(git_remote, gitdeploy_kubeconfig, f"{namespace}/web", "typo", missing)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f'app "{namespace}/web" revision 3 failed: commit {sha[:7]}: revision 3 failed' in done.stderr
    last = history(gitdeploy, f"{namespace}/web")[2]
    assert (last["revision"], last["outcome"]) == (3, "Failed"), last


def test_a_moved_tag_rolls_out_without_waiting_for_the_image_interval(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
) -> None:
    namespace = managed_namespace("streamwatch")
    git_remote.commit_and_push("web follows its stream", {
        "gitdeploy.yaml": settings(namespace),
        "apps/stream.yaml": image_stream(DIGEST_A),
        "apps/web.yaml": following_the_stream(),
    })  # fmt: skip
    watching_run(runs, "streamwatch", git_remote, namespace)
    wait_for("revision 1", at_revision(gitdeploy, namespace, 1), timeout=90)

    moved = gitdeploy("tag", f"registry.test/web@{DIGEST_B}", f"{namespace}/web:prod")
    assert moved.returncode == 0, moved.stdout + moved.stderr

    wait_for("revision 2, from the moved tag (the registry refresh is 10 minutes away)",
             at_revision(gitdeploy, namespace, 2), timeout=60)  # fmt: skip
    last = history(gitdeploy, f"{namespace}/web")[-1]
    assert (last["revision"], last["cause"], last["outcome"]) == (2, "ImageChange", "Complete"), last
    assert last["images"][0]["image"] == f"registry.test/web@{DIGEST_B}", last["images"]
    assert running_images(control_plane, namespace, "web") == {f"registry.test/web@{DIGEST_B}"}


def test_run_restores_a_hand_edited_template_and_replaces_the_pods_made_from_it(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
) -> None:
    namespace = managed_namespace("tmpldrift")
    git_remote.commit_and_push(
        "web 1",
        {
            "gitdeploy.yaml": settings(namespace),
            "apps/web.yaml": deployment("web", "registry.test/web:1", 2, grace=1),
        },
    )
    run = watching_run(runs, "tmpldrift", git_remote, namespace)
    wait_for("revision 1", at_revision(gitdeploy, namespace, 1), timeout=90)
    wait_for(
        "gitdeploy's ReplicaSet watch",
        lambda: bool(requests(audit_events(control_plane), namespace, "replicasets", "watch")),
    )
    replica_sets: Any = control_plane.get_json("replicasets", "-n", namespace)
    [name] = [rs["metadata"]["name"] for rs in replica_sets["items"]]
    seen: list[tuple[int, int, str, str]] = []

    # Given run held (SIGSTOP), an admin edits the running ReplicaSet's image, and a pod is made
    # from the edited template (the ReplicaSet controller replaces a deleted pod)
    run.process.send_signal(signal.SIGSTOP)
    try:
        edit = [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": EDITED}]
        control_plane.kubectl("patch", "replicaset", name, "-n", namespace, "--type", "json",
                              "-p", json.dumps(edit))  # fmt: skip
        [pod, _] = running_pods(control_plane, namespace)
        control_plane.kubectl("delete", "pod", pod, "-n", namespace, "--wait=false")
        wait_for("a pod made from the edited template", lambda: EDITED in running_images(
            control_plane, namespace, "web"))  # fmt: skip

        # Then status says the cluster does not run what git says, and why
        held = shown_truly(gitdeploy, namespace, seen)
        assert held["sync"] == "OutOfSync", held
        assert f"{name}: its pod template was changed by hand" in held["message"], held
    finally:
        run.process.send_signal(signal.SIGCONT)

    # When run goes on, its watch's news (its resync is 10 minutes away) restores the template,
    # replaces the edited pod, and an event names what it undid
    wait_for("run to restore the template and replace the edited pod",
             restored(control_plane, gitdeploy, namespace, name, seen), timeout=90)  # fmt: skip
    [event] = events(control_plane, namespace, DRIFT_CORRECTED)
    assert event.startswith(
        f"{name}: its pod template was changed by hand (container web image: "
        f"registry.test/web:1 -> {EDITED}); restored"
    ), (event, run.log)
    assert at_revision(gitdeploy, namespace, 1)(), "a hand edit made a new revision"
    assert any(sync == "OutOfSync" for _, _, sync, _ in seen), seen


EDITED = "registry.test/web:edited"


def running_pods(control_plane: ControlPlane, namespace: str) -> list[str]:
    """The names of web's pods that are not going."""
    pods: Any = control_plane.get_json("pods", "-n", namespace, "-l", "app=web")
    return sorted(p["metadata"]["name"] for p in pods["items"] if not p["metadata"].get("deletionTimestamp"))


def restored(
    control_plane: ControlPlane,
    gitdeploy: RunCli,
    namespace: str,
    name: str,
    seen: list[tuple[int, int, str, str]],
) -> Callable[[], bool]:
    """ReplicaSet ``name`` has git's template again, only pods made from it run, both ready, and
    ``status`` says Synced Healthy."""

    def check() -> bool:
        shown = shown_truly(gitdeploy, namespace, seen)
        found: Any = control_plane.get_json("replicaset", name, "-n", namespace)
        image = found["spec"]["template"]["spec"]["containers"][0]["image"]
        return bool(
            image == "registry.test/web:1"
            and running_images(control_plane, namespace, "web") == {"registry.test/web:1"}
            and (shown["ready"], shown["sync"], shown["health"]) == (2, "Synced", "Healthy")
        )

    return check
