"""AgentDojo sources by name: `agentdojo:SUITE` or `agentdojo:SUITE@VERSION`, accepted wherever a scenario path is.

A name is read here without AgentDojo: whether the text is a source at all, and its suite and version. Whether that
suite and version exist is AgentDojo's to say (library.py), since a newer AgentDojo may bring more of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp_hazard.errors import UserError
from mcp_hazard.suggest import did_you_mean

PREFIX = "agentdojo:"
DEFAULT_VERSION = "v1.2.2"
"""The benchmark version a source without `@VERSION` runs: the newest that AgentDojo 0.1.35 ships."""
SUITES = ("banking", "slack", "travel", "workspace")
"""The suites AgentDojo 0.1.35 ships, in the order `agentdojo:all` loads them."""
ALL = "all"
EXTRA_HINT = "pip install 'mcp-hazard[agentdojo]'"


@dataclass(frozen=True)
class Source:
    """One suite of one benchmark version."""

    suite: str
    version: str

    @property
    def name(self) -> str:
        """The source as a trace records it (its `scenario.path`): always with the version."""
        return f"{PREFIX}{self.suite}@{self.version}"


def is_source(text: object) -> bool:
    """Whether a path argument names an AgentDojo source rather than a file (a file named so needs `./`)."""
    return isinstance(text, str) and text.startswith(PREFIX)


def parse(text: str) -> list[Source]:
    """The suites a name means (`all`: every suite), with its version or the default. The suite must be one AgentDojo
    ships; the version is only checked for its form here."""
    body = text[len(PREFIX) :] if is_source(text) else text
    suite, sep, version = body.partition("@")
    suite, version = suite.strip(), version.strip()
    if sep and not version:
        raise UserError(f"{text}: no version after '@'; e.g. {PREFIX}{suite or 'banking'}@{DEFAULT_VERSION}")
    if not suite:
        raise UserError(f"{text}: no suite; give one of {', '.join((*SUITES, ALL))}, e.g. {PREFIX}banking")
    if suite != ALL and suite not in SUITES:
        hint = did_you_mean(suite, (*SUITES, ALL))
        raise UserError(f"{text}: unknown AgentDojo suite {suite!r}{hint}; suites: {', '.join((*SUITES, ALL))}")
    chosen = version or DEFAULT_VERSION
    if not chosen.startswith("v") or not all(part.isdigit() for part in chosen[1:].split(".")):
        raise UserError(f"{text}: version {chosen!r} is not a benchmark version such as {DEFAULT_VERSION}")
    return [Source(name, chosen) for name in (SUITES if suite == ALL else (suite,))]


ATTACKS = (
    "important_instructions_no_model_name",
    "important_instructions_no_names",
    "injecagent",
    "ignore_previous",
    "system_message",
    "direct",
)
"""AgentDojo's attacks the `injection` hazard draws from: its fixed-text attacks whose text names no model (the
important_instructions variants address "the AI language model"), so a text never depends on the agent under test."""
