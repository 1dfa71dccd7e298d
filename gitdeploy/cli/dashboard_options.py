"""The dashboard's options that ``run`` shares with ``dashboard``, in a module of their own so that
``run``'s module (which ``sync`` shares) imports no web stack."""

from __future__ import annotations

import click

from gitdeploy.core.weblinks import CommitLinks

dashboard_token_option = click.option(
    "--dashboard-token-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Let people who log in with the token in this file roll back, retry, cancel, enable "
    "triggers, promote and abort from the dashboard (else it is read-only).",
)

repo_web_url_option = click.option(
    "--repo-web-url",
    default=None,
    metavar="URL",
    help="The config repo's web page: commits on the dashboard link to URL/commit/SHA (or to URL "
    "itself with {sha} replaced, if it has one). http or https only. `run` derives it from --repo "
    "on github.com, gitlab.com and bitbucket.org.",
)


def commit_links(repo_web_url: str | None, repo: str | None = None) -> CommitLinks | None:
    """``--repo-web-url`` if given (checked: http or https), else derived from ``--repo``."""
    if repo_web_url:
        return CommitLinks.explicit(repo_web_url)
    return CommitLinks.derived(repo) if repo else None
