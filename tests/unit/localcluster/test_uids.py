"""The uids the embedded cluster gives new objects are random version-4 UUIDs, as the API server's."""

from __future__ import annotations

import uuid

from gitdeploy.localcluster.lifecycle import new_uid


def test_a_uid_is_a_random_uuid_in_its_canonical_form() -> None:
    uids = [new_uid() for _ in range(2000)]
    parsed = [uuid.UUID(uid) for uid in uids]
    assert [str(one) for one in parsed] == uids  # lower-case hex, hyphens at 8-4-4-4-12
    assert {(one.version, one.variant) for one in parsed} == {(4, uuid.RFC_4122)}
    assert len(set(uids)) == len(uids)
    # every other bit varies: not a counter, not a clock
    varying = 0
    for one in parsed:
        varying |= one.int ^ parsed[0].int
    assert bin(varying).count("1") == 122
