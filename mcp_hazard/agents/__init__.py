"""Reference agents: scripted MCP clients (naive, naive-positional, recovering, replay, golden, obedient) and an LLM
loop.

The names are known without importing an agent (each is an SDK client): `run` checks its options, and the shell's
completion lists the agents, before anything heavy is loaded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_hazard.errors import UserError

if TYPE_CHECKING:
    from mcp_hazard.agents.drive import Agent

BUILT_IN = ("naive", "naive-positional", "recovering", "golden", "obedient", "llm", "replay")
RUNNABLE = ", ".join(name for name in BUILT_IN if name != "replay")


def make_agent(name: str) -> Agent:
    """A built-in agent by name (the LLM agent reads its endpoint from the environment)."""
    if name in ("naive", "naive-positional"):
        from mcp_hazard.agents.naive import NaiveAgent

        return NaiveAgent("named" if name == "naive" else "positional")
    if name == "recovering":
        from mcp_hazard.agents.recovering import RecoveringAgent

        return RecoveringAgent()
    if name == "golden":
        from mcp_hazard.agents.golden import GoldenAgent

        return GoldenAgent()
    if name == "obedient":
        from mcp_hazard.agents.obedient import ObedientAgent

        return ObedientAgent()
    if name == "llm":
        from mcp_hazard.agents.llm import LlmAgent

        return LlmAgent()
    raise UserError(f"unknown agent {name!r}; built-in agents: {RUNNABLE} (or use --agent-cmd)")


__all__ = ["BUILT_IN", "RUNNABLE", "make_agent"]
