"""The watch of the member Leases of ``run --sharding``: when this process first heard of each
Lease's current version.

:class:`~gitdeploy.controller.membership.Membership` lists the member Leases every retry period
and counts each one valid for its duration after this process saw it change. With only the lists,
it sees a renewal up to a retry period late, so a member that stopped renewing is seen gone up to
that much later than its Lease allows. :class:`MemberWatch` follows the same Leases on a thread of
its own and notes when each version arrived (:meth:`MemberWatch.heard_at`): a renewal counts from
then. A Lease deleted (a replica shut down) calls ``on_gone``, so that the members are listed at
once. The lists stay the ground: without the watch (no ``watch`` on Leases, the API server
unreachable) renewals count from the lists.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from gitdeploy.clock import Clock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.cluster.leases import NamedLease
from gitdeploy.controller.listwatch import follow_once
from gitdeploy.core.sharding import MEMBER_LABEL
from gitdeploy.errors import GitdeployError

log = logging.getLogger("gitdeploy.sharding")

WATCH_SECONDS = 300
"""The server ends each watch after this long; it is resumed from where it was."""
PAUSES = (1.0, 30.0)
"""The pause after a failed list or watch: the first, doubling up to the second."""


class MemberWatch:
    """When this process heard of each member Lease's version (see the module docstring). Thread-safe."""

    def __init__(
        self, cluster: Cluster, namespace: str, own: str, monotonic: Clock, on_gone: Callable[[], None]
    ) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.own = own
        """This replica's member Lease: its delete is no news."""
        self.monotonic = monotonic
        self.on_gone = on_gone
        self._lock = threading.Lock()
        self._heard: dict[str, tuple[str, float]] = {}
        """Each Lease's version as the watch delivered it last, and when (monotonic) it first did."""
        self._watching = False

    @property
    def watching(self) -> bool:
        """Whether the watch is running (renewals count from its news)."""
        with self._lock:
            return self._watching

    def heard(self, named: NamedLease) -> None:
        """The watch delivered a member Lease: a version new to this process counts from now."""
        now = self.monotonic.now()
        with self._lock:
            if self._heard.get(named.name, ("",))[0] != named.resource_version:
                self._heard[named.name] = (named.resource_version, now)

    def heard_at(self, listed: dict[str, str]) -> dict[str, float]:
        """When the watch delivered each listed Lease (name to version) at that version, of those
        it did; it forgets the Leases not listed."""
        with self._lock:
            for name in self._heard.keys() - listed.keys():
                del self._heard[name]
            return {name: at for name, (version, at) in self._heard.items() if listed[name] == version}

    def _deleted(self, named: NamedLease) -> None:
        if named.name != self.own:
            self.on_gone()

    def run(self, stop: threading.Event) -> None:
        """Follow the member Leases until ``stop`` (resumed where it broke off; listed again after
        ``410 Gone``; after a failure, again after a pause, 1 s doubling to 30 s)."""
        version, pause, told = "", PAUSES[0], ""
        leases, selector = self.cluster.leases, f"{MEMBER_LABEL}=true"

        def reached(at: str) -> None:
            nonlocal version, told
            version, told = at, ""
            if self._set_watching(True):
                log.info("watching the member leases in %s: renewals count from its news", self.namespace)

        while not stop.is_set():
            try:
                version = follow_once(
                    f"watch of the member leases in {self.namespace}",
                    lambda: leases.list_leases_at(self.namespace, selector),
                    lambda since: leases.watch_leases(self.namespace, selector, since, WATCH_SECONDS),
                    version,
                    self.heard,
                    deleted=self._deleted,
                    reached=reached,
                )
                pause = PAUSES[0]
            except GitdeployError as problem:
                self._set_watching(False)
                if problem.message != told:
                    told = problem.message
                    log.warning(
                        "watch of the member leases in %s: %s; renewals count from the lists "
                        "(every retry period) meanwhile",
                        self.namespace,
                        problem,
                    )
                stop.wait(pause)
                pause = min(pause * 2, PAUSES[1])

    def _set_watching(self, watching: bool) -> bool:
        """Set the watch's health; True when it changed."""
        with self._lock:
            changed, self._watching = self._watching != watching, watching
        return changed


__all__ = ["MemberWatch"]
