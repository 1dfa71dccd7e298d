"""A poll of the config repository: where the tracked ref points now, fetching only when it moved.

Cost of a poll: when the tracked ref has not moved, one ``git ls-remote`` and one local
``rev-parse``, no fetch, no tree walk. When it moved, one ``git fetch``, one ``for-each-ref``
(the fetched commit, its parents and the previous head) and one ``update-ref`` more; a
``merge-base`` only when the previous head is not a parent of the new one. A poll for a push
(:meth:`Poller.poll_once` with ``pushed``) skips the ``ls-remote``.
"""

from __future__ import annotations

import logging

from gitdeploy.core.commits import PollResult, shorten_sha
from gitdeploy.source.mirror import Mirror, tracking_ref
from gitdeploy.source.remote import RefNotFoundError, Remote
from gitdeploy.source.signatures import CommitVerifier
from gitdeploy.source.urls import is_full_sha

log = logging.getLogger("gitdeploy.source")


class Poller:
    """Moves the mirror's tracking ref to where the remote's ref points, once verified."""

    def __init__(self, remote: Remote, verifier: CommitVerifier) -> None:
        self.remote = remote
        self.mirror: Mirror = remote.mirror
        self.verifier = verifier

    def poll_once(self, pushed: str | None) -> PollResult:
        """One poll (see :meth:`~gitdeploy.source.repo.ConfigRepo.poll`); the caller serialises them."""
        remote, mirror = self.remote, self.mirror
        if pushed is not None and (branch := self._pushed_branch(pushed)) is not None:
            try:
                head, parents, previous = remote.fetch_named_ref(branch, for_push=True)
            except RefNotFoundError:
                pass  # gone since the push: a normal poll says what the remote has now
            else:
                if head != pushed:
                    log.info(
                        "[source] a push named %s, but %s is at %s (a replayed or out-of-order "
                        "delivery); syncing what the branch holds", shorten_sha(pushed), branch,
                        shorten_sha(head),
                    )  # fmt: skip
                return self._advance(branch, head, parents, previous)
        full_ref, remote_sha = remote.resolve()
        previous = mirror.read_ref(tracking_ref(full_ref))
        if previous is not None and previous == remote_sha:
            self.verifier.check_head(previous)
            mirror.remember_head(previous)
            if remote.maintenance_pending:  # the housekeeping that push fetches left out
                remote.maintenance_pending = False
                mirror.runner.run_unchecked("maintenance", "run", "--auto", "--quiet")
            return PollResult(ref=full_ref, head=previous, previous=previous)
        if is_full_sha(full_ref):
            head, parents = remote.fetch_commit(full_ref), None
        else:
            head, parents, _ = remote.fetch_named_ref(full_ref)
            if head != remote_sha:
                log.info("[source] %s moved again while fetching: %s", full_ref, shorten_sha(head))
        return self._advance(full_ref, head, parents, previous)

    def _pushed_branch(self, pushed: str) -> str | None:
        """The tracked branch to fetch at once for a push of ``pushed``; None for a normal poll.

        Only when an earlier poll resolved the tracked ref to a branch, and the pushed commit is
        not in the mirror yet (otherwise the delivery is a replay, or a poll got there first).
        """
        if not is_full_sha(pushed):
            return None
        branch = self.remote.full_ref or self.remote.ref
        if branch is None or not branch.startswith("refs/heads/"):
            return None
        if self.mirror.runner.object_header(pushed) is not None:
            return None
        return branch

    def _advance(
        self, full_ref: str, head: str, parents: tuple[str, ...] | None, previous: str | None
    ) -> PollResult:
        """Verify ``head`` and move the tracking ref to it (keeping ``previous`` after a force-push)."""
        mirror, display = self.mirror, self.remote.url.display
        self.verifier.check_head(head)
        forced = previous is not None and head != previous and not mirror.descends(head, parents, previous)
        if forced and previous is not None:
            mirror.keep_commit(previous)
            log.warning(
                "[source] %s of %s was force-pushed: %s -> %s (not a descendant); the old commit is kept",
                full_ref, display, shorten_sha(previous), shorten_sha(head),
                extra={"commit": head, "previous_commit": previous},
            )  # fmt: skip
        if head != previous:
            mirror.runner.run("update-ref", "-m", "gitdeploy poll", tracking_ref(full_ref), head)
            shown_previous = shorten_sha(previous) if previous else "(none)"
            log.info(
                "[source] %s of %s moved: %s -> %s",
                full_ref, display, shown_previous, shorten_sha(head),
                extra={"commit": head},
            )  # fmt: skip
        mirror.remember_head(head)
        if previous is not None:
            mirror.remember_head(previous)
        return PollResult(ref=full_ref, head=head, previous=previous, forced=forced)
