"""Pure helpers of the source layer: backoff, gpg status, log parsing, manifest selection, cache."""

from __future__ import annotations

import pytest

from gitdeploy.core.blobcache import BlobCache
from gitdeploy.core.commits import ChangeType, FileChange, FileEntry, PollResult
from gitdeploy.errors import PermanentError, TransientError
from gitdeploy.source.gitcmd import GitFailure, compute_backoff, translate_remote_failure
from gitdeploy.source.history import parse_log_output
from gitdeploy.source.signatures import interpret_gpg_status
from gitdeploy.source.trees import RawChange, is_manifest_path, select_manifest_changes

SHA = "c" * 40
FPR = "A" * 40


@pytest.mark.parametrize(
    ("failures", "delay"), [(0, 0.0), (1, 5.0), (2, 10.0), (6, 160.0), (7, 300.0), (99, 300.0)]
)
def test_compute_backoff(failures: int, delay: float) -> None:
    assert compute_backoff(failures) == delay


@pytest.mark.parametrize(
    ("stderr", "kind"),
    [
        ("fatal: Authentication failed for 'https://h/x'", PermanentError),
        ("fatal: repository 'https://h/x/' not found\nremote: Repository not found.", PermanentError),
        ("fatal: unable to access 'https://h/x/': Could not resolve host: h", TransientError),
        ("fatal: the remote end hung up unexpectedly", TransientError),
    ],
)
def test_translate_remote_failure(stderr: str, kind: type[Exception]) -> None:
    error = translate_remote_failure(
        GitFailure("fetch", 128, stderr), action="fetch", display_url="U", failures=2
    )
    assert type(error) is kind
    assert error.message.startswith("cannot fetch U: ")
    if isinstance(error, TransientError):
        assert error.retry_after == 10.0


def status_lines(*tokens: str) -> str:
    return "".join(f"[GNUPG:] {t}\n" for t in tokens)


@pytest.mark.parametrize(
    ("status", "text", "verified", "reason"),
    [
        (0, status_lines("NEWSIG", "GOODSIG 1234 Ada", f"VALIDSIG B {'x ' * 8}{FPR}"), True, "trusted key"),
        (
            0,
            status_lines("GOODSIG 1234 Ada", f"VALIDSIG {'B' * 40} {'x ' * 8}{'D' * 40}"),
            False,
            "not trusted",
        ),
        (1, "", False, "is not signed"),
        (1, status_lines("BADSIG 1234 Ada"), False, "bad signature"),
        (1, status_lines("EXPKEYSIG 1234 Ada", f"VALIDSIG B {'x ' * 8}{FPR}"), False, "expired key"),
        (1, status_lines("REVKEYSIG 1234 Ada"), False, "revoked"),
        (
            1,
            status_lines("ERRSIG 1234 1 8 00 0 9", "NO_PUBKEY 1234"),
            False,
            "key 1234, which is not trusted",
        ),
    ],
)
def test_interpret_gpg_status(status: int, text: str, verified: bool, reason: str) -> None:
    check = interpret_gpg_status(SHA, status, text, frozenset({FPR}))
    assert check.verified is verified
    assert reason in check.reason


def test_parse_log_output() -> None:
    out = (
        f"\x1e{SHA}\x00Ada\x00ada@x\x0017\x00Cy\x00cy@x\x0018\x00Subject line\x00Subject line\n\nBody\n\n"
        f"\x1e{'d' * 40}\x00B\x00b@x\x001\x00B\x00b@x\x002\x00Two\x00Two\n"
    ).encode()
    first, second = parse_log_output(out)
    assert (first.sha, first.authored_at, first.committed_at, first.subject) == (
        SHA,
        17.0,
        18.0,
        "Subject line",
    )
    assert first.message == "Subject line\n\nBody"
    assert second.message == "Two"


def test_is_manifest_path() -> None:
    assert is_manifest_path("a/b.YAML", "", (".yaml",))
    assert not is_manifest_path("deployx/b.yaml", "deploy", (".yaml",))
    assert not is_manifest_path(".hidden.yaml", "", (".yaml",))
    assert not is_manifest_path("a/b.txt", "", (".yaml",))


def test_select_manifest_changes_follows_symlinks_and_ignores_other_files() -> None:
    raw = [
        RawChange("base/web.yaml", "100644", "100644", "1" * 40, "2" * 40),
        RawChange("README.md", "100644", "100644", "3" * 40, "4" * 40),
        RawChange("new.yaml", "000000", "100644", None, "5" * 40),
    ]
    new = {
        "base/web.yaml": FileEntry("base/web.yaml", "2" * 40, 10),
        "prod/web.yaml": FileEntry("prod/web.yaml", "2" * 40, 10, link_target="base/web.yaml"),
        "new.yaml": FileEntry("new.yaml", "5" * 40, 10),
    }
    changes = select_manifest_changes(
        raw, root="", suffixes=(".yaml",), new_manifests=new, old_manifests=None
    )
    assert changes == [
        FileChange("base/web.yaml", ChangeType.MODIFIED, "1" * 40, "2" * 40),
        FileChange("new.yaml", ChangeType.ADDED, None, "5" * 40),
        FileChange("prod/web.yaml", ChangeType.MODIFIED, "1" * 40, "2" * 40),
    ]


def test_poll_result_changed() -> None:
    assert PollResult("refs/heads/main", SHA, None).changed
    assert not PollResult("refs/heads/main", SHA, SHA).changed


def test_blob_cache_is_bounded_and_keys_by_path_when_asked() -> None:
    calls: list[str] = []
    cache: BlobCache[str] = BlobCache(max_entries=2)

    def compute(value: str) -> str:
        calls.append(value)
        return value

    assert cache.get_or_compute("a", lambda: compute("A")) == "A"
    assert cache.get_or_compute("a", lambda: compute("never")) == "A"
    assert cache.get_or_compute("a", lambda: compute("A@p"), path="p") == "A@p"
    cache.get_or_compute("b", lambda: compute("B"))  # evicts the least recently used ("a", None)
    assert "a" not in cache and len(cache) == 2
    assert calls == ["A", "A@p", "B"]
    assert (cache.hits, cache.misses) == (1, 3)
    cache.discard_entry("b")
    assert "b" not in cache
    cache.clear_entries()
    assert len(cache) == 0 and cache.hits == 0


def test_blob_cache_does_not_cache_failures() -> None:
    cache: BlobCache[int] = BlobCache()

    def boom() -> int:
        raise ValueError("bad yaml")

    with pytest.raises(ValueError):
        cache.get_or_compute("a", boom)
    assert cache.get_or_compute("a", lambda: 1) == 1
