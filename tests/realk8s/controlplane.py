"""Start and stop a real Kubernetes control plane on loopback, for tests and for trying gitdeploy.

``python -m tests.realk8s.controlplane up DIR --bin BIN`` (what ``scripts/realk8s up`` runs) starts,
from the binaries in BIN:

- **etcd** (data in DIR/etcd, no fsync: this is a test cluster);
- **kube-apiserver** with TLS from certificates generated into DIR/pki, service-account signing
  keys, authorization ``RBAC``, and the admission plugins of a production cluster, among them
  ``OwnerReferencesPermissionEnforcement`` (as OpenShift enables it) and ``PodSecurity``;
- **kube-controller-manager** with the ReplicaSet, Deployment, garbage-collector, namespace,
  service-account and token controllers;
- **kube-scheduler**, so that pods are bound to nodes as on a real cluster;
- **kwok**, which plays the kubelet of a few fake nodes with the stages in ``kwok_stages``: pods
  become Ready after ``--pod-ready-seconds``, pods of an ``--image-pull-failure`` image stay in
  ``ErrImagePull``, pods that never restart (hook and deployer pods) end by the ``EXIT_CODE``
  variable of their first container, and a deleted pod stays Terminating for its grace period;
  with ``--pod-log [CONTAINER=]FILE`` (repeatable) kwok also serves FILE as the log of every
  container (of that name) through the real path: ``kubectl logs`` → kube-apiserver → the node's
  kubelet endpoint, kwok's own server (see kwok_logs).

It returns when the API answers ``/readyz``, the nodes are Ready and the ``default`` service
account exists, with an admin kubeconfig at DIR/kubeconfig. ``down DIR`` stops what ``up DIR``
started (the process ids are in DIR/pids). Logs are in DIR/logs; the API server's audit log of
the requests of ``deploy/``'s ServiceAccount (``AUDIT_POLICY``) is DIR/logs/audit.log.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.realk8s.kwok_logs import cluster_logs
from tests.realk8s.kwok_stages import NODE_COUNT, stages_yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
REALK8S = REPO_ROOT / "scripts" / "realk8s"
DEPLOY = REPO_ROOT / "deploy"
GITDEPLOY_NAMESPACE = "gitdeploy"

ADMISSION_PLUGINS = (
    "NamespaceLifecycle,LimitRanger,ServiceAccount,PodSecurity,Priority,DefaultTolerationSeconds,"
    "DefaultStorageClass,StorageObjectInUseProtection,RuntimeClass,ResourceQuota,"
    "MutatingAdmissionWebhook,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook,"
    "OwnerReferencesPermissionEnforcement,NodeRestriction"
)
CONTROLLERS = (
    "replicaset,deployment,garbage-collector-controller,namespace-controller,"
    "serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller"
)
READY_TIMEOUT = 120.0
GITDEPLOY_USER = "system:serviceaccount:gitdeploy:gitdeploy"
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata", "users": [GITDEPLOY_USER]}, {"level": "None"}],
}
"""Only gitdeploy's own requests, at the Metadata level (verb, URI, object, code): tests count them."""


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(pki: Path) -> None:
    """A CA, the API server's serving certificate, an admin client certificate, the SA key pair."""
    pki.mkdir(parents=True, exist_ok=True)
    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "3650",
        "-subj",
        "/CN=realk8s-ca",
        cwd=pki,
    )
    san = (
        "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
        "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
    )
    (pki / "server.ext").write_text(san + "\nextendedKeyUsage=serverAuth\n")
    (pki / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name, subject, ext in (
        ("apiserver", "/CN=kube-apiserver", "server.ext"),
        ("admin", "/O=system:masters/CN=realk8s-admin", "client.ext"),
    ):
        openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            subject,
            cwd=pki,
        )
        openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "3650",
            "-extfile",
            ext,
            cwd=pki,
        )
    openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def write_kubeconfig(path: Path, server: str, pki: Path) -> None:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "realk8s",
                        "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")},
                    }
                ],
                "users": [
                    {
                        "name": "admin",
                        "user": {
                            "client-certificate": str(pki / "admin.crt"),
                            "client-key": str(pki / "admin.key"),
                        },
                    }
                ],
                "contexts": [{"name": "realk8s", "context": {"cluster": "realk8s", "user": "admin"}}],
                "current-context": "realk8s",
            },
            indent=2,
        )
    )


def start(name: str, argv: list[str], run_dir: Path) -> int:
    """Start one component detached (its own session), logging to logs/NAME.log; record its pid."""
    logs = run_dir / "logs"
    logs.mkdir(exist_ok=True)
    with (logs / f"{name}.log").open("ab") as log:
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    with (run_dir / "pids").open("a") as pids:
        pids.write(f"{name} {process.pid}\n")
    return process.pid


def wait_until(what: str, check: object, run_dir: Path, timeout: float = READY_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except Exception as bad:
            last = str(bad)
        for name, pid in read_pids(run_dir):
            if not alive(pid):
                raise SystemExit(
                    f"realk8s: {name} exited while waiting for {what}; see {run_dir}/logs/{name}.log"
                )
        time.sleep(0.3)
    raise SystemExit(
        f"realk8s: timed out after {timeout:.0f} s waiting for {what} ({last}); logs in {run_dir}/logs"
    )


def read_pids(run_dir: Path) -> list[tuple[str, int]]:
    path = run_dir / "pids"
    if not path.exists():
        return []
    return [(line.split()[0], int(line.split()[1])) for line in path.read_text().splitlines() if line.strip()]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of ours is not alive
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def api_ready(server: str, pki: Path) -> bool:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    with urllib.request.urlopen(f"{server}/readyz", context=context, timeout=5) as answer:
        return bool(answer.status == 200)


def kubectl(bin_dir: Path, kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [str(bin_dir / "kubectl"), "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def audit_flags(run_dir: Path) -> list[str]:
    """kube-apiserver's flags for the audit log of :data:`AUDIT_POLICY` in DIR/logs/audit.log."""
    policy = run_dir / "audit-policy.json"
    policy.write_text(json.dumps(AUDIT_POLICY))
    (run_dir / "logs").mkdir(exist_ok=True)
    return [f"--audit-policy-file={policy}", f"--audit-log-path={run_dir / 'logs' / 'audit.log'}"]


def start_kwok(
    run_dir: Path,
    bin_dir: Path,
    kubeconfig: Path,
    pod_ready_seconds: float,
    pull_failures: list[str],
    pod_logs: list[str],
) -> None:
    """kwok with the stages; with ``pod_logs`` (``[CONTAINER=]FILE``) also its kubelet-like server on
    127.0.0.1, the nodes' kubelet endpoint, serving those logs to the API server (see kwok_logs)."""
    config = stages_yaml(pod_ready_seconds, pull_failures)
    served: list[str] = ["--node-ip", "10.0.1.1", "--server-address", ""]
    if pod_logs:
        config += "---\n" + json.dumps(cluster_logs(pod_logs, run_dir), indent=1) + "\n"
        port = free_port()
        pki = run_dir / "pki"
        served = [
            "--node-ip", "127.0.0.1", "--node-port", str(port), "--server-address", f"127.0.0.1:{port}",
            "--tls-cert-file", str(pki / "apiserver.crt"),
            "--tls-private-key-file", str(pki / "apiserver.key"),
        ]  # fmt: skip
    (run_dir / "kwok.yaml").write_text(config)
    start(
        "kwok",
        [
            str(bin_dir / "kwok"),
            "--kubeconfig",
            str(kubeconfig),
            "--config",
            str(run_dir / "kwok.yaml"),
            "--manage-all-nodes=true",
            "--cidr",
            "10.244.0.1/16",
            *served,
        ],
        run_dir,
    )


def up(
    run_dir: Path,
    bin_dir: Path,
    pod_ready_seconds: float,
    pull_failures: list[str],
    pod_logs: list[str] | None = None,
) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    if any(alive(pid) for _, pid in read_pids(run_dir)):
        raise SystemExit(
            f"realk8s: a control plane already runs in {run_dir}; `scripts/realk8s down {run_dir}` first"
        )
    (run_dir / "pids").unlink(missing_ok=True)
    pki = run_dir / "pki"
    if not (pki / "sa.pub").exists():
        make_pki(pki)
    ports = Ports(free_port(), free_port(), free_port())
    server = f"https://127.0.0.1:{ports.apiserver}"
    kubeconfig = run_dir / "kubeconfig"
    write_kubeconfig(kubeconfig, server, pki)

    start(
        "etcd",
        [
            str(bin_dir / "etcd"),
            "--name",
            "realk8s",
            "--data-dir",
            str(run_dir / "etcd"),
            "--listen-client-urls",
            f"http://127.0.0.1:{ports.etcd_client}",
            "--advertise-client-urls",
            f"http://127.0.0.1:{ports.etcd_client}",
            "--listen-peer-urls",
            f"http://127.0.0.1:{ports.etcd_peer}",
            "--initial-advertise-peer-urls",
            f"http://127.0.0.1:{ports.etcd_peer}",
            "--initial-cluster",
            f"realk8s=http://127.0.0.1:{ports.etcd_peer}",
            "--unsafe-no-fsync",
            "--listen-metrics-urls",
            "",
            "--log-level",
            "warn",
        ],
        run_dir,
    )
    start(
        "kube-apiserver",
        [
            str(bin_dir / "kube-apiserver"),
            "--etcd-servers",
            f"http://127.0.0.1:{ports.etcd_client}",
            "--bind-address",
            "127.0.0.1",
            "--advertise-address",
            "127.0.0.1",
            "--secure-port",
            str(ports.apiserver),
            "--tls-cert-file",
            str(pki / "apiserver.crt"),
            "--tls-private-key-file",
            str(pki / "apiserver.key"),
            "--client-ca-file",
            str(pki / "ca.crt"),
            "--service-account-key-file",
            str(pki / "sa.pub"),
            "--service-account-signing-key-file",
            str(pki / "sa.key"),
            "--service-account-issuer",
            "https://kubernetes.default.svc.cluster.local",
            "--api-audiences",
            "https://kubernetes.default.svc.cluster.local",
            "--authorization-mode",
            "RBAC",
            "--enable-admission-plugins",
            ADMISSION_PLUGINS,
            "--service-cluster-ip-range",
            "10.0.0.0/24",
            "--endpoint-reconciler-type",
            "none",
            "--allow-privileged=false",
            # kubectl logs: the API server reaches a node's kubelet (kwok) at its InternalIP, over
            # TLS that it verifies against the cluster CA (kwok serves the API server's certificate).
            "--kubelet-preferred-address-types",
            "InternalIP",
            "--kubelet-certificate-authority",
            str(pki / "ca.crt"),
            "--profiling=false",
            *audit_flags(run_dir),
            "--v=1",
        ],
        run_dir,
    )
    wait_until("kube-apiserver /readyz", lambda: api_ready(server, pki), run_dir)

    start(
        "kube-controller-manager",
        [
            str(bin_dir / "kube-controller-manager"),
            "--kubeconfig",
            str(kubeconfig),
            "--authentication-kubeconfig",
            str(kubeconfig),
            "--authorization-kubeconfig",
            str(kubeconfig),
            "--controllers",
            CONTROLLERS,
            "--leader-elect=false",
            "--secure-port",
            "0",
            "--service-account-private-key-file",
            str(pki / "sa.key"),
            "--root-ca-file",
            str(pki / "ca.crt"),
            "--use-service-account-credentials=false",
            "--v=1",
        ],
        run_dir,
    )
    start(
        "kube-scheduler",
        [
            str(bin_dir / "kube-scheduler"),
            "--kubeconfig",
            str(kubeconfig),
            "--authentication-kubeconfig",
            str(kubeconfig),
            "--authorization-kubeconfig",
            str(kubeconfig),
            "--leader-elect=false",
            "--secure-port",
            "0",
            "--v=1",
        ],
        run_dir,
    )
    start_kwok(run_dir, bin_dir, kubeconfig, pod_ready_seconds, pull_failures, pod_logs or [])
    for index in range(NODE_COUNT):
        kubectl(
            bin_dir,
            kubeconfig,
            "apply",
            "-f",
            "-",
            stdin=json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": f"kwok-node-{index}",
                        "labels": {"type": "kwok", "kubernetes.io/os": "linux"},
                        "annotations": {"kwok.x-k8s.io/node": "fake"},
                    },
                }
            ),
        )

    def nodes_ready() -> bool:
        out = kubectl(
            bin_dir,
            kubeconfig,
            "get",
            "nodes",
            "-o",
            "jsonpath={range .items[*]}{.status.conditions[?(@.type=='Ready')].status}{'\\n'}{end}",
        )
        return out.split() == ["True"] * NODE_COUNT

    wait_until("the kwok nodes to be Ready", nodes_ready, run_dir)
    # The API server taints a new node not-ready; the node-lifecycle controller (not run: kwok sends
    # no heartbeats) would lift it once the node is Ready. Lift it as that controller would.
    kubectl(bin_dir, kubeconfig, "taint", "nodes", "--all", "node.kubernetes.io/not-ready:NoSchedule-")
    wait_until(
        "the default service account",
        lambda: bool(kubectl(bin_dir, kubeconfig, "get", "serviceaccount", "default", "-o", "name")),
        run_dir,
    )
    (run_dir / "bin").unlink(missing_ok=True)
    (run_dir / "bin").symlink_to(bin_dir)
    print(f"realk8s: up; kubeconfig {kubeconfig} (admin), API {server}")


def down(run_dir: Path) -> None:
    pids = read_pids(run_dir)
    for _, pid in reversed(pids):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(alive(pid) for _, pid in pids):
        time.sleep(0.2)
    for _, pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    (run_dir / "pids").unlink(missing_ok=True)
    print(f"realk8s: down ({len(pids)} processes stopped)")


@dataclass(frozen=True)
class ControlPlane:
    """A running control plane: its directory, admin kubeconfig and binaries (kubectl among them)."""

    dir: Path
    admin_kubeconfig: Path
    bin: Path

    @classmethod
    def at(cls, run_dir: Path) -> ControlPlane:
        return cls(run_dir, run_dir / "kubeconfig", (run_dir / "bin").resolve())

    def kubectl(
        self, *args: str, stdin: str | None = None, kubeconfig: Path | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.bin / "kubectl"), "--kubeconfig", str(kubeconfig or self.admin_kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr}")
        return done

    def get_json(self, *args: str) -> dict[str, object]:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)  # type: ignore[no-any-return]


def restart_apiserver(plane: ControlPlane) -> None:
    """Stop kube-apiserver (only it: etcd and the rest go on) and start it again with the same
    flags, returning when it answers ``/readyz``. Every watch is cut, and the new server's watch
    cache starts at etcd's revision of that moment: a watch resumed from an older resourceVersion
    ends in 410 Gone ("too old resource version"), as after an API server upgrade."""
    pids = read_pids(plane.dir)
    [pid] = [pid for name, pid in pids if name == "kube-apiserver"]
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0")
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    (plane.dir / "pids").write_text("".join(f"{name} {p}\n" for name, p in pids if p != pid))
    start("kube-apiserver", argv, plane.dir)
    server = json.loads(plane.admin_kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    wait_until(
        "kube-apiserver /readyz after its restart", lambda: api_ready(server, plane.dir / "pki"), plane.dir
    )


def audit_events(plane: ControlPlane, after: int = 0) -> list[dict[str, object]]:
    """The audit log's events (of gitdeploy's account, see :data:`AUDIT_POLICY`) written after
    byte ``after`` of it (:func:`audit_log_size` before a step: the events of that step)."""
    path = plane.dir / "logs" / "audit.log"
    if not path.exists():
        return []
    with path.open("rb") as log:
        log.seek(after)
        lines = log.read().split(b"\n")[:-1]  # the last line may be half-written yet
    return [json.loads(line) for line in lines if line.strip()]


def audit_log_size(plane: ControlPlane) -> int:
    path = plane.dir / "logs" / "audit.log"
    return path.stat().st_size if path.exists() else 0


def install_gitdeploy_identity(plane: ControlPlane) -> None:
    """deploy/'s namespace, ServiceAccount and leader-election Role, applied as a user would."""
    for name in ("namespace.yaml", "serviceaccount.yaml", "leader-election.yaml"):
        plane.kubectl("apply", "-f", str(DEPLOY / name))


def service_account_kubeconfig(
    plane: ControlPlane, path: Path, account: str = "gitdeploy", namespace: str = GITDEPLOY_NAMESPACE
) -> Path:
    """A kubeconfig with a token of ServiceAccount ``namespace/account`` (a TokenRequest, as a pod
    gets one); by default deploy/'s, gitdeploy's own."""
    token = plane.kubectl("create", "token", account, "-n", namespace, "--duration", "6h").stdout
    admin = json.loads(plane.admin_kubeconfig.read_text())
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "realk8s", "cluster": admin["clusters"][0]["cluster"]}],
                "users": [{"name": account, "user": {"token": token.strip()}}],
                "contexts": [
                    {
                        "name": account,
                        "context": {"cluster": "realk8s", "user": account, "namespace": namespace},
                    }
                ],
                "current-context": account,
            }
        )
    )
    return path


def deploy_manifest_for(manifest: str, name: str) -> str:
    """``sed 's/namespace: apps$/namespace: NAME/' deploy/MANIFEST``: a per-namespace manifest of
    deploy/ for namespace ``name``, as the docs tell users to make it."""
    return re.sub(r"(?m)^(\s*)namespace: apps$", rf"\1namespace: {name}", (DEPLOY / manifest).read_text())


def apply_to_namespace(plane: ControlPlane, manifest: str, name: str) -> None:
    """``sed 's/namespace: apps$/namespace: NAME/' deploy/MANIFEST | kubectl apply -f -``, as the
    docs tell users to apply the per-namespace manifests of deploy/."""
    plane.kubectl("apply", "-f", "-", stdin=deploy_manifest_for(manifest, name))


def managed_namespace_for_gitdeploy(
    plane: ControlPlane, name: str, restricted: bool = True, deployer: bool = True
) -> str:
    """Namespace ``name``, enforcing Pod Security "restricted", with deploy/rbac.yaml's Role and
    RoleBinding in it (the only rights gitdeploy has there), as the docs tell users to apply it;
    with ``deployer``, deploy/deployer.yaml too (the account Custom deployer pods run as)."""
    plane.kubectl("create", "namespace", name)
    if restricted:
        plane.kubectl(
            "label",
            "namespace",
            name,
            "pod-security.kubernetes.io/enforce=restricted",
            "pod-security.kubernetes.io/enforce-version=latest",
        )
    apply_to_namespace(plane, "rbac.yaml", name)
    if deployer:
        apply_to_namespace(plane, "deployer.yaml", name)
    return name


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="scripts/realk8s")
    verbs = parser.add_subparsers(dest="verb", required=True)
    start_parser = verbs.add_parser("up")
    start_parser.add_argument("dir", type=Path)
    start_parser.add_argument("--bin", type=Path, required=True)
    start_parser.add_argument("--pod-ready-seconds", type=float, default=1.0)
    start_parser.add_argument("--image-pull-failure", action="append", default=[], metavar="IMAGE")
    start_parser.add_argument("--pod-log", action="append", default=[], metavar="[CONTAINER=]FILE")
    stop_parser = verbs.add_parser("down")
    stop_parser.add_argument("dir", type=Path)
    args = parser.parse_args(argv)
    if args.verb == "up":
        try:
            up(
                args.dir.resolve(),
                args.bin.resolve(),
                args.pod_ready_seconds,
                args.image_pull_failure,
                args.pod_log,
            )
        except BaseException:
            down(args.dir.resolve())
            raise
    else:
        down(args.dir.resolve())


if __name__ == "__main__":
    main(sys.argv[1:])
