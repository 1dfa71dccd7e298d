"""RegistryClient against a real distribution registry (``docker-registry``) on 127.0.0.1.

Given a registry started by the ``start_registry`` fixture and images pushed over its HTTP API,
the client resolves tags to the exact manifest digests the registry computed.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import httpx
import pytest

from gitdeploy.core.models import AppKey, ImageStream, ImageStreamTag, Location
from gitdeploy.errors import PermanentError, TransientError
from gitdeploy.images.registry import MANIFEST_MEDIA_TYPES, ImageNotFoundError, RegistryClient
from gitdeploy.images.streams import resolve_stream_tags
from tests.fixtures.registry import RunningRegistry, StartRegistry, sha256_digest

PASSWORD = "correct-horse-battery-staple"
WRONG_PASSWORD = "Tr0ub4dor&3-wrong"


def write_docker_config(path: Path, host: str, user: str, password: str) -> Path:
    """A Docker config file with one ``auths`` entry in the ``auth`` (base64 user:pass) form."""
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    path.write_text(json.dumps({"auths": {host: {"auth": auth}}}))
    return path


def test_resolves_a_pushed_tag_to_its_exact_digest(registry: RunningRegistry) -> None:
    # Given an image pushed as team/app:1.0
    pushed = registry.push_image("team/app", "1.0", marker="first")

    # When the client resolves the tag, Then it gets the digest the registry stored
    with RegistryClient(credentials={}) as client:
        assert client.resolve_digest(f"{registry.host}/team/app:1.0") == pushed


def test_moving_a_tag_gives_a_new_digest(registry: RunningRegistry) -> None:
    with RegistryClient(credentials={}) as client:
        # Given latest resolved once
        first = registry.push_image("app", "latest", marker="build-1")
        assert client.resolve_digest(f"{registry.host}/app:latest") == first

        # When a new manifest is pushed to the same tag
        second = registry.push_image("app", "latest", marker="build-2")

        # Then the same tag resolves to the new digest, and the old one is still addressable
        assert second != first
        assert client.resolve_digest(f"{registry.host}/app:latest") == second
        assert client.resolve_digest(f"{registry.host}/app@{first}") == first


def test_registry_digest_matches_the_get_body(registry: RunningRegistry) -> None:
    """The digest from HEAD is the sha256 of the bytes GET returns (what the fallback computes)."""
    pushed = registry.push_image("team/app", "2", marker="x")
    response = httpx.get(
        f"{registry.url}/v2/team/app/manifests/2", headers={"Accept": ", ".join(MANIFEST_MEDIA_TYPES)}
    )
    assert response.status_code == 200
    assert sha256_digest(response.content) == pushed


def test_unknown_tag_and_repository_are_permanent(registry: RunningRegistry) -> None:
    registry.push_image("team/app", "1.0")
    with RegistryClient(credentials={}) as client:
        with pytest.raises(ImageNotFoundError) as caught:
            client.resolve_digest(f"{registry.host}/team/app:9.9")
        assert isinstance(caught.value, PermanentError)
        assert f"tag '9.9' not found in registry {registry.host}" in caught.value.message
        with pytest.raises(ImageNotFoundError):
            client.resolve_digest(f"{registry.host}/team/nothing:1.0")


def test_registry_down_is_transient(start_registry: StartRegistry) -> None:
    # Given a registry that answered once and then stopped
    registry = start_registry()
    pushed = registry.push_image("app", "1")
    with RegistryClient(credentials={}) as client:
        assert client.resolve_digest(f"{registry.host}/app:1") == pushed
        registry.stop()

        # When the client asks again, Then it is told to retry later
        with pytest.raises(TransientError) as caught:
            client.resolve_digest(f"{registry.host}/app:1")
    assert caught.value.retry_after > 0
    assert registry.host in caught.value.message


def test_basic_auth_with_credentials_from_a_docker_config(
    start_registry: StartRegistry, tmp_path: Path
) -> None:
    # Given a registry with htpasswd auth and an image in it
    registry = start_registry(users={"alice": PASSWORD})
    pushed = registry.push_image("private/app", "1", marker="secret-build")
    config = write_docker_config(tmp_path / "config.json", registry.host, "alice", PASSWORD)

    # When the client reads the credentials from the docker config file
    with RegistryClient(docker_config=config) as client:
        # Then it resolves the tag, and keeps resolving with the remembered basic scheme
        assert client.resolve_digest(f"{registry.host}/private/app:1") == pushed
        moved = registry.push_image("private/app", "1", marker="next-build")
        assert client.resolve_digest(f"{registry.host}/private/app:1") == moved


def test_wrong_password_is_permanent_with_a_hint_and_no_password(
    start_registry: StartRegistry, tmp_path: Path
) -> None:
    registry = start_registry(users={"alice": PASSWORD})
    registry.push_image("private/app", "1")
    config = write_docker_config(tmp_path / "config.json", registry.host, "alice", WRONG_PASSWORD)

    with RegistryClient(docker_config=config) as client, pytest.raises(PermanentError) as caught:
        client.resolve_digest(f"{registry.host}/private/app:1")

    error = caught.value
    assert not isinstance(error, TransientError)
    assert registry.host in error.message
    assert "credentials" in error.hint and str(config) in error.hint
    for text in (str(error), repr(error), error.message, error.hint):
        assert WRONG_PASSWORD not in text
        assert PASSWORD not in text
        assert base64.b64encode(f"alice:{WRONG_PASSWORD}".encode()).decode() not in text


def test_no_credentials_for_an_auth_registry_says_how_to_add_them(
    start_registry: StartRegistry, tmp_path: Path
) -> None:
    registry = start_registry(users={"alice": PASSWORD})
    config = tmp_path / "config.json"
    config.write_text('{"auths": {}}')

    with RegistryClient(docker_config=config) as client, pytest.raises(PermanentError) as caught:
        client.resolve_digest(f"{registry.host}/private/app:1")

    assert "requires authentication" in caught.value.message
    assert f"docker login {registry.host}" in caught.value.hint


def test_stream_tags_follow_the_registry(registry: RunningRegistry) -> None:
    """The bookkeeping with the real client as resolver: a moved tag is reported as a change."""
    stream = ImageStream(
        AppKey("shop", "app"),
        Location("streams/app.yaml", 1),
        (
            ImageStreamTag("latest", "DockerImage", f"{registry.host}/shop/app:latest", scheduled=True),
            ImageStreamTag("stable", "DockerImage", f"{registry.host}/shop/app:stable", scheduled=True),
        ),
    )
    first = registry.push_image("shop/app", "latest", marker="1")
    stable = registry.push_image("shop/app", "stable", marker="s")
    with RegistryClient(credentials={}) as client:
        initial = resolve_stream_tags(stream, [], client.resolve_digest, now=100.0)
        second = registry.push_image("shop/app", "latest", marker="2")
        later = resolve_stream_tags(stream, initial.histories, client.resolve_digest, now=200.0)

    assert initial.changed_tags == ("latest", "stable")
    assert later.changed_tags == ("latest",)
    history = later.history("latest")
    assert history is not None
    assert [e.digest for e in history.events] == [second, first]
    assert history.events[0].image == f"{registry.host}/shop/app@{second}"
    stable_history = later.history("stable")
    assert stable_history is not None and stable_history.latest is not None
    assert stable_history.latest.digest == stable
