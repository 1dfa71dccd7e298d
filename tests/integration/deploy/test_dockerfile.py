"""The Dockerfile builds a slim, non-root image whose user matches the Deployment's runAsUser.

No Docker daemon is assumed: these tests read the Dockerfile's instructions (continuation lines
joined, comments dropped) and check what the image will be."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs in order."""
    found: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, rest = full.partition(" ")
        found.append((keyword.upper(), rest.strip()))
    return found


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from:]


def deployment_run_as_user() -> int:
    with (ROOT / "deploy" / "deployment.yaml").open(encoding="utf-8") as handle:
        deployment = next(d for d in yaml.safe_load_all(handle) if d and d["kind"] == "Deployment")
    user: int = deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    return user


def test_final_image_runs_as_a_numeric_non_root_user() -> None:
    users = [args for keyword, args in final_stage() if keyword == "USER"]

    assert users, "the final stage sets no USER: the image would run as root"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit(), "a numeric UID lets Kubernetes verify runAsNonRoot"
    assert int(uid) != 0 and uid != "root"
    assert not gid or (gid.isdigit() and int(gid) != 0)
    assert int(uid) == deployment_run_as_user()


def test_no_instruction_after_user_switches_back_to_root() -> None:
    stage = final_stage()
    last_user = max(i for i, (keyword, _) in enumerate(stage) if keyword == "USER")

    assert all(keyword != "RUN" for keyword, _ in stage[last_user + 1 :])


def test_final_image_is_slim_python_with_gitdeploy_as_entrypoint() -> None:
    stage = final_stage()
    base = stage[0][1]

    assert base.startswith("python:") and "slim" in base
    entrypoints = [args for keyword, args in stage if keyword == "ENTRYPOINT"]
    assert [json.loads(e) for e in entrypoints][-1] == ["gitdeploy"]


def test_package_is_installed_and_git_is_present() -> None:
    runs = " ".join(args for keyword, args in instructions() if keyword == "RUN")

    assert "pip install ." in runs
    assert "install -y --no-install-recommends git" in runs


def ignored(path: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(path, p.removeprefix("**/")) or path.startswith(p + "/") for p in patterns)


def test_dockerignore_keeps_the_build_inputs_and_drops_the_rest() -> None:
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copied = [
        args.split()[0] for keyword, args in instructions() if keyword == "COPY" and "--from" not in args
    ]

    for source in copied:
        assert not ignored(source, patterns), f"{source} is copied but .dockerignore drops it"
    for path in (".git", ".venv", "tests"):
        assert ignored(path, patterns), f"{path} would be sent to the Docker daemon"
