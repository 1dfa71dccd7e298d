"""Which cluster a command acts on: a real one only when told to, else the embedded one."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitdeploy.cli.context import CliContext
from gitdeploy.cli.target import open_cluster, resolve_target
from gitdeploy.errors import PermanentError
from gitdeploy.localcluster import stop


def _context(tmp_path: Path, kubeconfig: str | None = None, kube_context: str | None = None) -> CliContext:
    return CliContext(tmp_path / "state", kubeconfig, kube_context, debug=False, color=False)


def test_a_kubeconfig_wins_and_nothing_is_started(tmp_path: Path) -> None:
    target = resolve_target(_context(tmp_path, "/etc/kube.conf", "prod"))
    assert (target.kubeconfig, target.context, target.embedded) == ("/etc/kube.conf", "prod", False)
    assert "kubeconfig /etc/kube.conf (context prod)" in target.description
    assert not (tmp_path / "state" / "cluster.pid").exists()


def test_without_flags_the_embedded_cluster_is_started_and_used(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    try:
        cluster = open_cluster(ctx)
        assert "embedded cluster at https://127.0.0.1:" in cluster.description
        assert cluster.list_replica_sets() == []
    finally:
        stop(ctx.state_dir)


def test_a_missing_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PermanentError, match="cannot use kubeconfig"):
        open_cluster(_context(tmp_path, str(tmp_path / "nope.yaml")))
