"""The watch cache: what the ReplicaSet and record watches saw, per namespace."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

from gitdeploy.controller.watchcache import DELETED, Kind, WatchCache
from gitdeploy.core.history.records import AppRecord, CommitRef, Outcome, RevisionEntry
from gitdeploy.core.models import PodTemplate
from gitdeploy.core.observed import ObservedReplicaSet, StoredRecord
from gitdeploy.core.rollout.templatedrift import (
    TEMPLATE_DIGEST_ANNOTATION,
    TemplateDrift,
    find_template_drift,
    template_digest,
)
from gitdeploy.core.scaling.replicasets import ReplicaSetState


def replica_set(name: str, replicas: int = 2, namespace: str = "shop") -> ObservedReplicaSet:
    return ObservedReplicaSet(
        namespace, "web", ReplicaSetState(name, name, 1, 1.0, replicas, replicas, replicas, replicas)
    )


def record(app: str, version: str, payload: str | None = None) -> StoredRecord:
    return StoredRecord("shop", app, payload or AppRecord().to_json(), version, f"uid-{app}")


def test_a_namespace_is_held_only_once_both_watches_listed_it() -> None:
    cache = WatchCache()
    cache.replica_set_changed("ADDED", replica_set("web-a"))  # before the list: the list will say
    assert cache.contents("shop") is None
    cache.replace_replica_sets("shop", [replica_set("web-b")])
    assert cache.contents("shop") is None
    cache.replace_records("shop", [record("web", "1")])
    held = cache.contents("shop")
    assert held is not None
    assert ([rs.name for rs in held[0]], [r.app for r in held[1]]) == (["web-b"], ["web"])


def test_events_change_deleted_objects_go_and_a_list_replaces_everything() -> None:
    cache = WatchCache()
    cache.replace_replica_sets("shop", [replica_set("web-a"), replica_set("web-b")])
    cache.replace_records("shop", [record("web", "1"), record("api", "1")])
    cache.replica_set_changed("MODIFIED", replica_set("web-a", replicas=0))
    cache.replica_set_changed(DELETED, replica_set("web-b"))
    cache.record_changed(DELETED, record("api", "2"))
    held = cache.contents("shop")
    assert held is not None
    assert [(rs.name, rs.state.replicas) for rs in held[0]] == [("web-a", 0)]
    assert [r.app for r in held[1]] == ["web"]
    cache.replace_replica_sets("shop", [replica_set("web-c")])  # a relist after a 410
    held = cache.contents("shop")
    assert held is not None and [rs.name for rs in held[0]] == ["web-c"]
    cache.forget("shop", Kind.REPLICA_SETS)
    assert cache.contents("shop") is None


def test_a_record_is_held_as_the_watch_told_it_damaged_or_not() -> None:
    cache = WatchCache()
    cache.replace_replica_sets("shop", [])
    cache.replace_records("shop", [record("web", "1")])
    suspended = json.dumps({**json.loads(AppRecord().to_json()), "triggersSuspended": True})
    cache.record_changed("MODIFIED", record("web", "2", suspended))
    [changed] = held_records(cache)
    assert changed.resource_version == "2" and AppRecord.from_json(changed.payload).triggers_suspended
    cache.record_changed("MODIFIED", record("web", "3", "{not json"))
    assert held_records(cache)[0].payload == "{not json"  # a damaged one keeps what it says


def test_a_template_is_kept_only_when_it_was_edited_by_hand() -> None:
    template = PodTemplate('{"spec":{"containers":[{"image":"n:1","name":"w"}]}}')
    kept = replica_set("web-a")
    cache = WatchCache()
    cache.replace_records("shop", [])
    cache.replace_replica_sets(
        "shop",
        [
            replace(
                kept,
                annotations=((TEMPLATE_DIGEST_ANNOTATION, template_digest(template)),),
                template=template,
            ),
            replace(
                replica_set("web-b"), annotations=((TEMPLATE_DIGEST_ANNOTATION, "0" * 16),), template=template
            ),
        ],
    )
    held = cache.contents("shop")
    assert held is not None
    as_written, edited = held[0]
    assert as_written.template is None and find_template_drift(as_written) is None
    assert edited.template == template
    assert find_template_drift(edited) == TemplateDrift("web-b")


def test_a_record_is_held_compressed_and_reads_back_the_same() -> None:
    history = AppRecord(revisions=tuple(_revision(n) for n in range(1, 101)))
    payload = history.to_json()
    cache = WatchCache()
    cache.replace_replica_sets("shop", [])
    cache.replace_records("shop", [record("web", "1", payload)])
    cache.record_changed("ADDED", record("api", "2", payload))
    for held in held_records(cache):
        assert isinstance(held.body, bytes) and len(held.body) * 3 < len(payload)
        assert held.payload == payload and AppRecord.from_json(held.payload) == history


def _revision(n: int) -> RevisionEntry:
    sha = hashlib.sha1(str(n).encode()).hexdigest()
    digest = hashlib.sha256(sha.encode()).hexdigest()
    return RevisionEntry(
        revision=n,
        template_hash=sha[:10],
        replica_set=f"web-{sha[:10]}",
        commit=CommitRef(sha, "Ada <ada@example.com>", f"Bump web to v1.{n}"),
        images=(("web", f"registry.example.com/shop/web:v1.{n}@sha256:{digest}"),),
        started_at=1.7e9 + n * 3600,
        finished_at=1.7e9 + n * 3600 + 95,
        outcome=Outcome.COMPLETE,
    )


def held_records(cache: WatchCache) -> list[StoredRecord]:
    held = cache.contents("shop")
    assert held is not None
    return held[1]


def test_the_generation_moves_with_each_change_and_holds_says_what_was_listed() -> None:
    cache = WatchCache()
    seen = [cache.generation]
    cache.replace_replica_sets("shop", [replica_set("web-a")])
    assert cache.holds("shop", Kind.REPLICA_SETS) and not cache.holds("shop", Kind.RECORDS)
    assert not cache.holds("shop")
    seen.append(cache.generation)
    cache.replace_records("shop", [record("web", "1")])
    assert cache.holds("shop")
    seen.append(cache.generation)
    cache.replica_set_changed("MODIFIED", replica_set("web-a", replicas=0))
    seen.append(cache.generation)
    cache.record_changed("MODIFIED", record("web", "2"))
    seen.append(cache.generation)
    assert cache.contents("shop") is not None
    assert cache.generation == seen[-1]  # reading changes nothing
    cache.forget("shop", Kind.RECORDS)
    seen.append(cache.generation)
    assert seen == sorted(set(seen)), "each change moved it"
    assert not cache.holds("shop")


def test_cached_objects_share_one_string_for_each_namespace_phase_and_annotation_key() -> None:
    """Each watch event decodes its strings anew; the cache keeps one of each repeated one."""
    cache = WatchCache()
    decoded = [
        replace(
            replica_set(name, namespace="".join(["sh", "op"])),
            annotations=(
                ("".join(["gitdeploy.io/", "phase"]), "".join(["Compl", "ete"])),
                ("gitdeploy.io/revision", "1"),
                ("".join(["gitdeploy.io/", "commit"]), name * 2),
            ),
        )
        for name in ("web-a", "web-b")
    ]
    cache.replace_replica_sets("shop", decoded[:1])
    cache.replica_set_changed("ADDED", decoded[1])
    cache.replace_records("shop", [replace(record("web", "1"), namespace="".join(["sh", "op"]))])
    cache.record_changed("ADDED", replace(record("api", "1"), namespace="".join(["sh", "op"])))
    held = cache.contents("shop")
    assert held is not None
    first, second = held[0]
    assert first.namespace is second.namespace is held[1][0].namespace is held[1][1].namespace
    assert [key for key, _ in first.annotations] == ["gitdeploy.io/commit", "gitdeploy.io/phase"]
    assert all(a is b for (a, _), (b, _) in zip(first.annotations, second.annotations, strict=True))
    assert first.annotation("gitdeploy.io/phase") is second.annotation("gitdeploy.io/phase") == "Complete"
    assert first.annotation("gitdeploy.io/commit") == "web-aweb-a"
    assert first.annotation("gitdeploy.io/revision") == ""  # not kept: the counting does not read it


def test_a_cache_of_some_shards_serves_only_readers_of_those_shards() -> None:
    cache = WatchCache()
    mine = frozenset({"3", "7"})
    cache.replace_replica_sets("shop", [replica_set("web-a")], shards=mine)
    cache.replace_records("shop", [record("web", "1")], shards=mine)
    assert not cache.holds("shop") and not cache.holds("shop", Kind.RECORDS)
    assert cache.contents("shop") is None  # a reader of the whole namespace lists it
    held = cache.contents("shop", partial=True)
    assert held is not None and [r.app for r in held[1]] == ["web"]
    assert cache.records("shop") is None
    assert cache.records("shop", frozenset({"3"})) is not None
    assert cache.records("shop", frozenset({"3", "9"})) is None  # shard 9 is another replica's
    cache.replace_records("shop", [record("web", "2")])  # the replica is alone again: all of it
    records = cache.records("shop", frozenset({"9"}))
    assert records is not None and records["web"].resource_version == "2"
    assert cache.holds("shop", Kind.RECORDS) and not cache.holds("shop")
    cache.forget("shop", Kind.RECORDS)
    assert cache.records("shop", frozenset({"3"})) is None
