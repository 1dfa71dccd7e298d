"""Commit signature verification against a fixed set of trusted OpenPGP keys.

With ``--verify-commits``, a commit is deployed only if ``git verify-commit`` finds a good
signature made by one of the trusted keys. The keys are imported into a GnuPG home of their own
under the state directory, which holds nothing else, and the signer's primary-key fingerprint
must also be one of the trusted ones: a key the user's own keyring trusts does not count.
Expired or revoked keys and bad signatures are refused.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gitdeploy.core.commits import SignatureCheck, shorten_sha
from gitdeploy.errors import PermanentError
from gitdeploy.source.gitcmd import GitRunner
from gitdeploy.source.mirror import Mirror

log = logging.getLogger("gitdeploy.source")


@dataclass(frozen=True)
class TrustedKeys:
    """A GnuPG home that holds exactly the trusted public keys, and their fingerprints."""

    gnupg_home: str
    fingerprints: frozenset[str]
    gpg_program: str = "gpg"

    @classmethod
    def from_key_files(
        cls,
        key_files: Sequence[str | os.PathLike[str]],
        *,
        state_dir: str | os.PathLike[str],
        gpg_program: str = "gpg",
    ) -> TrustedKeys:
        """Import armored or binary public key files into a fresh GnuPG home under ``state_dir``."""
        if not key_files:
            raise PermanentError(
                "--verify-commits needs at least one trusted key", hint="pass --trusted-key FILE"
            )
        if shutil.which(gpg_program) is None:
            raise PermanentError(
                f"commit verification needs {gpg_program!r}, which is not installed",
                hint="install GnuPG, or run without --verify-commits",
            )
        blobs = []
        for key_file in key_files:
            try:
                blobs.append(Path(key_file).read_bytes())
            except OSError as exc:
                raise PermanentError(f"cannot read trusted key {key_file}: {exc.strerror}") from None
        digest = hashlib.sha256(b"\0".join(sorted(blobs))).hexdigest()[:16]
        home = Path(state_dir) / "gnupg" / digest
        home.mkdir(parents=True, exist_ok=True)
        home.chmod(0o700)
        # Verification needs no agent; never start one (or a dirmngr that could fetch keys).
        # Keys go into a plain keyring file (``gpg --import`` would talk to an agent, whose
        # socket path can be too long under a deep state directory).
        (home / "gpg.conf").write_text("no-autostart\nno-auto-key-retrieve\n")
        packets = [
            _run_gpg_bytes(gpg_program, home, ["--dearmor"], stdin=blob)
            if b"-----BEGIN PGP" in blob
            else blob
            for blob in blobs
        ]
        keyring = home / "pubring.gpg"
        keyring.write_bytes(b"".join(packets))
        for stale in ("pubring.kbx", "trustdb.gpg"):
            (home / stale).unlink(missing_ok=True)
        listing = _run_gpg(gpg_program, home, ["--with-colons", "--fingerprint", "--list-keys"])
        fingerprints = frozenset(_parse_primary_fingerprints(listing))
        if not fingerprints:
            raise PermanentError(
                "the trusted key files hold no public key", hint="export keys with gpg --export --armor"
            )
        return cls(gnupg_home=str(home), fingerprints=fingerprints, gpg_program=gpg_program)


def _run_gpg(program: str, home: Path, args: list[str], stdin: bytes | None = None) -> str:
    return _run_gpg_bytes(program, home, args, stdin).decode(errors="replace")


def _run_gpg_bytes(program: str, home: Path, args: list[str], stdin: bytes | None = None) -> bytes:
    proc = subprocess.run(
        [program, "--homedir", str(home), "--batch", "--no-tty", "--quiet", "--no-autostart", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        raise PermanentError(
            f"gpg {' '.join(args)} failed: {proc.stderr.decode(errors='replace').strip()}",
            hint="check that the trusted key files are OpenPGP public keys",
        )
    return proc.stdout


def _parse_primary_fingerprints(colons: str) -> list[str]:
    fingerprints: list[str] = []
    expect_primary = False
    for line in colons.splitlines():
        fields = line.split(":")
        if fields[0] == "pub":
            expect_primary = True
        elif fields[0] == "fpr" and expect_primary:
            fingerprints.append(fields[9].upper())
            expect_primary = False
        elif fields[0] == "sub":
            expect_primary = False
    return fingerprints


class UnverifiedCommitError(PermanentError):
    """``--verify-commits`` is on and the commit's signature does not verify; it is not deployed."""

    def __init__(self, check: SignatureCheck) -> None:
        super().__init__(
            f"not deploying: {check.reason}",
            hint="sign the commit with a trusted key (git commit -S), or add the key with --trusted-key",
        )
        self.check = check


class CommitVerifier:
    """The commits of a mirror checked against ``trusted_keys`` (None: verification is off)."""

    def __init__(self, mirror: Mirror, trusted_keys: TrustedKeys | None) -> None:
        self.mirror = mirror
        self.trusted_keys = trusted_keys
        self._verified: dict[str, SignatureCheck] = {}

    def check_head(self, sha: str) -> None:
        """Refuse ``sha`` as the head to sync (:class:`UnverifiedCommitError`) when verification
        is on and its signature does not verify."""
        if self.trusted_keys is None:
            return
        check = self.verify_commit(sha)
        if not check.verified:
            log.warning("[source] %s", check.reason, extra={"commit": sha})
            raise UnverifiedCommitError(check)

    def verify_commit(self, sha: str) -> SignatureCheck:
        """Check commit ``sha`` against the trusted keys (results are remembered per sha)."""
        if self.trusted_keys is None:
            raise PermanentError(
                "commit verification is not configured", hint="pass --verify-commits --trusted-key FILE"
            )
        if sha not in self._verified:
            self._verified[sha] = verify_commit_signature(
                self.mirror.runner, self.mirror.resolve_commit(sha), self.trusted_keys
            )
        return self._verified[sha]


def verify_commit_signature(runner: GitRunner, sha: str, keys: TrustedKeys) -> SignatureCheck:
    """Check the signature of commit ``sha`` against ``keys``; never raises for a bad signature."""
    status, _out, err = runner.run_unchecked(
        "-c",
        "gpg.format=openpgp",
        "-c",
        f"gpg.program={keys.gpg_program}",
        "verify-commit",
        "--raw",
        "--end-of-options",
        sha,
        env={"GNUPGHOME": keys.gnupg_home},
    )
    return interpret_gpg_status(sha, status, err, keys.fingerprints)


def interpret_gpg_status(
    sha: str, exit_status: int, status_text: str, trusted: frozenset[str]
) -> SignatureCheck:
    """Decide from ``gpg --status-fd`` lines (as ``git verify-commit --raw`` prints) whether to trust."""
    short = shorten_sha(sha)
    tokens: dict[str, list[str]] = {}
    for line in status_text.splitlines():
        if line.startswith("[GNUPG:] "):
            parts = line[len("[GNUPG:] ") :].split()
            if parts:
                tokens.setdefault(parts[0], parts[1:])
    if not tokens:
        return SignatureCheck(sha, False, f"commit {short} is not signed")
    for bad, why in (
        ("BADSIG", "has a bad signature (the commit or signature was altered)"),
        ("EXPKEYSIG", "is signed with an expired key"),
        ("REVKEYSIG", "is signed with a revoked key"),
        ("EXPSIG", "has an expired signature"),
    ):
        if bad in tokens:
            return SignatureCheck(sha, False, f"commit {short} {why}")
    if "NO_PUBKEY" in tokens or "ERRSIG" in tokens:
        key = (tokens.get("NO_PUBKEY") or tokens.get("ERRSIG") or ["?"])[0]
        return SignatureCheck(sha, False, f"commit {short} is signed by key {key}, which is not trusted")
    valid = tokens.get("VALIDSIG")
    if "GOODSIG" not in tokens or not valid:
        return SignatureCheck(sha, False, f"commit {short} has no valid signature")
    primary = (valid[-1] if len(valid) >= 10 else valid[0]).upper()
    if primary not in trusted:
        return SignatureCheck(sha, False, f"commit {short} is signed by key {primary}, which is not trusted")
    if exit_status != 0:
        return SignatureCheck(sha, False, f"commit {short}: git verify-commit refused the signature")
    return SignatureCheck(sha, True, f"commit {short} is signed by trusted key {primary}")
