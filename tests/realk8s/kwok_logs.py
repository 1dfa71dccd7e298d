"""Pod logs on the test control plane, served the way a real cluster serves them.

``kubectl logs`` (and gitdeploy's read of a hook pod's log) asks kube-apiserver, which connects to
the kubelet endpoint of the pod's node (``status.daemonEndpoints.kubeletEndpoint.Port`` at the node's
``InternalIP``) and asks it for ``/containerLogs/NS/POD/CONTAINER``. kwok plays that kubelet with its
own server (``--server-address``, ``--node-port``) and answers from a ``ClusterLogs`` resource
(kwok.x-k8s.io/v1alpha1): a file per container name, or one for every container. kwok reads the
file as a container runtime writes it (the CRI log format: ``TIME STREAM TAG TEXT`` per line), so
``--pod-log [CONTAINER=]FILE`` takes plain text and writes it in that format for kwok.
"""

from __future__ import annotations

from pathlib import Path

_CRI_TIME = "2026-01-01T00:00:00.000000000Z"
"""One fixed time for every line: the logs are test data, and ``--since`` is not used."""


def cri_log(text: str) -> str:
    """``text`` as a container runtime's log file: each line ``TIME stdout F LINE``.

    >>> cri_log("a\\nb\\n")
    '2026-01-01T00:00:00.000000000Z stdout F a\\n2026-01-01T00:00:00.000000000Z stdout F b\\n'
    """
    lines = text.split("\n")  # on newlines only, as a runtime does: a carriage return stays in its line
    if lines[-1] == "":
        lines.pop()
    return "".join(f"{_CRI_TIME} stdout F {line}\n" for line in lines)


def parse_pod_log(option: str) -> tuple[str, Path]:
    """``--pod-log [CONTAINER=]FILE`` → (container, file); '' is every container.

    >>> parse_pod_log("hook=/tmp/x.log")
    ('hook', PosixPath('/tmp/x.log'))
    >>> parse_pod_log("/tmp/x.log")
    ('', PosixPath('/tmp/x.log'))
    """
    container, sep, file = option.partition("=")
    if not sep or "/" in container:
        return "", Path(option)
    return container, Path(file)


def cluster_logs(options: list[str], run_dir: Path) -> dict[str, object]:
    """One ``ClusterLogs`` for every pod: each ``--pod-log`` file, converted into run_dir/pod-logs/."""
    out = run_dir / "pod-logs"
    out.mkdir(exist_ok=True)
    logs: list[dict[str, object]] = []
    for index, option in enumerate(options):
        container, source = parse_pod_log(option)
        if not source.is_file():
            raise SystemExit(f"realk8s: --pod-log {option}: no such file {source}")
        served = out / f"{index}-{container or 'all'}.log"
        served.write_bytes(cri_log(source.read_bytes().decode("utf-8", "replace")).encode())  # \r stays
        logs.append({"logsFile": str(served), **({"containers": [container]} if container else {})})
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterLogs",
        "metadata": {"name": "realk8s-pod-logs"},
        "spec": {"logs": logs},
    }


CHATTY_CONTAINER = "lifecycle"
"""Every container of this name logs :func:`chatty_log` on the tier's control plane: it is the
container of every hook pod gitdeploy starts (OpenShift's name for it)."""


def chatty_log(coloured: bool = True) -> str:
    """A hook's log as a build tool prints it: over 200 KiB, multi-byte UTF-8 on every line,
    ANSI colours, a progress bar redrawn with carriage returns and erase-line codes, then many
    short lines. ``coloured=False`` is the same text as a person reads it (no codes, no returns)."""

    def paint(code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if coloured else text

    steps = "".join(
        paint(f"1;3{i % 7 + 1}", f"[{i:04d}] Überprüfung läuft — 進捗 {i % 100:>2}% ✓") + "\n"
        for i in range(3000)
    )
    bar = "".join(
        ("\r\x1b[2K" if coloured else "") + paint("36", f"進捗 {k % 101:>3}% ▓▓▓▓") for k in range(1200)
    )
    done = "".join(paint("32", f"✓ Schritt {j:03d} fertig — 完了") + "\n" for j in range(150))
    return steps + bar + "\n" + done
