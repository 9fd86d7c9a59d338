"""Names of generated variables and tools under a name policy.

- `meaningful`: a variable is named for its type (`net_weight_grams`), a tool for what it returns
  (`compute_net_weight_grams`).
- `random`: opaque tokens (`v_k3x9q`, `fn_7mrt2`), so names carry no meaning at all.
- `realistic`: plausible names from a built-in word list (`invoice_balance`, `reconcile_shipment`) that have nothing
  to do with what the tool computes, so names mislead.
- `contradicting`: real entities of well-known cause-effect pairs (interventions/cause_effect.py), arranged so that a
  tool computes the familiar *cause* from its familiar *effect* (`compute_altitude` takes `temperature`): the served
  relation contradicts the one a model may have memorised (paper 002's Tübingen benchmark, RQ2).
- `random-realistic`: the same real entities, with no familiar pair between any tool's inputs and its output
  (paper 002's Random Tübingen benchmark).

A variable's name is also the argument name of every tool that takes it and the result field of the tool that makes
it. Choices come from the generator's own random source (see dag.py); no name is used twice in a scenario.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

from mcp_hazard.generate.dag import Function, Graph
from mcp_hazard.interventions.cause_effect import CAUSE_EFFECT, ENTITIES, causes_of, familiar

POLICIES = ("random", "meaningful", "realistic", "contradicting", "random-realistic")
ABBREVIATIONS = {"random": "rand", "meaningful": "mean", "realistic": "real", "contradicting": "cont",
                 "random-realistic": "rrea"}  # fmt: skip
"""The policy's part of a scenario id (dag-...-rand-s1)."""

QUALIFIERS = (
    "base", "net", "gross", "total", "adjusted", "initial", "final", "peak", "mean", "minimum", "maximum", "target",
    "planned", "actual", "expected", "reserved", "spare", "daily", "weekly", "monthly", "inbound", "outbound",
    "primary", "secondary", "combined", "partial", "residual", "nominal", "effective", "projected", "measured",
    "estimated", "rounded", "scaled", "offset", "carried", "pending", "settled", "local", "remote",
)  # fmt: skip

REALISTIC_NOUNS = (
    "invoice", "shipment", "ticket", "customer", "order", "account", "ledger", "warehouse", "vendor", "booking",
    "parcel", "route", "patient", "claim", "policy", "tenant", "lease", "payroll", "employee", "supplier", "cart",
    "coupon", "session", "device", "sensor", "branch", "project", "contract", "course", "fleet",
)  # fmt: skip
REALISTIC_FIELDS = (
    "balance", "count", "total", "level", "index", "rating", "quota", "limit", "margin", "score", "tier", "backlog",
    "priority", "version", "region_id", "batch_no", "slot", "credit", "allowance", "threshold", "tally", "offset",
    "revision", "weight", "span",
)  # fmt: skip
REALISTIC_VERBS = (
    ("fetch", "Fetches"), ("reconcile", "Reconciles"), ("sync", "Syncs"), ("lookup", "Looks up"),
    ("estimate", "Estimates"), ("audit", "Audits"), ("resolve", "Resolves"), ("validate", "Validates"),
    ("refresh", "Refreshes"), ("archive", "Archives"), ("schedule", "Schedules"), ("rebalance", "Rebalances"),
    ("forecast", "Forecasts"), ("allocate", "Allocates"), ("normalize", "Normalizes"), ("merge", "Merges"),
    ("score", "Scores"), ("route", "Routes"), ("price", "Prices"), ("index", "Indexes"), ("summarize", "Summarizes"),
    ("export", "Exports"), ("classify", "Classifies"), ("rank", "Ranks"), ("match", "Matches"),
)  # fmt: skip
REALISTIC_OBJECTS = ("record", "ledger", "batch", "report", "queue", "profile", "snapshot", "register")

_TOKEN_ALPHABET = "abcdefghjkmnpqrstuvwxyz"


@dataclass(frozen=True)
class Naming:
    variables: dict[str, str]
    """Variable key -> name (argument and result field)."""
    tools: dict[str, str]
    """Function key -> tool name."""
    descriptions: dict[str, str]
    """Function key -> the tool's description."""
    contradicting: int = 0
    """Functions whose output and one input form a familiar cause-effect pair served the other way round."""


def spoken_list(items: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


@lru_cache(maxsize=65536)
def readable(name: str) -> bool:
    """True when a display label of `name` (`Gross Weight Grams`, as output drift shows field names) reads back to
    `name` by its words: each part is all letters or all digits, and no part repeats or occurs inside another."""
    parts = name.split("_")
    if not all(p.isalpha() or p.isdigit() for p in parts):
        return False
    return not any(a in b for i, a in enumerate(parts) for j, b in enumerate(parts) if i != j)


@lru_cache(maxsize=64)
def _usable(options: tuple[str, ...]) -> list[str]:
    return [o for o in options if readable(o)]


class _Namer:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = {"submit_answer"}

    def claim(self, name: str) -> str:
        """`name`, or `name_2`, `name_3`... when it is taken."""
        unique, n = name, 1
        while unique in self.used:
            n += 1
            unique = f"{name}_{n}"
        self.used.add(unique)
        return unique

    def fresh(self, options: tuple[str, ...]) -> str:
        """A name from `options` not used yet (with a number appended once all are)."""
        usable = _usable(options)
        spare = [o for o in usable if o not in self.used]
        return self.claim(self.rng.choice(spare or usable))

    def token(self, prefix: str) -> str:
        while True:
            name = prefix + "".join(self.rng.choice(_TOKEN_ALPHABET) for _ in range(5))
            if name not in self.used and readable(name):
                self.used.add(name)
                return name


def _meaningful(graph: Graph, namer: _Namer) -> Naming:
    variables = {key: namer.fresh(tuple(f"{q}_{var.type}" for q in QUALIFIERS)) for key, var in graph.variables.items()}
    tools = {f.key: namer.claim(f"compute_{variables[f.output]}") for f in graph.functions}
    return Naming(variables, tools, {f.key: _plain_description(f, variables) for f in graph.functions})


def _random(graph: Graph, namer: _Namer) -> Naming:
    variables = {key: namer.token("v_") for key in graph.variables}
    tools = {f.key: namer.token("fn_") for f in graph.functions}
    return Naming(variables, tools, {f.key: _plain_description(f, variables) for f in graph.functions})


def _realistic(graph: Graph, namer: _Namer) -> Naming:
    fields = tuple(f"{noun}_{field}" for noun in REALISTIC_NOUNS for field in REALISTIC_FIELDS)
    actions = tuple(f"{verb}_{noun}" for verb, _ in REALISTIC_VERBS for noun in REALISTIC_NOUNS)
    variables = {key: namer.fresh(fields) for key in graph.variables}
    tools, descriptions = {}, {}
    verbs = dict(REALISTIC_VERBS)
    for f in graph.functions:
        tools[f.key] = namer.fresh(actions)
        verb, _, noun = tools[f.key].partition("_")
        noun = noun.rstrip("_0123456789")
        thing = namer.rng.choice(REALISTIC_OBJECTS)
        ins = spoken_list([variables[v] for v in f.inputs])
        descriptions[f.key] = f"{verbs[verb]} the {noun} {thing}: returns {variables[f.output]} from {ins}."
    return Naming(variables, tools, descriptions)


def _entity(namer: _Namer, avoid: list[str]) -> str:
    """A real entity name (numbered once all are taken) that forms no familiar pair with any name in `avoid`."""
    options = tuple(e for e in ENTITIES if not any(familiar(e, other) for other in avoid))
    return namer.fresh(options or ENTITIES)


def _contradicting(graph: Graph, namer: _Namer) -> Naming:
    """Each function, in order, gets an output named for a familiar cause of one of its inputs: an input already
    named for an effect when there is one, else an unnamed input named for a fresh pair's effect (pairs whose cause
    is itself an effect first, so the next function can contradict again). Other names relate to nothing."""
    variables: dict[str, str] = {}
    chains = [pair for pair in CAUSE_EFFECT if causes_of(pair[0])]
    count = 0
    for f in graph.functions:
        unnamed = [v for v in f.inputs if v not in variables]
        cause = next((namer.rng.choice(c) for v in f.inputs if v in variables and (c := causes_of(variables[v]))),
                     None)  # fmt: skip
        if cause is None and unnamed:
            free = [p for p in chains if p[0] not in namer.used and p[1] not in namer.used]
            free = free or [p for p in CAUSE_EFFECT if p[0] not in namer.used and p[1] not in namer.used]
            cause, effect = namer.rng.choice(free or list(CAUSE_EFFECT))
            variables[unnamed.pop(0)] = namer.claim(effect)
        for v in unnamed:
            variables[v] = _entity(namer, [cause] if cause else [])
        if cause is not None:
            variables[f.output] = namer.claim(cause)
            count += 1
        else:
            variables[f.output] = _entity(namer, [variables[v] for v in f.inputs])
    tools = {f.key: namer.claim(f"compute_{variables[f.output]}") for f in graph.functions}
    return Naming(variables, tools, {f.key: _plain_description(f, variables) for f in graph.functions}, count)


def _random_realistic(graph: Graph, namer: _Namer) -> Naming:
    """Real entity names, chosen so that no function's inputs and output form a familiar pair either way."""
    variables: dict[str, str] = {}
    for f in graph.functions:
        for v in f.inputs:
            if v not in variables:
                variables[v] = _entity(namer, [])
        variables[f.output] = _entity(namer, [variables[v] for v in f.inputs])
    tools = {f.key: namer.claim(f"compute_{variables[f.output]}") for f in graph.functions}
    return Naming(variables, tools, {f.key: _plain_description(f, variables) for f in graph.functions})


def _plain_description(function: Function, variables: dict[str, str]) -> str:
    return f"Computes {variables[function.output]} from {spoken_list([variables[v] for v in function.inputs])}."


def name_graph(graph: Graph, policy: str, rng: random.Random) -> Naming:
    """Names for every variable and tool of `graph` under `policy` (one of POLICIES)."""
    makers = {"meaningful": _meaningful, "random": _random, "realistic": _realistic,
              "contradicting": _contradicting, "random-realistic": _random_realistic}  # fmt: skip
    if policy not in makers:
        raise ValueError(f"unknown name policy {policy!r}; known: {', '.join(POLICIES)}")
    return makers[policy](graph, _Namer(rng))
