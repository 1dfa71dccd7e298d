"""The notifier against a real local HTTP receiver: signature, retries, a full queue, bad URLs."""

from __future__ import annotations

import json
import logging

import pytest

from gitdeploy.controller.notify import Notifier, message_of, signature
from gitdeploy.core.history.records import CommitRef, Outcome, RevisionEntry
from gitdeploy.core.models import AppKey
from gitdeploy.core.rollout.transitions import RolloutEvent, RolloutTransition
from gitdeploy.errors import PermanentError
from tests.integration.server.notify_receiver import Receiver


def transition(revision: int, event: RolloutEvent = RolloutEvent.COMPLETED) -> RolloutTransition:
    entry = RevisionEntry(
        revision,
        "bcdfghjklm",
        "web-bcdfghjklm",
        CommitRef("c" * 40, "Ada", "Bump web"),
        images=(("main", "nginx:1.26"),),
        started_at=1_700_000_000.0,
        finished_at=1_700_000_042.0,
        outcome=Outcome.COMPLETE,
    )
    return RolloutTransition(AppKey("shop", "web"), event, entry, 42.0)


def test_the_message_is_the_event_the_app_and_the_revision_record() -> None:
    body = json.loads(message_of(transition(7)))
    assert body["event"] == "completed"
    assert body["app"] == {"namespace": "shop", "name": "web"}
    assert body["durationSeconds"] == 42.0
    revision = body["revision"]
    assert (revision["revision"], revision["outcome"], revision["replicaSet"]) == (
        7,
        "Complete",
        "web-bcdfghjklm",
    )
    assert revision["commit"] == {"sha": "c" * 40, "author": "Ada", "subject": "Bump web"}
    assert revision["images"] == [{"container": "main", "image": "nginx:1.26"}]


def test_signature_is_github_style_hmac_sha256() -> None:
    # The example of GitHub's webhook documentation ("Hello, World!" with "It's a Secret to Everybody").
    assert signature(b"Hello, World!", b"It's a Secret to Everybody") == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )


def test_a_failed_delivery_is_retried_with_the_same_delivery_id() -> None:
    with Receiver() as receiver:
        receiver.answers = [503, 500]
        with Notifier(receiver.url, b"s3cret", backoff=0.01) as notifier:
            notifier(transition(1))
            [got] = receiver.wait_for(1)
        assert got.signed_with(b"s3cret")
        assert got.message["revision"]["revision"] == 1
        assert notifier.delivered == 1


def test_a_client_error_is_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    with Receiver() as receiver, caplog.at_level(logging.WARNING, logger="gitdeploy.notify"):
        receiver.answers = [404]
        with Notifier(receiver.url, backoff=0.01) as notifier:
            notifier(transition(1))
            notifier(transition(2))
            [got] = receiver.wait_for(1)
        assert got.message["revision"]["revision"] == 2  # the first was answered 404 and given up
        assert "signature-256" not in " ".join(got.headers)  # no secret, no signature
    assert "not delivered: answered 404" in caplog.text
    assert "/hooks/deploys" not in caplog.text  # a webhook URL's path may hold its secret token


def test_when_the_queue_is_full_new_messages_are_dropped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with Receiver() as receiver, caplog.at_level(logging.WARNING, logger="gitdeploy.notify"):
        receiver.hold.clear()  # the receiver hangs on the first delivery
        with Notifier(receiver.url, queue_size=1) as notifier:
            notifier(transition(1))
            assert receiver.arrived.wait(10)  # taken off the queue, stuck in delivery
            notifier(transition(2))  # waits in the queue
            notifier(transition(3))  # no room: dropped, and the caller is not held up
            assert notifier.dropped == 1
            receiver.hold.set()
            delivered = receiver.wait_for(2)
    assert [m.message["revision"]["revision"] for m in delivered] == [1, 2]
    assert "[shop/web] notification completed of revision 3 dropped" in caplog.text


@pytest.mark.parametrize("url", ["ftp://example.com/x", "example.com/hook", "https://", "file:///tmp/x"])
def test_a_notify_url_must_be_http(url: str) -> None:
    with pytest.raises(PermanentError, match="not an http"):
        Notifier(url)


def test_close_gives_up_on_a_receiver_that_hangs_and_drops_what_is_still_queued(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a receiver that hangs, one delivery stuck in flight and two more queued
    with Receiver() as receiver, caplog.at_level(logging.WARNING, logger="gitdeploy.notify"):
        receiver.hold.clear()
        notifier = Notifier(receiver.url, timeout=2.0)
        notifier.start()
        for revision in (1, 2, 3):
            notifier(transition(revision))
        assert receiver.arrived.wait(10)

        # When gitdeploy stops and the receiver does not answer in time
        notifier.close(timeout=0.2)
        receiver.hold.set()

        # Then the delivery in flight ends, the queued ones are dropped, and the thread ends
        notifier._thread.join(10)
        assert not notifier._thread.is_alive()
        assert notifier.dropped == 2
        assert len(receiver.received) <= 1
    assert "not answering; the notifications still queued are dropped" in caplog.text
