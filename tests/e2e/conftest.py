"""Fixtures shared by the end-to-end tests (tests/e2e)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config


@pytest.fixture
def read_record(tmp_path: Path) -> Callable[[], dict[str, Any]]:
    """The app record of shop/web, read with the official client from the embedded cluster."""

    def read() -> dict[str, Any]:
        api = config.new_client_from_config(str(tmp_path / "state" / "kubeconfig"))  # type: ignore[no-untyped-call]
        try:
            found: Any = client.CoreV1Api(api).read_namespaced_config_map("gitdeploy.web", "shop")
        finally:
            api.close()
        body: dict[str, Any] = json.loads(found.data["record.json"])
        return body

    return read
