"""Config repositories of N apps for the benchmarks: realistic manifests in a real git repository.

Every app is one file of 2–3 KB, like the manifests teams write by hand: apps/v1 Deployments and
apps.openshift.io/v1 DeploymentConfigs with Rolling (RollingUpdate) or Recreate strategies,
readiness and liveness probes, resources, environment, volumes, and a sidecar or an init container
for some. Apps are spread over several namespaces and directories (``apps/<namespace>/<tier>/``),
and ``gitdeploy.yaml`` at the root names the paths and the allowed namespaces.

The same ``(apps, seed)`` always gives the same files and the same commit shas (fixed authors and
dates; the machine's git configuration is ignored). The repository is written with
``git fast-import`` into a bare repository, which takes about a second for 10,000 apps.

Use::

    repo = generate_repo(Path("/tmp/x"), apps=10_000, seed=1)   # repo.url, repo.head, repo.apps
    repo.commit_image_bump(42)        # one app changed: a new image tag for app 42
    repo.commit_unrelated()           # a README change, no manifest touched

or from the shell: ``python bench/generate.py DIR --apps 200`` (then ``gitdeploy validate --repo DIR``).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

EPOCH = 1_700_000_000
COMMITTER = "Bench Bot <bench@example.com>"
REGISTRY = "registry.example.com"
MIN_BYTES = 2_048
MAX_BYTES = 3_072

NAMESPACES = (
    "payments", "checkout", "search", "catalog", "identity", "shipping",
    "analytics", "notifications", "inventory", "platform", "billing", "support",
)  # fmt: skip
TIERS = ("frontend", "api", "workers", "jobs")
WORDS = (
    "ledger", "gateway", "indexer", "router", "session", "pricing", "tax", "cart", "profile",
    "mailer", "scheduler", "exporter", "importer", "resolver", "ranker", "tracker", "quota",
    "audit", "feeds", "render", "thumbs", "auth", "token", "webhook", "reports", "sync",
)  # fmt: skip
ENV_POOL = (
    ("LOG_LEVEL", "info"), ("LOG_FORMAT", "json"), ("HTTP_TIMEOUT", "30s"), ("MAX_CONNECTIONS", "200"),
    ("CACHE_TTL", "300"), ("FEATURE_FLAGS", "new-checkout,fast-search"), ("REGION", "eu-west-1"),
    ("TRACING_ENDPOINT", "http://otel-collector.observability:4317"), ("RETRY_BACKOFF", "250ms"),
    ("DB_POOL_SIZE", "20"), ("QUEUE_PREFETCH", "50"), ("GOMAXPROCS", "2"), ("JAVA_OPTS", "-Xmx512m"),
    ("SHUTDOWN_GRACE", "25s"), ("METRICS_PORT", "9090"), ("RATE_LIMIT_RPS", "500"),
    ("UPSTREAM_URL", "http://backend.internal:8080"), ("TZ", "UTC"), ("LANG", "C.UTF-8"),
    ("SENTRY_ENVIRONMENT", "production"), ("OTEL_SERVICE_NAMESPACE", "shop"), ("WORKERS", "4"),
)  # fmt: skip


@dataclass(frozen=True)
class AppPlan:
    """Everything that decides one app's manifest except its image version."""

    index: int
    name: str
    namespace: str
    tier: str
    kind: str  # Deployment or DeploymentConfig
    strategy: str  # Rolling or Recreate
    replicas: int
    port: int
    cpu_millis: int
    memory_mib: int
    sidecar: bool
    init_container: bool
    env: tuple[tuple[str, str], ...]

    @property
    def path(self) -> str:
        return f"apps/{self.namespace}/{self.tier}/{self.name}.yaml"

    @property
    def image(self) -> str:
        return f"{REGISTRY}/{self.namespace}/{self.name}"


def _container_lines(plan: AppPlan, tag: str) -> list[str]:
    lines = [
        "      - name: main",
        f"        image: {plan.image}:{tag}",
        "        imagePullPolicy: IfNotPresent",
        f"        args: [--port={plan.port}, --metrics-port=9090]",
        "        ports:",
        "        - name: http",
        f"          containerPort: {plan.port}",
        "          protocol: TCP",
        "        - name: metrics",
        "          containerPort: 9090",
        "        env:",
        "        - name: POD_NAME",
        "          valueFrom:",
        "            fieldRef:",
        "              fieldPath: metadata.name",
    ]
    for key, value in plan.env:
        lines += [f"        - name: {key}", f'          value: "{value}"']
    lines += [
        "        resources:",
        "          requests:",
        f"            cpu: {plan.cpu_millis}m",
        f"            memory: {plan.memory_mib}Mi",
        "          limits:",
        f"            cpu: {plan.cpu_millis * 4}m",
        f"            memory: {plan.memory_mib * 2}Mi",
        "        readinessProbe:",
        "          httpGet:",
        "            path: /healthz/ready",
        "            port: http",
        "          initialDelaySeconds: 5",
        "          periodSeconds: 10",
        "          failureThreshold: 3",
        "        livenessProbe:",
        "          httpGet:",
        "            path: /healthz/live",
        "            port: http",
        "          initialDelaySeconds: 15",
        "          periodSeconds: 20",
        "        volumeMounts:",
        "        - name: config",
        f"          mountPath: /etc/{plan.name}",
        "          readOnly: true",
        "        - name: tmp",
        "          mountPath: /tmp",
    ]
    if plan.sidecar:
        lines += [
            "      - name: log-shipper",
            f"        image: {REGISTRY}/platform/log-shipper:2.3.1",
            "        resources:",
            "          requests: {cpu: 20m, memory: 32Mi}",
            "          limits: {cpu: 100m, memory: 64Mi}",
            "        volumeMounts:",
            "        - name: tmp",
            "          mountPath: /var/log/app",
        ]
    return lines


def _selector_and_strategy_lines(plan: AppPlan, deployment: bool) -> list[str]:
    """The selector, strategy (and a DeploymentConfig's triggers) of ``plan``'s spec."""
    lines: list[str] = []
    if deployment:
        lines += [
            "  progressDeadlineSeconds: 600",
            "  selector:",
            "    matchLabels:",
            f"      app: {plan.name}",
            "  strategy:",
        ]
        if plan.strategy == "Rolling":
            lines += ["    type: RollingUpdate", "    rollingUpdate:"]
            lines += ["      maxSurge: 25%", "      maxUnavailable: 0"]
        else:
            lines += ["    type: Recreate"]
    else:
        lines += ["  selector:", f"    app: {plan.name}"]
        lines += ["  triggers:", "  - type: ConfigChange", "  strategy:"]
        if plan.strategy == "Rolling":
            lines += [
                "    type: Rolling",
                "    rollingParams:",
                "      maxSurge: 25%",
                "      maxUnavailable: 25%",
                "      intervalSeconds: 1",
                "      updatePeriodSeconds: 1",
                "      timeoutSeconds: 600",
            ]
        else:
            lines += ["    type: Recreate", "    recreateParams:", "      timeoutSeconds: 300"]
    return lines


def _pod_template_lines(plan: AppPlan, tag: str) -> list[str]:
    """The pod template of ``plan``'s spec, its main image at ``tag``."""
    lines = [
        "  template:",
        "    metadata:",
        "      labels:",
        f"        app: {plan.name}",
        f"        tier: {plan.tier}",
        "      annotations:",
        '        prometheus.io/scrape: "true"',
        '        prometheus.io/port: "9090"',
        "    spec:",
        f"      serviceAccountName: {plan.name}",
        "      terminationGracePeriodSeconds: 30",
        "      securityContext:",
        "        runAsNonRoot: true",
        "        fsGroup: 2000",
    ]
    if plan.init_container:
        lines += [
            "      initContainers:",
            "      - name: wait-for-config",
            f"        image: {REGISTRY}/platform/wait-for:1.0.4",
            f"        args: [--file=/etc/{plan.name}/config.yaml]",
        ]
    lines += ["      containers:", *_container_lines(plan, tag)]
    lines += [
        "      volumes:",
        "      - name: config",
        "        configMap:",
        f"          name: {plan.name}-config",
        "      - name: tmp",
        "        emptyDir:",
        "          sizeLimit: 256Mi",
    ]
    return lines


def render_manifest(plan: AppPlan, version: int = 1) -> str:
    """The manifest of ``plan`` whose main image has tag ``1.<version>.0``."""
    tag = f"1.{version}.0"
    deployment = plan.kind == "Deployment"
    lines = [
        f"# {plan.name}: {plan.tier} of the {plan.namespace} team. Owners: {plan.namespace}@example.com",
        "apiVersion: apps/v1" if deployment else "apiVersion: apps.openshift.io/v1",
        f"kind: {plan.kind}",
        "metadata:",
        f"  name: {plan.name}",
        f"  namespace: {plan.namespace}",
        "  labels:",
        f"    app.kubernetes.io/name: {plan.name}",
        f"    app.kubernetes.io/part-of: {plan.namespace}",
        f"    app.kubernetes.io/component: {plan.tier}",
        "  annotations:",
        f'    kubernetes.io/change-cause: "{plan.name} {tag}"',
        "spec:",
        f"  replicas: {plan.replicas}",
        "  revisionHistoryLimit: 5",
    ]
    lines += _selector_and_strategy_lines(plan, deployment)
    lines += _pod_template_lines(plan, tag)
    return "\n".join(lines) + "\n"


def plan_apps(count: int, seed: int = 1) -> list[AppPlan]:
    """The plans of ``count`` apps: the same list for the same ``(count, seed)``."""
    rng = random.Random(seed)
    plans: list[AppPlan] = []
    for index in range(count):
        namespace = NAMESPACES[index % len(NAMESPACES)]
        kind = "Deployment" if rng.random() < 0.6 else "DeploymentConfig"
        draft = AppPlan(
            index=index,
            name=f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{index:05d}",
            namespace=namespace,
            tier=rng.choice(TIERS),
            kind=kind,
            strategy="Rolling" if rng.random() < 0.75 else "Recreate",
            replicas=rng.choice((1, 2, 2, 3, 3, 4, 6)),
            port=rng.choice((8080, 8000, 3000, 9000)),
            cpu_millis=rng.choice((50, 100, 250, 500)),
            memory_mib=rng.choice((64, 128, 256, 512)),
            sidecar=rng.random() < 0.3,
            init_container=rng.random() < 0.2,
            env=(),
        )
        # Add environment variables until the file is between MIN_BYTES and MAX_BYTES.
        target = rng.randint(MIN_BYTES + 64, MAX_BYTES - 256)
        pool = list(ENV_POOL)
        rng.shuffle(pool)
        env: list[tuple[str, str]] = []
        while pool and len(render_manifest(draft, 1)) < target:
            env.append(pool.pop())
            draft = replace(draft, env=tuple(env))
        plans.append(draft)
    return plans


def render_settings() -> str:
    allowed = ", ".join(NAMESPACES)
    return (
        "# gitdeploy settings (benchmark repository)\n"
        "apiVersion: gitdeploy.io/v1alpha1\nkind: RepoSettings\n"
        f"paths: [apps]\ndefaultNamespace: {NAMESPACES[0]}\nallowedNamespaces: [{allowed}]\nprune: false\n"
    )


def _readme(revision: int) -> str:
    return f"# Benchmark config repository\n\nGenerated by bench/generate.py. Docs revision {revision}.\n"


def _git_env() -> dict[str, str]:
    return {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def _blob(path: str, content: str) -> str:
    data = content.encode()
    return f"M 100644 inline {path}\ndata {len(data)}\n{content}\n"


@dataclass
class GeneratedRepo:
    """A bare git repository ("the remote") holding the generated config on ``main``."""

    path: Path
    apps: list[AppPlan]
    versions: list[int]
    commits: int = 0
    docs_revision: int = 0
    heads: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return str(self.path)

    @property
    def head(self) -> str:
        return self.heads[-1]

    def _commit(self, message: str, files: dict[str, str]) -> str:
        stamp = f"{EPOCH + 60 * self.commits} +0000"
        data = message.encode()
        stream = f"commit refs/heads/main\ncommitter {COMMITTER} {stamp}\ndata {len(data)}\n{message}\n"
        if self.heads:
            stream += f"from {self.heads[-1]}\n"
        stream += "".join(_blob(path, content) for path, content in sorted(files.items()))
        subprocess.run(
            ["git", "fast-import", "--quiet", "--done"],
            cwd=self.path,
            input=(stream + "done\n").encode(),
            env=_git_env(),
            check=True,
        )
        sha = subprocess.run(
            ["git", "rev-parse", "refs/heads/main"],
            cwd=self.path,
            env=_git_env(),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        self.commits += 1
        self.heads.append(sha)
        return sha

    def manifest(self, index: int) -> str:
        return render_manifest(self.apps[index], self.versions[index])

    def commit_image_bump(self, index: int) -> str:
        """Commit a new image tag for app ``index`` (one manifest changed); return the commit sha."""
        self.versions[index] += 1
        plan = self.apps[index]
        return self._commit(
            f"{plan.name}: image 1.{self.versions[index]}.0", {plan.path: self.manifest(index)}
        )

    def commit_versions(self, version: int) -> str | None:
        """Commit image ``1.<version>.0`` for every app not there yet (one commit); None if none changed."""
        changed = {}
        for index, plan in enumerate(self.apps):
            if self.versions[index] != version:
                self.versions[index] = version
                changed[plan.path] = self.manifest(index)
        return self._commit(f"every app: image 1.{version}.0", changed) if changed else None

    def commit_unrelated(self) -> str:
        """Commit a README change, touching no manifest; return the commit sha."""
        self.docs_revision += 1
        readme = _readme(self.docs_revision)
        return self._commit(f"docs: revision {self.docs_revision}", {"README.md": readme})


def generate_repo(root: Path, apps: int, seed: int = 1) -> GeneratedRepo:
    """Write a bare repository ``root/config.git`` with ``apps`` apps in one commit; return it."""
    bare = root / "config.git"
    subprocess.run(
        ["git", "init", "--quiet", "--bare", "--initial-branch=main", str(bare)], env=_git_env(), check=True
    )
    plans = plan_apps(apps, seed)
    repo = GeneratedRepo(bare, plans, [1] * len(plans))
    files = {plan.path: render_manifest(plan) for plan in plans}
    files["gitdeploy.yaml"] = render_settings()
    files["README.md"] = _readme(0)
    files["docs/runbook.md"] = "# Runbook\n\nRoll back with `gitdeploy rollback APP REVISION`.\n"
    repo._commit(f"{apps} apps", files)
    return repo


def main() -> None:
    parser = argparse.ArgumentParser(description="Write a benchmark config repository (a bare git repo).")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--apps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.directory.mkdir(parents=True, exist_ok=True)
    repo = generate_repo(args.directory, args.apps, args.seed)
    print(f"{repo.url} at {repo.head}: {len(repo.apps)} apps")


if __name__ == "__main__":
    main()
