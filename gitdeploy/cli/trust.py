"""``--trusted-key``: the commit-signature trust root, shared by run, sync, plan and validate.

The keys come only from the controller's side (the flag, or ``GITDEPLOY_TRUSTED_KEYS``: key files
separated by ``:``), never from the repository being verified: a commit that could name the keys
it is checked against could trust itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from gitdeploy.source.signatures import TrustedKeys

TRUSTED_KEYS_ENV = "GITDEPLOY_TRUSTED_KEYS"


def trusted_key_option(command: Any) -> Any:
    """Add the repeatable ``--trusted-key FILE`` option (parameter ``trusted_keys``)."""
    return click.option(
        "--trusted-key",
        "trusted_keys",
        multiple=True,
        envvar=TRUSTED_KEYS_ENV,
        type=click.Path(exists=True, dir_okay=False),
        help="Refuse a head commit not signed by one of these GPG public keys (repeatable; "
        f"or ${TRUSTED_KEYS_ENV}, files separated by ':').",
    )(command)


def load_trusted_keys(files: Sequence[str], state_dir: Path) -> TrustedKeys | None:
    """The keys of ``files`` in a GnuPG home of their own under ``state_dir``; None without files."""
    return TrustedKeys.from_key_files(files, state_dir=state_dir) if files else None
