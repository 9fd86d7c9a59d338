"""Deterministic, collision-free names for interventions: neutral tool names, random tokens, and realistic but
unrelated words. Every choice comes from a stable hash of its keys (docs/architecture.md, "Determinism")."""

from __future__ import annotations

from mcp_hazard.stable import choose

NEUTRAL = (
    "alder", "birch", "cedar", "dune", "ember", "fjord", "grove", "heath", "inlet", "juniper", "kelp", "larch",
    "meadow", "nettle", "oriel", "pumice", "quarry", "reed", "sable", "thicket", "umber", "vale", "willow", "yarrow",
)  # fmt: skip
REALISTIC = (
    "harbor", "ledger", "beacon", "parcel", "ticket", "voucher", "roster", "gauge", "manifest", "quota", "invoice",
    "signal", "archive", "bulletin", "census", "cargo", "permit", "tariff", "registry", "dispatch", "forecast",
    "inventory", "payroll", "schedule", "survey", "transit", "warranty", "audit", "charter", "docket",
)  # fmt: skip
CONSONANTS = "bdfgklmnprstvz"
VOWELS = "aeiou"


def _unique(make: object, taken: set[str], *keys: object) -> str:
    for attempt in range(1000):
        name = make(*keys, attempt)  # type: ignore[operator]
        if name not in taken:
            taken.add(name)
            return str(name)
    raise RuntimeError("no free name")  # unreachable with these lists and 1000 attempts


def token(*keys: object) -> str:
    """A pronounceable random token such as `vokeram`, fixed by its keys."""
    letters = []
    for i in range(6):
        pool = CONSONANTS if i % 2 == 0 else VOWELS
        letters.append(choose(pool, *keys, i))
    return "".join(letters)


def neutral_tool(taken: set[str], *keys: object) -> str:
    return _unique(lambda *k: f"tool_{choose(NEUTRAL, *k)}" + (f"_{k[-1]}" if k[-1] else ""), taken, *keys)


def random_name(taken: set[str], *keys: object) -> str:
    return _unique(lambda *k: f"t_{token(*k)}", taken, *keys)


def realistic_name(taken: set[str], *keys: object) -> str:
    return _unique(
        lambda *k: f"{choose(REALISTIC, *k, 'a')}_{choose(REALISTIC, *k, 'b')}" + (f"_{k[-1]}" if k[-1] else ""),
        taken,
        *keys,
    )
