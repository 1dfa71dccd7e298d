"""Image stream tag bookkeeping, with a dict standing in for the registry."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from gitdeploy.core.models import AppKey, ImageStream, ImageStreamTag, Location
from gitdeploy.errors import PermanentError, TransientError
from gitdeploy.images.streams import (
    TagEvent,
    TagHistory,
    histories_from_json,
    histories_to_json,
    resolve_stream_tags,
    select_tags_to_resolve,
)

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64
C = "sha256:" + "c" * 64
T0, T1, T2 = 1_700_000_000.0, 1_700_000_060.0, 1_700_000_120.0
APP = "registry.example.com/team/app"


class FakeRegistry:
    """Resolves references from a table and counts calls; a value that is an exception is raised."""

    def __init__(self, table: Mapping[str, str | Exception]) -> None:
        self.table = dict(table)
        self.calls: list[str] = []

    def resolve(self, reference: str) -> str:
        self.calls.append(reference)
        value = self.table[reference]
        if isinstance(value, Exception):
            raise value
        return value


def make_stream(*tags: ImageStreamTag) -> ImageStream:
    return ImageStream(AppKey("shop", "app"), Location("streams/app.yaml", 1), tags)


def event(digest: str, at: float, name: str = APP) -> TagEvent:
    return TagEvent(digest, f"{name}@{digest}", at)


def docker_tag(name: str, from_name: str, scheduled: bool = True) -> ImageStreamTag:
    return ImageStreamTag(name, "DockerImage", from_name, scheduled)


# --- TagHistory.record_event: (events before, new event, limit) -> events after -------------------

RECORD_CASES: list[tuple[str, tuple[TagEvent, ...], TagEvent, int, tuple[TagEvent, ...]]] = [
    ("first sighting", (), event(A, T0), 10, (event(A, T0),)),
    ("same digest again keeps the first sighting", (event(A, T0),), event(A, T1), 10, (event(A, T0),)),
    ("new digest goes first", (event(A, T0),), event(B, T1), 10, (event(B, T1), event(A, T0))),
    (
        "moving back drops the older duplicate (module example)",
        (event(B, T1), event(A, T0)),
        event(A, T2),
        10,
        (event(A, T2), event(B, T1)),
    ),
    ("bounded by the limit", (event(B, T1), event(A, T0)), event(C, T2), 2, (event(C, T2), event(B, T1))),
    ("limit 1 keeps only the newest", (event(A, T0),), event(B, T1), 1, (event(B, T1),)),
    (
        "same digest from another repository is a new entry",
        (event(A, T0),),
        event(A, T1, "mirror.example.com/team/app"),
        10,
        (event(A, T1, "mirror.example.com/team/app"),),
    ),
]


@pytest.mark.parametrize(
    ("case", "before", "new", "limit", "after"), RECORD_CASES, ids=[c[0] for c in RECORD_CASES]
)
def test_record_event(
    case: str, before: tuple[TagEvent, ...], new: TagEvent, limit: int, after: tuple[TagEvent, ...]
) -> None:
    history = TagHistory("latest", f"{APP}:latest", before)
    updated = history.record_event(new, f"{APP}:latest", limit)
    assert updated.events == after
    assert updated.latest == after[0]
    assert history.events == before  # values, not mutation


def test_record_event_refuses_a_limit_below_one() -> None:
    with pytest.raises(ValueError, match="at least one"):
        TagHistory("latest").record_event(event(A, T0), APP, 0)


# --- select_tags_to_resolve ------------------------------------------------------------------------

SELECT_CASES: list[tuple[str, ImageStreamTag, TagHistory | None, bool, bool]] = [
    # case, tag, its history, resolve_all, due?
    (
        "scheduled is always due",
        docker_tag("t", f"{APP}:1"),
        TagHistory("t", f"{APP}:1", (event(A, T0),)),
        False,
        True,
    ),
    ("unscheduled without history", docker_tag("t", f"{APP}:1", False), None, False, True),
    ("unscheduled with empty history", docker_tag("t", f"{APP}:1", False), TagHistory("t"), False, True),
    (
        "unscheduled, resolved, same source",
        docker_tag("t", f"{APP}:1", False),
        TagHistory("t", f"{APP}:1", (event(A, T0),)),
        False,
        False,
    ),
    (
        "unscheduled, source changed",
        docker_tag("t", f"{APP}:2", False),
        TagHistory("t", f"{APP}:1", (event(A, T0),)),
        False,
        True,
    ),
    (
        "unscheduled, resolve_all",
        docker_tag("t", f"{APP}:1", False),
        TagHistory("t", f"{APP}:1", (event(A, T0),)),
        True,
        True,
    ),
    ("alias never", ImageStreamTag("t", "ImageStreamTag", "app:latest", True), None, True, False),
]


@pytest.mark.parametrize(
    ("case", "tag", "history", "resolve_all", "due"), SELECT_CASES, ids=[c[0] for c in SELECT_CASES]
)
def test_select_tags_to_resolve(
    case: str, tag: ImageStreamTag, history: TagHistory | None, resolve_all: bool, due: bool
) -> None:
    histories = {tag.name: history} if history is not None else {}
    selected = select_tags_to_resolve([tag], histories, resolve_all=resolve_all)
    assert selected == ((tag,) if due else ())


# --- resolve_stream_tags ---------------------------------------------------------------------------


def test_first_resolution_records_every_tag_as_changed() -> None:
    stream = make_stream(docker_tag("latest", f"{APP}:latest"), docker_tag("stable", f"{APP}:1.0", False))
    registry = FakeRegistry({f"{APP}:latest": A, f"{APP}:1.0": B})

    result = resolve_stream_tags(stream, [], registry.resolve, now=T0)

    assert [h.tag for h in result.histories] == ["latest", "stable"]
    assert result.history("latest") == TagHistory("latest", f"{APP}:latest", (event(A, T0),))
    assert result.history("stable") == TagHistory("stable", f"{APP}:1.0", (event(B, T0),))
    assert result.changed_tags == ("latest", "stable")
    assert all(c.previous is None for c in result.changes)
    assert result.failures == () and result.skipped == ()


def test_unmoved_tag_is_not_a_change_and_moved_tag_is() -> None:
    stream = make_stream(docker_tag("latest", f"{APP}:latest"), docker_tag("edge", f"{APP}:edge"))
    before = [
        TagHistory("latest", f"{APP}:latest", (event(A, T0),)),
        TagHistory("edge", f"{APP}:edge", (event(B, T0),)),
    ]
    registry = FakeRegistry({f"{APP}:latest": A, f"{APP}:edge": C})

    result = resolve_stream_tags(stream, before, registry.resolve, now=T1)

    assert result.changed_tags == ("edge",)
    (change,) = result.changes
    assert change.previous == event(B, T0)
    assert change.current == event(C, T1)
    assert result.history("latest") == before[0]
    assert result.history("edge") == TagHistory("edge", f"{APP}:edge", (event(C, T1), event(B, T0)))


def test_docker_hub_names_are_resolved_fully_qualified() -> None:
    stream = make_stream(docker_tag("web", "nginx:1.25"))
    registry = FakeRegistry({"docker.io/library/nginx:1.25": A})

    result = resolve_stream_tags(stream, [], registry.resolve, now=T0)

    assert registry.calls == ["docker.io/library/nginx:1.25"]
    expected = TagHistory("web", "nginx:1.25", (event(A, T0, "docker.io/library/nginx"),))
    assert result.history("web") == expected


def test_digest_pinned_source_needs_no_registry() -> None:
    stream = make_stream(docker_tag("pinned", f"{APP}@{B}"))
    registry = FakeRegistry({})

    result = resolve_stream_tags(stream, [], registry.resolve, now=T0)

    assert registry.calls == []
    assert result.history("pinned") == TagHistory("pinned", f"{APP}@{B}", (event(B, T0),))


def test_unscheduled_resolved_tags_and_aliases_are_skipped_and_kept() -> None:
    alias = ImageStreamTag("prod", "ImageStreamTag", "app:stable")
    stream = make_stream(docker_tag("stable", f"{APP}:1.0", scheduled=False), alias)
    before = [TagHistory("stable", f"{APP}:1.0", (event(A, T0),)), TagHistory("prod", "", (event(A, T0),))]
    registry = FakeRegistry({})

    result = resolve_stream_tags(stream, before, registry.resolve, now=T1)

    assert registry.calls == []
    assert result.skipped == ("stable", "prod")
    assert result.histories == tuple(before)
    assert result.changes == ()


def test_a_failing_tag_keeps_its_history_and_others_still_resolve() -> None:
    stream = make_stream(
        docker_tag("down", f"{APP}:down"),
        docker_tag("gone", f"{APP}:gone"),
        docker_tag("bad", "Not A Reference"),
        docker_tag("ok", f"{APP}:ok"),
    )
    outage = TransientError("registry unreachable", retry_after=5)
    missing = PermanentError("tag 'gone' not found")
    before = [TagHistory("down", f"{APP}:down", (event(A, T0),))]
    registry = FakeRegistry({f"{APP}:down": outage, f"{APP}:gone": missing, f"{APP}:ok": C})

    result = resolve_stream_tags(stream, before, registry.resolve, now=T1)

    assert [(f.tag, type(f.error)) for f in result.failures] == [
        ("down", TransientError),
        ("gone", PermanentError),
        ("bad", type(result.failures[2].error)),
    ]
    assert isinstance(result.failures[2].error, PermanentError)
    assert result.failures[0].error is outage
    assert result.history("down") == before[0]
    assert result.history("gone") == TagHistory("gone")
    assert result.changed_tags == ("ok",)


def test_a_malformed_digest_from_the_resolver_is_a_failure() -> None:
    stream = make_stream(docker_tag("latest", f"{APP}:latest"))
    registry = FakeRegistry({f"{APP}:latest": "sha256:short"})

    result = resolve_stream_tags(stream, [], registry.resolve, now=T0)

    assert [f.tag for f in result.failures] == ["latest"]
    assert result.history("latest") == TagHistory("latest")


def test_other_exceptions_from_the_resolver_propagate() -> None:
    stream = make_stream(docker_tag("latest", f"{APP}:latest"))
    registry = FakeRegistry({f"{APP}:latest": RuntimeError("bug")})

    with pytest.raises(RuntimeError, match="bug"):
        resolve_stream_tags(stream, [], registry.resolve, now=T0)


def test_histories_of_removed_tags_are_dropped_and_limit_applies() -> None:
    stream = make_stream(docker_tag("latest", f"{APP}:latest"))
    before = [
        TagHistory("latest", f"{APP}:latest", (event(B, T1), event(A, T0))),
        TagHistory("removed", f"{APP}:old", (event(A, T0),)),
    ]
    registry = FakeRegistry({f"{APP}:latest": C})

    result = resolve_stream_tags(stream, before, registry.resolve, now=T2, limit=2)

    assert [h.tag for h in result.histories] == ["latest"]
    assert result.history("removed") is None
    assert result.history("latest") == TagHistory("latest", f"{APP}:latest", (event(C, T2), event(B, T1)))


def test_changed_source_with_same_digest_updates_source_without_a_change() -> None:
    stream = make_stream(docker_tag("stable", f"{APP}:1.1", scheduled=False))
    before = [TagHistory("stable", f"{APP}:1.0", (event(A, T0),))]
    registry = FakeRegistry({f"{APP}:1.1": A})

    result = resolve_stream_tags(stream, before, registry.resolve, now=T1)

    assert registry.calls == [f"{APP}:1.1"]
    assert result.history("stable") == TagHistory("stable", f"{APP}:1.1", (event(A, T0),))
    assert result.changes == ()


# --- tags moved by hand (gitdeploy tag) -----------------------------------------------------------

MANUAL_CASES: list[tuple[str, TagHistory, ImageStreamTag, bool]] = [
    # (case, history, tag in git, resolved?)
    ("hand-moved, git unchanged, scheduled", TagHistory("prod", APP, (event(B, T1),), True),
     docker_tag("prod", APP), False),
    ("hand-moved before any resolution", TagHistory("prod", "", (event(B, T1),), True),
     docker_tag("prod", APP), False),
    ("hand-moved, then git changed its from", TagHistory("prod", APP, (event(B, T1),), True),
     docker_tag("prod", APP + "2"), True),
    ("resolved, scheduled", TagHistory("prod", APP, (event(B, T1),)), docker_tag("prod", APP), True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "history", "tag", "resolved"), MANUAL_CASES, ids=[c[0] for c in MANUAL_CASES]
)
def test_a_tag_moved_by_hand_holds_until_git_changes_its_from(
    case: str, history: TagHistory, tag: ImageStreamTag, resolved: bool
) -> None:
    due = select_tags_to_resolve([tag], {tag.name: history})
    assert (due == (tag,)) is resolved, case


def test_move_by_hand_records_the_event_and_adopts_gits_source_later() -> None:
    moved = TagHistory("prod").move_by_hand(event(B, T1))
    assert moved.manual and moved.latest == event(B, T1) and moved.source == ""
    registry = FakeRegistry({})
    result = resolve_stream_tags(make_stream(docker_tag("prod", APP)), [moved], registry.resolve, now=T2)
    assert registry.calls == [] and result.changes == ()
    assert result.history("prod") == TagHistory("prod", APP, (event(B, T1),), manual=True)


def test_a_resolution_ends_a_hand_move() -> None:
    moved = TagHistory("prod", APP, (event(A, T0),)).move_by_hand(event(B, T1))
    registry = FakeRegistry({APP + "2:latest": C})
    stream = make_stream(docker_tag("prod", APP + "2"))
    result = resolve_stream_tags(stream, [moved], registry.resolve, now=T2)
    history = result.history("prod")
    assert history is not None and not history.manual
    assert [e.digest for e in history.events] == [C, B, A]


# --- the stored JSON --------------------------------------------------------------------------------


def test_histories_round_trip_through_json() -> None:
    histories = (
        TagHistory("prod", APP, (event(B, T1), event(A, T0)), manual=True),
        TagHistory("dev", "", ()),
    )
    assert histories_from_json(histories_to_json(histories)) == histories


@pytest.mark.parametrize("text", ["not json", '{"version": 99, "tags": []}', '{"tags": [{"no": 1}]}', "[]"])
def test_damaged_state_is_a_permanent_error_naming_the_fix(text: str) -> None:
    with pytest.raises(PermanentError) as caught:
        histories_from_json(text)
    assert "gitdeploy-imagestream-" in caught.value.hint
