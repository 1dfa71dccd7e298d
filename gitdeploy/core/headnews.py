"""Head announcements of ``gitdeploy run --sharding``: pushes and polls shared by the replicas
(pure, no I/O, no clock: time is an argument).

With several replicas, a webhook push reaches the one replica the Service picked, and each
replica would poll git on its own. Instead, the replicas share one *head announcement*: a
``coordination.k8s.io/v1`` Lease named ``<lease name>-head`` (``gitdeploy-head``) in the lease
namespace, whose annotations say which commit some replica found at the head of the tracked
branch (:class:`HeadAnnouncement`). Every replica watches that one object.

* **Who announces** (:func:`should_announce`): a replica whose own poll moved its head to a
  commit the announcement does not name yet; and the replica a verified webhook push reaches,
  with the push's commit, at once (in parallel with its own fetch).
* **Who fetches** (:func:`should_fetch`): a replica that sees an announcement of its branch naming
  another commit than its own head, announced by another replica. It treats it as a push: it
  fetches the branch and deploys what the *fetch* brought, never the announced sha itself, so a
  stale or forged announcement costs one fetch and nothing else.
* **Who polls** (:func:`poll_period`): the leader polls git at ``--interval``; the others, while
  their watch of the announcement works and their last poll did not fail, only every
  :data:`FOLLOWER_POLL_FACTOR` intervals, in case the fan-out fails silently (the leader cannot
  write the announcement). A dead leader is replaced within the lease duration, and the new one
  polls at ``--interval``; a replica whose watch is down, or that sees no leader, polls at
  ``--interval`` too.

Worked example: ``b`` received a push of ``c0ffee`` and announced it; ``a`` is still at ``bead``.

>>> news = HeadAnnouncement("c0ffee", "refs/heads/main", "b", 1700000000.0, Announced.PUSH)
>>> should_fetch(news, identity="a", ref="refs/heads/main", head="bead", fetched_for="")
True
>>> should_fetch(news, identity="a", ref="refs/heads/main", head="c0ffee", fetched_for="")
False
>>> should_announce(news, head="c0ffee", ref="refs/heads/main")  # a's fetch brought it: named
False
>>> poll_period(30.0, leading=False, leader_known=True, watching=True, failed=False)
300.0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from gitdeploy.core.timestamps import format_timestamp, parse_timestamp

HEAD_SUFFIX = "-head"
"""The announcement's name is the leader Lease's name plus this: one per fleet."""

SHA_ANNOTATION = "gitdeploy.io/head-commit"
REF_ANNOTATION = "gitdeploy.io/head-ref"
BY_ANNOTATION = "gitdeploy.io/head-announced-by"
AT_ANNOTATION = "gitdeploy.io/head-announced-at"
SOURCE_ANNOTATION = "gitdeploy.io/head-source"

FOLLOWER_POLL_FACTOR = 10
"""A replica that does not lead polls git every this many ``--interval`` (while the fan-out works)."""


class Announced(StrEnum):
    """How the announcing replica learned of the commit."""

    PUSH = "push"
    """A verified webhook push named it (announced before the replica's own fetch)."""
    POLL = "poll"
    """The replica's own poll or fetch moved its head to it."""


@dataclass(frozen=True)
class HeadAnnouncement:
    """What the announcement says: ``sha`` is at the head of ``ref``, as ``by`` learned ``at``
    (Unix time, for people reading it) through ``source``."""

    sha: str
    ref: str
    by: str
    at: float
    source: Announced

    def annotations(self) -> dict[str, str]:
        """The Lease's annotations that carry it (``at`` as RFC 3339, whole seconds).

        >>> HeadAnnouncement("c0ffee", "refs/heads/main", "b", 1700000000.0, Announced.PUSH).annotations()
        ... # doctest: +NORMALIZE_WHITESPACE
        {'gitdeploy.io/head-commit': 'c0ffee', 'gitdeploy.io/head-ref': 'refs/heads/main',
         'gitdeploy.io/head-announced-by': 'b', 'gitdeploy.io/head-announced-at': '2023-11-14T22:13:20Z',
         'gitdeploy.io/head-source': 'push'}
        """
        return {
            SHA_ANNOTATION: self.sha,
            REF_ANNOTATION: self.ref,
            BY_ANNOTATION: self.by,
            AT_ANNOTATION: format_timestamp(self.at),
            SOURCE_ANNOTATION: str(self.source),
        }

    @classmethod
    def from_annotations(cls, annotations: Mapping[str, str]) -> HeadAnnouncement | None:
        """Read it back; None when the object names no commit (made by hand, or emptied).
        Unknown or missing fields read as empty: the announcement is a hint, never trusted.

        >>> HeadAnnouncement.from_annotations({SHA_ANNOTATION: "c0ffee", SOURCE_ANNOTATION: "??"})
        HeadAnnouncement(sha='c0ffee', ref='', by='', at=0.0, source=<Announced.POLL: 'poll'>)
        >>> HeadAnnouncement.from_annotations({}) is None
        True
        """
        sha = str(annotations.get(SHA_ANNOTATION) or "").strip()
        if not sha:
            return None
        source = annotations.get(SOURCE_ANNOTATION)
        return cls(
            sha=sha,
            ref=str(annotations.get(REF_ANNOTATION) or ""),
            by=str(annotations.get(BY_ANNOTATION) or ""),
            at=parse_timestamp(annotations.get(AT_ANNOTATION)) or 0.0,
            source=Announced(source) if source in set(Announced) else Announced.POLL,
        )


@dataclass(frozen=True)
class ObservedAnnouncement:
    """The announcement object as read or watched: what it says (None: it names no commit) and
    the ``resourceVersion`` an update must name (and a watch goes on from)."""

    announcement: HeadAnnouncement | None
    resource_version: str


def head_announcement_name(lease_name: str) -> str:
    """The name of the announcement Lease of the fleet whose leader Lease is ``lease_name``.

    >>> head_announcement_name("gitdeploy")
    'gitdeploy-head'
    """
    return lease_name + HEAD_SUFFIX


def same_ref(announced: str, ref: str) -> bool:
    """Whether an announced ref is the tracked one (``main`` and ``refs/heads/main`` are).

    >>> same_ref("refs/heads/main", "main"), same_ref("refs/heads/main", "refs/heads/main")
    (True, True)
    >>> same_ref("refs/heads/prod", "main"), same_ref("", "main")
    (False, False)
    """
    if not announced or not ref:
        return False
    return announced == ref or announced.removeprefix("refs/heads/") == ref.removeprefix("refs/heads/")


def should_fetch(
    announced: HeadAnnouncement | None, *, identity: str, ref: str, head: str | None, fetched_for: str
) -> bool:
    """Whether replica ``identity``, whose head of ``ref`` is ``head``, fetches at once for
    ``announced``: another replica announced another commit of the same branch, and this replica
    has not fetched for that commit already (``fetched_for``: the sha of its last such fetch, so a
    watch that lists the object again costs nothing). A replica that has not read git yet
    (``head`` None) does not: its own first poll, or its retries at ``--interval``, come anyway.

    >>> news = HeadAnnouncement("c0ffee", "refs/heads/main", "b", 0.0, Announced.POLL)
    >>> should_fetch(news, identity="b", ref="main", head="bead", fetched_for="")  # its own
    False
    >>> should_fetch(news, identity="a", ref="prod", head="bead", fetched_for="")  # another branch
    False
    >>> should_fetch(news, identity="a", ref="main", head="bead", fetched_for="c0ffee")  # done
    False
    >>> should_fetch(news, identity="a", ref="main", head=None, fetched_for="")  # not read git yet
    False
    >>> should_fetch(None, identity="a", ref="main", head="bead", fetched_for="")
    False
    """
    if announced is None or head is None or announced.by == identity or not same_ref(announced.ref, ref):
        return False
    return announced.sha not in (head, fetched_for)


def should_announce(announced: HeadAnnouncement | None, *, head: str | None, ref: str) -> bool:
    """Whether a replica whose poll just moved its head of ``ref`` to ``head`` announces it: the
    announcement (as this replica last saw it) names another commit, or another branch, or none.

    >>> news = HeadAnnouncement("c0ffee", "refs/heads/main", "b", 0.0, Announced.PUSH)
    >>> should_announce(news, head="c0ffee", ref="refs/heads/main")
    False
    >>> should_announce(news, head="d00d", ref="refs/heads/main")
    True
    >>> should_announce(None, head="d00d", ref="refs/heads/main"), should_announce(None, head=None, ref="")
    (True, False)
    """
    if head is None:
        return False
    return announced is None or announced.sha != head or not same_ref(announced.ref, ref)


class WriteAct(StrEnum):
    WRITE = "write"
    """Write the announcement, naming the resourceVersion read (create it when there is none)."""
    DROP = "drop"
    """The object already names this commit of this branch: nothing to write."""


def decide_write(current: HeadAnnouncement | None, wanted: HeadAnnouncement) -> WriteAct:
    """What an announcer does, given the announcement as just read (after a conflict too: of two
    replicas announcing one commit, the second finds it named and drops its write).

    >>> wanted = HeadAnnouncement("c0ffee", "refs/heads/main", "a", 5.0, Announced.POLL)
    >>> decide_write(None, wanted), decide_write(wanted, wanted)
    (<WriteAct.WRITE: 'write'>, <WriteAct.DROP: 'drop'>)
    >>> older = HeadAnnouncement("bead", "refs/heads/main", "b", 4.0, Announced.PUSH)
    >>> decide_write(older, wanted)
    <WriteAct.WRITE: 'write'>
    """
    if current is not None and current.sha == wanted.sha and same_ref(current.ref, wanted.ref):
        return WriteAct.DROP
    return WriteAct.WRITE


def poll_period(interval: float, *, leading: bool, leader_known: bool, watching: bool, failed: bool) -> float:
    """Seconds between two polls of git by one replica of a sharded fleet (see the module
    docstring): ``interval`` for the leader, for a replica that sees no leader, whose watch of
    the announcement is down, or whose last poll failed (the source's backoff applies on top);
    :data:`FOLLOWER_POLL_FACTOR` times longer otherwise.

    >>> poll_period(30.0, leading=True, leader_known=True, watching=True, failed=False)
    30.0
    >>> poll_period(30.0, leading=False, leader_known=True, watching=False, failed=False)
    30.0
    >>> poll_period(30.0, leading=False, leader_known=False, watching=True, failed=False)
    30.0
    >>> poll_period(30.0, leading=False, leader_known=True, watching=True, failed=True)
    30.0
    """
    if leading or not leader_known or not watching or failed:
        return interval
    return interval * FOLLOWER_POLL_FACTOR
