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
from gitdeploy.controller.leader import lease_problem
from gitdeploy.controller.listwatch import WatchHealth, follow_once, keep_watching
from gitdeploy.core.sharding import MEMBER_LABEL

log = logging.getLogger("gitdeploy.sharding")

WATCH_SECONDS = 300
"""The server ends each watch after this long; it is resumed from where it was."""


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
        self.health = WatchHealth(
            lambda: f"the member leases in {namespace}",
            "renewals count from its news",
            "renewals count from the lists (every retry period)",
            log,
            explain=lambda problem: lease_problem(problem, namespace),
        )

    @property
    def watching(self) -> bool:
        """Whether the watch is running (renewals count from its news)."""
        return self.health.watching

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
        """Follow the member Leases until ``stop`` (:func:`~gitdeploy.controller.listwatch.keep_watching`)."""
        leases, selector = self.cluster.leases, f"{MEMBER_LABEL}=true"
        keep_watching(
            stop,
            lambda version, reached: follow_once(
                f"watch of the member leases in {self.namespace}",
                lambda: leases.list_leases_at(self.namespace, selector),
                lambda since: leases.watch_leases(self.namespace, selector, since, WATCH_SECONDS),
                version,
                self.heard,
                deleted=self._deleted,
                reached=reached,
            ),
            self.health,
        )


__all__ = ["MemberWatch"]
