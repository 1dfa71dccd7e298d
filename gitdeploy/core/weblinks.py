"""Links from a commit to the config repo's web page of it, as Argo CD shows them.

A link is configured explicitly (``--repo-web-url``: the repo's web page, or a template holding
``{sha}``) or derived from the repo's clone URL when it is on github.com, gitlab.com or
bitbucket.org (https, ``ssh://`` and ``git@host:path`` forms). Only ``http`` and ``https`` links
are ever made: a ``javascript:`` or ``data:`` URL given by mistake is refused, never rendered.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from gitdeploy.errors import PermanentError

SHA_PLACEHOLDER = "{sha}"
_KNOWN_HOSTS = {
    "github.com": "{base}/commit/{sha}",
    "gitlab.com": "{base}/-/commit/{sha}",
    "bitbucket.org": "{base}/commits/{sha}",
}
_SCP_LIKE = re.compile(r"^(?:[\w.-]+@)?(?P<host>[\w.-]+):(?!//)(?P<path>[^\s]+)$")
_SHA = re.compile(r"^[0-9a-f]{4,64}$")


@dataclass(frozen=True)
class CommitLinks:
    """How a commit's web page is found: ``template`` with ``{sha}`` in it."""

    template: str

    def link(self, sha: str) -> str | None:
        """The page of commit ``sha`` (None for what is not a hex sha: nothing to link).

        >>> CommitLinks("https://git.example.com/org/config/commit/{sha}").link("0a1b2c3d")
        'https://git.example.com/org/config/commit/0a1b2c3d'
        >>> CommitLinks("https://x.example/{sha}").link("<script>") is None
        True
        """
        return self.template.replace(SHA_PLACEHOLDER, sha) if _SHA.match(sha) else None

    @classmethod
    def explicit(cls, value: str) -> CommitLinks:
        """``--repo-web-url``: a repo's web page (``/commit/SHA`` is added, as GitHub, Gitea and
        GitLab answer) or a template with ``{sha}``; http or https only.

        >>> CommitLinks.explicit("https://git.example.com/org/config/").template
        'https://git.example.com/org/config/commit/{sha}'
        >>> CommitLinks.explicit("https://gitlab.com/org/config").template
        'https://gitlab.com/org/config/-/commit/{sha}'
        >>> CommitLinks.explicit("https://cgit.example/config/commit/?id={sha}").template
        'https://cgit.example/config/commit/?id={sha}'
        >>> CommitLinks.explicit("javascript:alert(1)//{sha}")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        gitdeploy.errors.PermanentError: --repo-web-url 'javascript:...' is not an http or https URL (...)
        """
        parsed = urllib.parse.urlsplit(value.strip())
        if parsed.scheme not in ("http", "https") or not parsed.hostname or any(c in value for c in "\"'<> "):
            raise PermanentError(
                f"--repo-web-url {value!r} is not an http or https URL",
                hint="for example --repo-web-url https://github.com/org/config",
            )
        if SHA_PLACEHOLDER in value:
            return cls(value.strip())
        base = value.strip().rstrip("/")
        pattern = _KNOWN_HOSTS.get(parsed.hostname.lower(), "{base}/commit/{sha}")
        return cls(pattern.replace("{base}", base))

    @classmethod
    def derived(cls, repo_url: str) -> CommitLinks | None:
        """From a clone URL on github.com, gitlab.com or bitbucket.org (None for any other host,
        a local path, or a URL with credentials in it: those need ``--repo-web-url``).

        >>> CommitLinks.derived("git@github.com:org/config.git").template
        'https://github.com/org/config/commit/{sha}'
        >>> CommitLinks.derived("ssh://git@gitlab.com/group/sub/config.git").template
        'https://gitlab.com/group/sub/config/-/commit/{sha}'
        >>> CommitLinks.derived("https://bitbucket.org/team/config").template
        'https://bitbucket.org/team/config/commits/{sha}'
        >>> CommitLinks.derived("https://git.example.com/org/config.git") is None
        True
        >>> CommitLinks.derived("https://user:secret@github.com/org/config.git") is None
        True
        >>> CommitLinks.derived("/srv/git/config") is None
        True
        """
        host, path = _host_and_path(repo_url.strip())
        if host not in _KNOWN_HOSTS or not re.fullmatch(r"[\w.-]+(/[\w.-]+)+", path):
            return None
        base = f"https://{host}/{path.removesuffix('.git')}"
        return cls(_KNOWN_HOSTS[host].replace("{base}", base))


def _host_and_path(url: str) -> tuple[str, str]:
    """The host and repo path of a clone URL ('' and '' when it is neither a URL nor scp-like).

    >>> _host_and_path("https://GitHub.com/org/config/"), _host_and_path("git@github.com:org/c")
    (('github.com', 'org/config'), ('github.com', 'org/c'))
    """
    if "://" in url:
        parsed = urllib.parse.urlsplit(url)
        if (
            parsed.scheme not in ("https", "http", "ssh", "git")
            or parsed.password
            or (parsed.username and parsed.scheme.startswith("http"))
        ):
            return "", ""
        return (parsed.hostname or "").lower(), parsed.path.strip("/")
    scp = _SCP_LIKE.match(url)
    if scp is None:
        return "", ""
    return scp.group("host").lower(), scp.group("path").strip("/")
