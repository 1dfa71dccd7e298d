"""``--repo-web-url`` through the real CLI: a URL that is not http or https is refused before
anything is served (a link the page would render must never be ``javascript:``), and ``run``
wants ``--listen`` for it as for the dashboard's token."""

from __future__ import annotations

from tests.fixtures.cli import RunCli


def test_a_repo_web_url_that_is_not_http_is_refused_at_start(run_cli: RunCli) -> None:
    for bad in (
        "javascript:alert(1)",
        "data:text/html,x",
        "ftp://git.example.com/config",
        'https://x.example/"a',
    ):
        refused = run_cli("dashboard", "--listen", "127.0.0.1:0", "--repo-web-url", bad)
        assert refused.returncode == 1, refused.stdout
        assert f"--repo-web-url {bad!r} is not an http or https URL" in refused.stderr, refused.stderr
        assert "Dashboard of" not in refused.stdout


def test_run_wants_listen_for_a_repo_web_url(run_cli: RunCli) -> None:
    refused = run_cli("run", "--repo", "/nonexistent", "--repo-web-url", "https://github.com/org/config")
    assert refused.returncode == 1
    assert "--repo-web-url needs --listen" in refused.stderr, refused.stderr
