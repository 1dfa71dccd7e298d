"""gitdeploy next to the Kubernetes Deployment controller, on one real control plane (issue 18).

``python bench/realk8s.py [--scenario NAME ...] [--repeat N] [--pod-ready-seconds S] [--dir DIR]``
starts a control plane with ``scripts/realk8s up`` (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok), then runs each scenario three ways on it with the same pod delays (``N``
rounds of the three, interleaved, each in namespaces of its own; the table shows the median of each
figure and the JSON line every round):

- **deployment**: ``Deployment`` objects applied with kubectl (admin), rolled out by
  kube-controller-manager's Deployment controller: the image changes in one ``kubectl apply``, and
  the rollout is over when every Deployment reports all replicas updated and available, and no old
  replica left;
- **gitdeploy sync**: the same apps as manifests in a git repository, one commit changes every
  image, and ``gitdeploy sync --wait`` (as deploy/'s ServiceAccount) performs the rollout: the
  makespan includes starting the command and reading the repo;
- **gitdeploy run**: the same with ``gitdeploy run`` already running, as the Deployment controller
  is, told of the commit by a signed webhook push; done when the ReplicaSets say so, read as often
  as the Deployments' status is.

For each it prints makespan (from the change to the end of the last rollout), API writes per
rollout from kube-apiserver's ``apiserver_request_total`` (ReplicaSet writes, and every write other
than pods, pod and ReplicaSet status and events), and CPU seconds: kube-controller-manager's (the
Deployment controller runs there; for gitdeploy it is the ReplicaSet controller and the garbage
collector) and gitdeploy's own. Then the ratios gitdeploy / Deployment controller. The figures
depend on the machine; nothing asserts on them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import resource
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

if __package__ in (None, ""):  # run as ``python bench/realk8s.py``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.push_latency import SECRET, deliver_push
from tests.fixtures.cli import gitdeploy_executable
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import (
    REALK8S,
    ControlPlane,
    free_port,
    install_gitdeploy_identity,
    managed_namespace_for_gitdeploy,
    read_pids,
    service_account_kubeconfig,
)
from tests.realk8s.manifests import deployment, settings

ROLLING = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
SCENARIOS = {"1x100": (1, 100), "200x4": (200, 4)}
WRITE_VERBS = {"POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION"}
REQUESTS = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$", re.M)


@dataclass(frozen=True)
class Figures:
    controller: str
    makespan_s: float
    replica_set_writes: float
    other_writes: float
    controller_manager_cpu_s: float
    gitdeploy_cpu_s: float


def scrape_writes(plane: ControlPlane) -> dict[str, float]:
    """ReplicaSet writes and other writes (not pods, events or status) since the API server started."""
    kube = json.loads(plane.admin_kubeconfig.read_text())
    user = kube["users"][0]["user"]
    context = ssl.create_default_context(cafile=kube["clusters"][0]["cluster"]["certificate-authority"])
    context.load_cert_chain(user["client-certificate"], user["client-key"])
    with urllib.request.urlopen(
        kube["clusters"][0]["cluster"]["server"] + "/metrics", context=context
    ) as answer:
        text = answer.read().decode()
    counts = {"replicasets": 0.0, "other": 0.0}
    for match in REQUESTS.finditer(text):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match["labels"]))
        if labels.get("verb") not in WRITE_VERBS or labels.get("subresource"):
            continue
        resource_name = labels.get("resource", "")
        if resource_name == "replicasets":
            counts["replicasets"] += float(match["value"])
        elif resource_name not in ("pods", "events", "leases", "tokenreviews", "subjectaccessreviews"):
            counts["other"] += float(match["value"])
    return counts


def controller_manager_cpu(plane: ControlPlane) -> float:
    [pid] = [pid for name, pid in read_pids(plane.dir) if name == "kube-controller-manager"]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def measured(plane: ControlPlane, controller: str, rollouts: int, out: list[Figures]) -> Iterator[None]:
    writes, cpu, own, started = (
        scrape_writes(plane),
        controller_manager_cpu(plane),
        children_cpu(),
        time.monotonic(),
    )
    yield
    makespan = time.monotonic() - started
    after = scrape_writes(plane)
    gitdeploy_cpu = children_cpu() - own if controller == "gitdeploy sync" else 0.0
    out.append(
        Figures(
            controller,
            makespan,
            (after["replicasets"] - writes["replicasets"]) / rollouts,
            (after["other"] - writes["other"]) / rollouts,
            controller_manager_cpu(plane) - cpu,
            gitdeploy_cpu,
        )
    )


POLL_SECONDS = 0.5
"""How often the Deployments' status is read (a kubectl process each time): often enough for
makespans of tens of seconds, rarely enough not to load the machine the controllers share."""


def wait(what: str, done: Callable[[], bool], timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: timed out waiting for {what}")
        time.sleep(POLL_SECONDS)


def deployments_done(plane: ControlPlane, namespace: str, image: str) -> bool:
    items: Any = plane.get_json("deployments", "-n", namespace)["items"]
    return all(
        d["status"].get("observedGeneration", 0) >= d["metadata"]["generation"]
        and d["spec"]["template"]["spec"]["containers"][0]["image"] == image
        and d["status"].get("updatedReplicas") == d["spec"]["replicas"]
        and d["status"].get("availableReplicas") == d["spec"]["replicas"]
        and d["status"].get("replicas") == d["spec"]["replicas"]
        for d in items
    )


def apps(count: int, replicas: int, image: str) -> dict[str, str]:
    return {
        f"apps/app-{i:03d}.yaml": deployment(f"app-{i:03d}", image, replicas, ROLLING) for i in range(count)
    }


def run_deployment_controller(
    plane: ControlPlane, name: str, count: int, replicas: int, out: list[Figures]
) -> None:
    namespace = managed_namespace_for_gitdeploy(plane, f"dc-{name.lower()}", restricted=True)

    def apply(image: str) -> None:
        plane.kubectl(
            "apply", "-n", namespace, "-f", "-", stdin="---\n".join(apps(count, replicas, image).values())
        )

    apply("registry.test/app:1")
    wait("the first Deployment rollout", lambda: deployments_done(plane, namespace, "registry.test/app:1"))
    with measured(plane, "deployment", count, out):
        apply("registry.test/app:2")
        wait("the Deployment rollout", lambda: deployments_done(plane, namespace, "registry.test/app:2"))


def run_gitdeploy(
    plane: ControlPlane, name: str, count: int, replicas: int, work: Path, out: list[Figures]
) -> None:
    namespace = managed_namespace_for_gitdeploy(plane, f"gd-{name.lower()}")
    kubeconfig = service_account_kubeconfig(plane, work / f"{name}.kubeconfig")
    repo = GitRemote(work / f"repo-{name}")
    env = {**repo.env, "GITDEPLOY_STATE_DIR": str(work / f"state-{name}"), "NO_COLOR": "1"}

    def sync() -> None:
        done = subprocess.run(
            [gitdeploy_executable(), "--kubeconfig", str(kubeconfig), "sync", "--repo", repo.url, "--wait",
             "--timeout", "15m", "--workers", "8"], env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"bench: gitdeploy sync failed:\n{done.stdout}\n{done.stderr}")

    repo.commit_and_push(
        "apps at 1", {"gitdeploy.yaml": settings(namespace)} | apps(count, replicas, "registry.test/app:1")
    )
    sync()
    with measured(plane, "gitdeploy sync", count, out):
        repo.commit_and_push("apps at 2", apps(count, replicas, "registry.test/app:2"))
        sync()


def replica_sets_done(plane: ControlPlane, namespace: str, image: str) -> bool:
    """Every app runs ``image`` on all its replicas, and no pod of another image is asked for."""
    items: Any = plane.get_json("replicasets", "-n", namespace)["items"]
    new = [rs for rs in items if rs["spec"]["template"]["spec"]["containers"][0]["image"] == image]
    return bool(new) and all(
        rs["status"].get("availableReplicas") == rs["spec"]["replicas"] == rs["status"].get("replicas")
        for rs in new
    ) and all(rs["spec"]["replicas"] == 0 for rs in items if rs not in new)  # fmt: skip


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_resident_gitdeploy(
    plane: ControlPlane, name: str, count: int, replicas: int, work: Path, out: list[Figures]
) -> None:
    """``gitdeploy run`` already running (as the Deployment controller is), told of the commit by
    a signed webhook push; done when the ReplicaSets say so, read as often as the Deployments'."""
    namespace = managed_namespace_for_gitdeploy(plane, f"gr-{name.lower()}")
    kubeconfig = service_account_kubeconfig(plane, work / f"{name}-run.kubeconfig")
    repo = GitRemote(work / f"repo-run-{name}")
    repo.commit_and_push(
        "apps at 1", {"gitdeploy.yaml": settings(namespace)} | apps(count, replicas, "registry.test/app:1")
    )
    secret, port = work / f"{name}-secret", free_port()
    secret.write_bytes(SECRET)
    env = {**repo.env, "GITDEPLOY_STATE_DIR": str(work / f"state-run-{name}"), "NO_COLOR": "1"}
    with (work / f"run-{name}.log").open("w") as log:
        process = subprocess.Popen(
            [gitdeploy_executable(), "--kubeconfig", str(kubeconfig), "run", "--repo", repo.url,
             "--interval", "1h", "--no-leader-elect", "--workers", "8", "--listen", f"127.0.0.1:{port}",
             "--webhook-secret-file", str(secret)], env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            wait("the first rollout", lambda: replica_sets_done(plane, namespace, "registry.test/app:1"))
            before = process_cpu(process.pid)
            with httpx.Client() as hooks, measured(plane, "gitdeploy run", count, out):
                after = repo.commit_and_push("apps at 2", apps(count, replicas, "registry.test/app:2"))
                if deliver_push(hooks, f"http://127.0.0.1:{port}", repo.url, after) >= 300:
                    raise SystemExit(f"bench: the webhook refused the push; see {log.name}")
                wait("the rollout", lambda: replica_sets_done(plane, namespace, "registry.test/app:2"))
            out[-1] = dataclasses.replace(out[-1], gitdeploy_cpu_s=process_cpu(process.pid) - before)
        finally:
            process.terminate()
            process.wait(30)


def medians(figures: list[Figures]) -> dict[str, Figures]:
    """Per controller, the median of each figure over its rounds."""
    rounds: dict[str, list[Figures]] = {}
    for f in figures:
        rounds.setdefault(f.controller, []).append(f)
    return {
        controller: Figures(
            controller,
            *(
                statistics.median(getattr(f, field.name) for f in taken)
                for field in dataclasses.fields(Figures)[1:]
            ),
        )
        for controller, taken in rounds.items()
    }


def print_table(name: str, figures: list[Figures]) -> None:
    print(json.dumps({"scenario": name, "figures": [f.__dict__ for f in figures]}))
    by = medians(figures)
    rounds = len(figures) // len(by)
    rows = [
        ("makespan s", "makespan_s"),
        ("ReplicaSet writes / rollout", "replica_set_writes"),
        ("other writes / rollout", "other_writes"),
        ("kube-controller-manager CPU s", "controller_manager_cpu_s"),
        ("gitdeploy CPU s", "gitdeploy_cpu_s"),
    ]
    ours = [c for c in by if c != "deployment"]
    title = f"{name} (median of {rounds}):" if rounds > 1 else f"{name}:"
    print(f"\n{title:38} {'Deployment ctrl':>16}" + "".join(f"{c:>15} {'ratio':>6}" for c in ours))
    for label, key in rows:
        dc = getattr(by["deployment"], key)
        values = [getattr(by[c], key) for c in ours]
        cells = "".join(f"{v:15.2f} {v / dc if dc else float('nan'):6.2f}" for v in values)
        print(f"  {label:38} {dc:16.2f}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    parser.add_argument("--repeat", type=int, default=1, help="rounds of each scenario (median shown)")
    parser.add_argument("--pod-ready-seconds", type=float, default=1.0)
    parser.add_argument(
        "--dir", type=Path, help="where the control plane and repos live (default: a temp dir)"
    )
    args = parser.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench-realk8s-"))
    plane_dir = work / "plane"
    subprocess.run(
        [str(REALK8S), "up", str(plane_dir), "--pod-ready-seconds", str(args.pod_ready_seconds)], check=True
    )
    plane = ControlPlane.at(plane_dir)
    try:
        install_gitdeploy_identity(plane)
        for name in args.scenario or list(SCENARIOS):
            count, replicas = SCENARIOS[name]
            figures: list[Figures] = []
            for round_ in range(args.repeat):
                label = name if round_ == 0 else f"{name}-{round_}"
                run_deployment_controller(plane, label, count, replicas, figures)
                run_gitdeploy(plane, label, count, replicas, work, figures)
                run_resident_gitdeploy(plane, label, count, replicas, work, figures)
            print_table(name, figures)
    finally:
        subprocess.run([str(REALK8S), "down", str(plane_dir)], check=False)


if __name__ == "__main__":
    main()
