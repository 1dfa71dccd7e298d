"""The embedded cluster as a background process of a state directory.

Files in the state directory:

* ``cluster.db`` — the SQLite state (kept by ``down``);
* ``kubeconfig`` and ``token`` — mode 0600;
* ``simulation.json`` — the simulation knobs the daemon runs with;
* ``cluster.pid`` — JSON ``{"pid", "url"}`` while the daemon runs;
* ``cluster.log`` — the daemon's stderr;
* ``cluster.lock`` — taken while starting or stopping, so concurrent ``ensure_running`` calls
  start one daemon only.

Use :func:`ensure_running` from any command that needs a cluster; :func:`stop` and
:func:`status` back ``gitdeploy cluster down`` and ``gitdeploy cluster status``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitdeploy.errors import TransientError
from gitdeploy.localcluster.config import SimulationConfig
from gitdeploy.localcluster.kubeconfig import load_or_create_token, write_private

__all__ = ["ClusterInfo", "ensure_running", "run_daemon", "ssl_context", "status", "stop"]


@dataclass(frozen=True)
class ClusterInfo:
    """A running embedded cluster."""

    state_dir: Path
    url: str
    pid: int
    kubeconfig: Path
    config: SimulationConfig
    started: bool = False
    """True when this call started it (False: it was already running)."""


def _pid_file(state_dir: Path) -> Path:
    return state_dir / "cluster.pid"


def _config_file(state_dir: Path) -> Path:
    return state_dir / "simulation.json"


@contextlib.contextmanager
def _locked(state_dir: Path) -> Iterator[None]:
    state_dir.mkdir(parents=True, exist_ok=True)
    with open(state_dir / "cluster.lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _alive(pid: int) -> bool:
    """The process exists, is not a zombie, and (on Linux) is an embedded cluster daemon."""
    if pid <= 0:
        return False
    with contextlib.suppress(ChildProcessError, OSError):
        reaped, _ = os.waitpid(pid, os.WNOHANG)
        if reaped == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    proc = Path(f"/proc/{pid}")
    if proc.exists():
        try:
            if proc.joinpath("stat").read_text().split(") ", 1)[1].startswith("Z"):
                return False
            return b"gitdeploy.localcluster" in proc.joinpath("cmdline").read_bytes()
        except OSError:
            return False
    return True


def _read_pid_file(state_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(_pid_file(state_dir).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def ssl_context(state_dir: Path) -> ssl.SSLContext | None:
    """A client context trusting the daemon's certificate (None if it has none yet)."""
    cert = state_dir / "tls.crt"
    return ssl.create_default_context(cafile=str(cert)) if cert.exists() else None


def _healthy(url: str, token: str, state_dir: Path, timeout: float = 2.0) -> bool:
    request = urllib.request.Request(f"{url}/version", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=ssl_context(state_dir)) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _running(state_dir: Path) -> ClusterInfo | None:
    data = _read_pid_file(state_dir)
    if data is None or not _alive(int(data.get("pid", 0))):
        return None
    url = str(data.get("url", ""))
    if not _healthy(url, load_or_create_token(state_dir), state_dir):
        return None
    config = SimulationConfig.load(_config_file(state_dir)) or SimulationConfig()
    return ClusterInfo(state_dir, url, int(data["pid"]), state_dir / "kubeconfig", config)


def status(state_dir: Path) -> ClusterInfo | None:
    """The running cluster of ``state_dir``, or None."""
    return _running(Path(state_dir))


def ensure_running(
    state_dir: Path,
    config: SimulationConfig | None = None,
    *,
    timeout: float = 30.0,
) -> ClusterInfo:
    """Start the embedded cluster of ``state_dir`` in the background unless it already runs.

    ``config`` is saved for the daemon when it is started here; a running daemon keeps its own
    knobs (compare ``ClusterInfo.config``). Returns where it listens and its kubeconfig.
    """
    state_dir = Path(state_dir).absolute()
    with _locked(state_dir):
        running = _running(state_dir)
        if running is not None:
            return running
        if config is not None:
            config.save(_config_file(state_dir))
        elif not _config_file(state_dir).exists():
            SimulationConfig().save(_config_file(state_dir))
        log = open(state_dir / "cluster.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            child = subprocess.Popen(
                [sys.executable, "-m", "gitdeploy.localcluster", "serve", "--state-dir", str(state_dir)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                close_fds=True,
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if child.poll() is not None:
                raise TransientError(
                    f"the embedded cluster exited at start (code {child.returncode})",
                    hint=f"see {state_dir / 'cluster.log'}",
                )
            data = _read_pid_file(state_dir)
            if data is not None and data.get("pid") == child.pid:
                info = _running(state_dir)
                if info is not None:
                    return ClusterInfo(
                        info.state_dir, info.url, info.pid, info.kubeconfig, info.config, started=True
                    )
            time.sleep(0.05)
        with contextlib.suppress(OSError):
            child.terminate()
        raise TransientError(
            f"the embedded cluster did not start within {timeout:g} s",
            hint=f"see {state_dir / 'cluster.log'}",
        )


def stop(state_dir: Path, *, timeout: float = 15.0) -> bool:
    """Stop the daemon of ``state_dir`` (keeping its state); False when it was not running."""
    state_dir = Path(state_dir).absolute()
    with _locked(state_dir):
        data = _read_pid_file(state_dir)
        pid = int(data.get("pid", 0)) if data else 0
        if not _alive(pid):
            with contextlib.suppress(FileNotFoundError):
                _pid_file(state_dir).unlink()
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.05)
        with contextlib.suppress(FileNotFoundError):
            _pid_file(state_dir).unlink()
        return True


def _previous_port(state_dir: Path) -> int:
    try:
        data = json.loads((state_dir / "cluster.last").read_text(encoding="utf-8"))
        return int(data.get("port", 0))
    except (FileNotFoundError, ValueError, TypeError, AttributeError):
        return 0


def run_daemon(state_dir: Path, config: SimulationConfig | None = None) -> None:
    """Serve the cluster of ``state_dir`` until SIGTERM or SIGINT.

    This is what ``python -m gitdeploy.localcluster serve --state-dir D`` runs. The cluster's own
    kubelet thread makes pods start and become ready when due, with no request arriving.
    """
    from gitdeploy.localcluster.server import LocalCluster  # the server's imports only where it runs

    state_dir = Path(state_dir).absolute()
    config = config or SimulationConfig.load(_config_file(state_dir)) or SimulationConfig()
    config.save(_config_file(state_dir))
    cluster = LocalCluster(state_dir, config=config, port=_previous_port(state_dir), tls=True).start()
    stopping = threading.Event()

    def _on_signal(signum: int, _frame: object) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    write_private(state_dir / "cluster.last", json.dumps({"port": cluster.port}) + "\n")
    write_private(_pid_file(state_dir), json.dumps({"pid": os.getpid(), "url": cluster.url}) + "\n")
    print(f"localcluster: serving {state_dir} at {cluster.url}", file=sys.stderr, flush=True)
    try:
        while not stopping.wait(1.0):  # a timeout, so that the signal handler surely gets to run
            pass
    finally:
        cluster.stop()
        data = _read_pid_file(state_dir)
        if data is not None and data.get("pid") == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                _pid_file(state_dir).unlink()
        print("localcluster: stopped", file=sys.stderr, flush=True)
