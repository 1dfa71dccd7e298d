"""Outgoing notifications: a JSON POST to a generic webhook when a rollout starts, ends or rolls back.

:class:`Notifier` is a rollout observer (:attr:`RolloutRunner.observers`): calling it only puts the
message on a bounded queue, so reconciling never waits for the receiver. One background thread
delivers the messages in order, retrying a failed delivery a few times with a doubling backoff; when
the queue is full (the receiver is down or slow for long), new messages are dropped with a warning.

Each message is one JSON object::

    {"event": "completed",                      # started, rolled_back, completed, failed, cancelled
     "app": {"namespace": "shop", "name": "web"},
     "revision": {...},                         # the revision record, as `gitdeploy history -o json`
     "durationSeconds": 42.0}                   # ended rollouts whose start is known, else null

with the headers ``X-Gitdeploy-Event``, ``X-Gitdeploy-Delivery`` (a unique id, the same on every
retry: receivers can drop duplicates) and, when a secret is set, ``X-Gitdeploy-Signature-256:
sha256=<hex HMAC-SHA256 of the body>``, computed as GitHub computes ``X-Hub-Signature-256``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import queue
import threading
import urllib.parse
import uuid
from dataclasses import dataclass

import httpx

from gitdeploy import __version__
from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.rollout.transitions import RolloutTransition
from gitdeploy.errors import PermanentError

log = logging.getLogger("gitdeploy.notify")

SIGNATURE_HEADER = "X-Gitdeploy-Signature-256"


def signature(body: bytes, secret: bytes) -> str:
    """``sha256=<hex>``: the HMAC-SHA256 of ``body`` with ``secret``."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def message_of(transition: RolloutTransition) -> bytes:
    """The JSON body announcing ``transition``."""
    # The record's own serialisation, so that the revision reads exactly as `history -o json`.
    record = json.loads(AppRecord(revisions=(transition.entry,)).to_json())
    body = {
        "event": transition.event.value,
        "app": {"namespace": transition.app.namespace, "name": transition.app.name},
        "revision": record["revisions"][0],
        "durationSeconds": transition.seconds,
    }
    return json.dumps(body, sort_keys=True).encode()


def check_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PermanentError(
            f"--notify-url {url!r} is not an http(s) URL",
            hint="write e.g. https://hooks.example.com/gitdeploy",
        )
    return url


@dataclass(frozen=True)
class _Delivery:
    event: str
    delivery_id: str
    body: bytes


class Notifier:
    """Posts rollout transitions to ``url`` from a background thread (see the module docstring).

    ``retries`` more attempts follow a failed one (a transport error, 429 or 5xx), after
    ``backoff``, 2×``backoff``, 4×``backoff``... seconds; other answers are final. Use it as a
    context manager, or call :meth:`start` and :meth:`close`.
    """

    def __init__(
        self,
        url: str,
        secret: bytes | None = None,
        *,
        queue_size: int = 1000,
        retries: int = 3,
        backoff: float = 1.0,
        timeout: float = 5.0,
    ) -> None:
        self.url = check_url(url)
        parts = urllib.parse.urlsplit(url)
        self.shown_url = f"{parts.scheme}://{parts.hostname}"
        """For log lines: webhook URLs often carry a secret token in their path or query."""
        self.secret = secret
        self.retries = retries
        self.backoff = backoff
        self.dropped = 0
        self.delivered = 0
        self._queue: queue.Queue[_Delivery | None] = queue.Queue(maxsize=queue_size)
        self._stopping = threading.Event()
        self._abandoned = threading.Event()
        """Set when :meth:`close` stopped waiting: the thread drops what is still queued."""
        self._client = httpx.Client(
            timeout=timeout, headers={"User-Agent": f"gitdeploy/{__version__}"}, follow_redirects=False
        )
        # Not a daemon: a daemon thread still logging while the interpreter shuts down aborts the
        # process (SIGABRT). close() bounds the wait: after it, only the delivery in flight ends.
        self._thread = threading.Thread(target=self._deliver_all, name="notify")

    def __call__(self, transition: RolloutTransition) -> None:
        """Queue a message for ``transition``; never blocks."""
        delivery = _Delivery(transition.event.value, uuid.uuid4().hex, message_of(transition))
        try:
            self._queue.put_nowait(delivery)
        except queue.Full:
            self.dropped += 1
            log.warning(
                "[%s] notification %s of revision %d dropped: %d waiting for %s (%d dropped so far)",
                transition.app,
                delivery.event,
                transition.entry.revision,
                self._queue.maxsize,
                self.shown_url,
                self.dropped,
            )

    def start(self) -> None:
        self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what is queued for up to ``timeout`` seconds (no more retries), then stop: what
        is still queued then is dropped with one warning, and only the delivery in flight (at most
        its HTTP timeout) is waited for when the process exits."""
        self._stopping.set()
        if self._thread.is_alive():
            with contextlib.suppress(queue.Full):
                self._queue.put(None, timeout=timeout)
            self._thread.join(timeout)
        if self._thread.is_alive():
            # The queue holds a None, or is full: either way the thread's next get() returns.
            self._abandoned.set()
            log.warning(
                "stopping: %s is not answering; the notifications still queued are dropped",
                self.shown_url,
            )
        else:
            self._client.close()

    def __enter__(self) -> Notifier:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _deliver_all(self) -> None:
        while (delivery := self._queue.get()) is not None:
            if self._abandoned.is_set():
                self.dropped += 1
                with contextlib.suppress(queue.Empty):
                    while self._queue.get_nowait() is not None:
                        self.dropped += 1
                return
            self._deliver(delivery)

    def _deliver(self, delivery: _Delivery) -> None:
        headers = {
            "Content-Type": "application/json",
            "X-Gitdeploy-Event": delivery.event,
            "X-Gitdeploy-Delivery": delivery.delivery_id,
        }
        if self.secret is not None:
            headers[SIGNATURE_HEADER] = signature(delivery.body, self.secret)
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt and self._stopping.wait(self.backoff * 2 ** (attempt - 1)):
                break
            try:
                answer = self._client.post(self.url, content=delivery.body, headers=headers)
            except httpx.HTTPError as error:
                problem = f"{type(error).__name__}: {error}"
                continue
            if answer.status_code < 300:
                self.delivered += 1
                return
            problem = f"answered {answer.status_code}"
            if answer.status_code != 429 and answer.status_code < 500:
                break
        log.warning(
            "notification %s (%s) to %s not delivered: %s",
            delivery.event,
            delivery.delivery_id,
            self.shown_url,
            problem,
        )
