"""An embedded cluster pre-filled with N apps "already running", cached between benchmark runs.

For every app of a generated repository: its namespace, its app record (ConfigMap
``gitdeploy.<app>``) and one ReplicaSet ``<app>-<hash>`` per revision, made through the cluster
adapter over HTTP exactly as gitdeploy makes them (labels, annotations, owner reference). The
latest revision has the manifest's replicas and its pods are running and ready; older revisions
(``revisions > 1``) are scaled to 0.

Filling 10,000 apps takes a minute or two, so the state directory is kept under the cache
directory, keyed by apps, seed, revisions and :data:`FORMAT`, and reused while its marker file
exists. Bump :data:`FORMAT` when what is written changes (for example when the app record's
payload format lands with the reconcile loop: today the payload is a minimal placeholder).
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubernetes import client

from bench.generate import AppPlan, render_manifest
from gitdeploy.clock import SystemClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.core.hashing import canonical_template, template_hash
from gitdeploy.core.models import PodTemplate
from gitdeploy.core.observed import COMMIT_ANNOTATION, REVISION_ANNOTATION, ReplicaSetSpec
from gitdeploy.localcluster import LocalCluster, SimulationConfig
from gitdeploy.manifests.documents import ManifestFile, parse_documents

FORMAT = 1
MARKER = "bench-complete.json"
SIMULATION = SimulationConfig(pod_start_seconds=0.5)


def api_client_for(cluster: LocalCluster) -> Any:
    """An official-client ``ApiClient`` for ``cluster`` (typed Any: the client's annotations are partial)."""
    configuration = client.Configuration()
    configuration.host = cluster.url
    configuration.api_key = {"authorization": f"Bearer {cluster.token}"}
    if cluster.ca_path is not None:
        configuration.ssl_ca_cert = str(cluster.ca_path)
    return client.ApiClient(configuration)


def _template_of(plan: AppPlan, version: int) -> tuple[PodTemplate, dict[str, str]]:
    documents, problems = parse_documents(ManifestFile(plan.path, render_manifest(plan, version).encode()))
    assert not problems, problems
    spec = documents[0].data["spec"]
    selector = spec["selector"].get("matchLabels", spec["selector"])
    return canonical_template(spec["template"]), {str(k): str(v) for k, v in selector.items()}


def _fill_app(cluster: Cluster, plan: AppPlan, revisions: int) -> None:
    record = cluster.write_app_record(
        plan.namespace, plan.name, json.dumps({"benchmark": True, "revisions": revisions}), None
    )
    for revision in range(1, revisions + 1):
        template, selector = _template_of(plan, revision)
        latest = revision == revisions
        cluster.create_replica_set(
            ReplicaSetSpec(
                namespace=plan.namespace,
                app=plan.name,
                template=template,
                template_hash=template_hash(template),
                selector_labels=tuple(sorted(selector.items())),
                replicas=plan.replicas if latest else 0,
                annotations=((REVISION_ANNOTATION, str(revision)), (COMMIT_ANNOTATION, "0" * 40)),
                owner_uid=record.uid,
            )
        )


def fill(cluster: LocalCluster, plans: Sequence[AppPlan], revisions: int, workers: int = 2) -> None:
    """Create every app's namespace, record and ReplicaSets through the adapter, ``workers`` at a time."""
    api = api_client_for(cluster)
    adapter = Cluster(api)
    for namespace in sorted({p.namespace for p in plans}):
        adapter.ensure_namespace(namespace)
    api.close()
    lock = threading.Lock()
    queue = list(reversed(plans))
    done = [0]

    def work() -> None:
        api = api_client_for(cluster)
        adapter = Cluster(api)
        while True:
            with lock:
                if not queue:
                    break
                plan = queue.pop()
            _fill_app(adapter, plan, revisions)
            with lock:
                done[0] += 1
                if done[0] % 1000 == 0:
                    print(f"  … {done[0]} apps in the cluster", file=sys.stderr, flush=True)
        api.close()

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Let every pod become ready, then apply the transitions now so no later request pays for them.
    time.sleep(SIMULATION.pod_start_seconds + 0.2)
    while cluster.registry.materialise():
        pass


@contextmanager
def running_cluster(
    cache_dir: Path, plans: Sequence[AppPlan], seed: int, revisions: int = 1
) -> Iterator[tuple[LocalCluster, dict[str, Any]]]:
    """Yield a started embedded cluster holding ``plans`` (filled now, or reused from the cache).

    The second value says whether the state was reused and how long filling took.
    """
    state = cache_dir / f"cluster-apps{len(plans)}-seed{seed}-rev{revisions}-f{FORMAT}"
    facts: dict[str, Any] = {"cluster_state": str(state)}
    if not (state / MARKER).exists():
        shutil.rmtree(state, ignore_errors=True)
        print(f"filling an embedded cluster with {len(plans)} apps (cached in {state})", file=sys.stderr)
        started = time.perf_counter()
        with LocalCluster(state, clock=SystemClock(), config=SIMULATION) as cluster:
            fill(cluster, plans, revisions)
            counts = cluster.counts()
        facts["cluster_fill_s"] = round(time.perf_counter() - started, 1)
        (state / MARKER).write_text(json.dumps({"counts": counts, "fill_s": facts["cluster_fill_s"]}))
        facts["cluster_reused"] = False
    else:
        facts["cluster_reused"] = True
    cluster = LocalCluster(state, clock=SystemClock(), config=SIMULATION)
    cluster.start()
    try:
        yield cluster, facts
    finally:
        cluster.stop()
