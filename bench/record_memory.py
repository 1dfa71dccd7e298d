"""What the app records of a fleet take in a replica's watch cache, by history depth.

Every replica's watch cache holds the record of every app (a ConfigMap each), for the scrapes, the
dashboard and (with ``run --sharding``) the moment it adopts an app. This fills a
:class:`~gitdeploy.controller.watchcache.WatchCache` with ``--apps`` records of ``--revisions``
revisions each (commits, authors, images with digests, times: as a rollout writes them), through
the calls the record watch makes, and measures with ``tracemalloc`` a record held:

* ``json``: as its JSON text (each object as the cache holds it, by app name);
* ``packed``: compressed, as the cache holds every record now
  (:meth:`~gitdeploy.core.observed.StoredRecord.packed`);
* ``parsed``: parsed, as the cache held the records a scrape or the dashboard had read (every
  record of a lone replica) until the scrapes and the dashboard kept each app's view instead.

and what that makes at 30,000 apps for a replica, now and before. Prints a JSON line per depth,
then a table::

    python bench/record_memory.py [--apps 2000] [--revisions 1 10 100]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitdeploy.controller.watchcache import WatchCache
from gitdeploy.core.history.records import AppRecord, CommitRef, Outcome, RevisionEntry, SyncStatus
from gitdeploy.core.observed import StoredRecord

NAMESPACE = "shop"
REGISTRY = "registry.example.com/shop"
MIB = 2**20


def _digest(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


def record(app: int, revisions: int) -> AppRecord:
    """An app record of ``revisions`` complete rollouts, each from its own commit and image."""
    entries = []
    for n in range(1, revisions + 1):
        sha = _digest("commit", app, n)[:40]
        template_hash = _digest("template", app, n)[:10]
        entries.append(
            RevisionEntry(
                revision=n,
                template_hash=template_hash,
                replica_set=f"app-{app}-{template_hash}",
                commit=CommitRef(sha, f"Dev {n % 17} <dev{n % 17}@example.com>", f"Bump app-{app} to v1.{n}"),
                images=((f"app-{app}", f"{REGISTRY}/app-{app}:v1.{n}@sha256:{_digest(app, n)}"),),
                started_at=1.7e9 + n * 3600.25,
                finished_at=1.7e9 + n * 3600.25 + 95.5,
                outcome=Outcome.COMPLETE,
                message=f"rolled out {n % 5 + 1} of {n % 5 + 1} replicas",
            )
        )
    head = _digest("head", app)[:40]
    status = SyncStatus("Synced", "Healthy", "", head, f"apps/shop/app-{app}.yaml:1", 1.7e9, head[:16])
    return AppRecord(revisions=tuple(entries), status=status, last_synced_commit=head)


def held_bytes(fill: Callable[[], object]) -> tuple[int, object]:
    """The bytes that what ``fill`` returns holds (tracemalloc, after a collection)."""
    gc.collect()
    tracemalloc.start()
    try:
        held = fill()
        gc.collect()
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return size, held


def measure(apps: int, revisions: int) -> dict[str, object]:
    payloads = [record(app, revisions).to_json() for app in range(apps)]

    def stored(app: int) -> StoredRecord:
        return StoredRecord(NAMESPACE, f"app-{app}", payloads[app], str(app + 1), f"uid-{app}")

    def as_text(app: int) -> StoredRecord:  # a copy of its text, as each list or event decodes anew
        return StoredRecord(NAMESPACE, f"app-{app}", (payloads[app] + " ")[:-1], str(app + 1), f"uid-{app}")

    as_json, _ = held_bytes(lambda: {f"app-{app}": as_text(app) for app in range(apps)})

    def filled() -> WatchCache:
        cache = WatchCache()
        cache.replace_replica_sets(NAMESPACE, [])
        cache.replace_records(NAMESPACE, [stored(app) for app in range(apps)])
        return cache

    packed, _ = held_bytes(filled)
    parsed, _ = held_bytes(lambda: {f"app-{app}": AppRecord.from_json(payloads[app]) for app in range(apps)})
    per = {"json": as_json / apps, "packed": packed / apps, "parsed": parsed / apps}
    return {
        "scenario": "record-memory",
        "apps": apps,
        "revisions": revisions,
        "record_kib": {name: round(size / 1024, 2) for name, size in per.items()},
        # at 30,000 apps: now every replica holds every record packed; before, one replica alone
        # held every record parsed, and each of three its third parsed and the others as JSON
        "now_mib_30k": round(30_000 * per["packed"] / MIB, 1),
        "before_alone_mib_30k": round(30_000 * per["parsed"] / MIB, 1),
        "before_each_of_3_mib_30k": round(10_000 * per["parsed"] / MIB + 20_000 * per["json"] / MIB, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=2_000)
    parser.add_argument("--revisions", type=int, nargs="+", default=[1, 10, 100])
    args = parser.parse_args(argv)
    results = [measure(args.apps, depth) for depth in args.revisions]
    for result in results:
        print(json.dumps(result))
    print()
    print("revisions | KiB a record: json / packed / parsed | at 30,000 apps, MiB: now (any replica) "
          "| before: alone, each of 3")  # fmt: skip
    for r in results:
        kib: dict[str, float] = r["record_kib"]  # type: ignore[assignment]
        print(
            f"{r['revisions']:>9} | {kib['json']:>8} / {kib['packed']:>6} / {kib['parsed']:>7} "
            f"| {r['now_mib_30k']:>8} | {r['before_alone_mib_30k']}, {r['before_each_of_3_mib_30k']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
