"""Episodes at once when `--concurrency` is not given: many for built-in agents whose episodes mostly wait, few where
each episode starts a process, calls a model or reaches a real server (docs/decisions.md)."""

from __future__ import annotations

import pytest

from mcp_hazard.commands.options import BUSY_CONCURRENCY, CAREFUL_CONCURRENCY, default_concurrency


@pytest.mark.parametrize(
    ("transport", "agents", "external", "proxied", "expected"),
    [
        ("http", ["naive", "recovering"], False, False, BUSY_CONCURRENCY),
        ("memory", ["golden"], False, False, BUSY_CONCURRENCY),
        ("stdio", ["naive"], False, False, CAREFUL_CONCURRENCY),
        ("http", [], True, False, CAREFUL_CONCURRENCY),
        ("http", ["naive", "llm"], False, False, CAREFUL_CONCURRENCY),
        ("http", ["recovering"], False, True, CAREFUL_CONCURRENCY),
    ],
)
def test_the_default_follows_what_an_episode_starts(
    transport: str, agents: list[str], external: bool, proxied: bool, expected: int
) -> None:
    assert default_concurrency(transport, agents, external, proxied) == expected
    assert CAREFUL_CONCURRENCY < BUSY_CONCURRENCY


def test_run_help_says_both_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_hazard.cli import main

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert f"default {BUSY_CONCURRENCY} for built-in agents" in said and f"{CAREFUL_CONCURRENCY} with stdio" in said
