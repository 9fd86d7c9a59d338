"""The shape of a generated task: a DAG of functions over typed integer variables (FuncBenchGen, paper 003).

A **core** of functions leads from the task's input variables (the DAG's sources) to one target variable (its sink).
The **depth** is FuncBenchGen's dependency depth d: the number of edges (one function consuming another's output) on
the longest path through the core, so 0 for a single function, 1 for a star (one function takes the outputs of all
the others) and `core - 1` for a path. **Connected** distractors take at least one core variable as an argument (so
their inputs fit); **disconnected** distractors use only types that no core variable has. Every value is a
three-digit integer. Every function computes its output with an integer formula when all its inputs have their
expected values, and a random wrong value (never the right one, never an error) otherwise: a silent failure.

Every draw comes from a `random.Random` seeded from a blake2b hash of the structural knobs (docs/architecture.md,
"Determinism"): never the module-level `random`, `hash()` or the clock. The name policy and `--restate` are not part
of that key, so the same seed gives the same graph under every name policy (a paired comparison changes only the
surface).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Literal

GENERATOR_VERSION = 2
# 2: depth counts edges (FuncBenchGen's d; depth 1 is a star, no cap on a function's core inputs), three-digit values,
#    random wrong values, random names by default, restatement of every known value, `generated:` metadata.
MAX_FUNCTIONS = 100
"""Upper bound of --core, --connected and --disconnected (keeps files within half the loader's limits of 1 MiB and
25,000 values: tests/generate/test_write.py)."""
MAX_INPUTS = 3
"""Most task inputs (given values) a function takes besides the outputs of other core functions, and most inputs of
a distractor."""
VALUE_RANGE = (100, 999)
"""Every variable is a three-digit integer, as in FuncBenchGen."""

Role = Literal["core", "connected", "disconnected"]

TYPES: dict[str, tuple[int, int]] = {
    name: VALUE_RANGE
    for name in (
        "count", "price_cents", "weight_grams", "length_mm", "duration_secs", "distance_metres", "volume_ml", "code",
        "score", "percent", "age_days", "energy_joules", "area_sqcm", "rank", "speed_kmh", "floor_level",
    )
}  # fmt: skip
"""Variable types (FuncBenchGen's semantic types) and the range of their values, the same three-digit range for all.
Two variables are type-compatible when their types are equal."""


@dataclass(frozen=True)
class Knobs:
    """Everything that decides one generated scenario."""

    core: int = 4
    depth: int = 2
    connected: int = 2
    disconnected: int = 2
    seed: int = 0
    names: str = "random"
    restate: bool = False

    def problem(self) -> str | None:
        """Why these knobs cannot make a scenario, in one line; None when they can."""
        for knob, value, low in (("core", self.core, 1), ("depth", self.depth, 0), ("connected", self.connected, 0),
                                 ("disconnected", self.disconnected, 0)):  # fmt: skip
            if not low <= value <= MAX_FUNCTIONS:
                return f"--{knob} must be between {low} and {MAX_FUNCTIONS}, got {value}"
        if not 0 <= self.seed < 2**63:
            return f"--seed must be between 0 and 2**63-1, got {self.seed}"
        if self.depth > self.core - 1:
            return (f"--depth {self.depth} needs at least {self.depth + 1} core functions (a path of {self.depth} "
                    f"edges), got --core {self.core}")  # fmt: skip
        if self.core > 1 and self.depth < 1:
            return f"--core {self.core} needs --depth 1 or more: the target's function must take the others' outputs"
        return None

    def graph_key(self) -> str:
        """The canonical text the graph's random generator is seeded from (not the names, not --restate)."""
        return (f"mcp-hazard/generate/dag/v{GENERATOR_VERSION}|core={self.core}|depth={self.depth}"
                f"|connected={self.connected}|disconnected={self.disconnected}|seed={self.seed}")  # fmt: skip

    def command(self) -> str:
        """The command line that makes this scenario (without --out and --count)."""
        restate = " --restate" if self.restate else ""
        return (f"mcp-hazard generate dag --core {self.core} --depth {self.depth} --connected {self.connected} "
                f"--disconnected {self.disconnected} --seed {self.seed} --names {self.names}{restate}")  # fmt: skip


def stable_rng(key: str) -> random.Random:
    """A generator of our own, seeded from a stable hash of `key` (the same in every process and on every machine)."""
    return random.Random(int.from_bytes(hashlib.blake2b(key.encode(), digest_size=16).digest(), "big"))


@dataclass(frozen=True)
class Variable:
    key: str
    type: str
    value: int
    """The correct value: given in the prompt for an input, hidden otherwise."""


@dataclass(frozen=True)
class Function:
    key: str
    role: Role
    inputs: tuple[str, ...]
    output: str
    coefficients: tuple[int, ...]
    """One multiplier per input, then a constant term."""
    salt: int
    """Keys the random wrong value this function returns for wrong inputs (with the inputs it was given)."""


def formula(coefficients: tuple[int, ...], values: list[int], out_type: str) -> int:
    """`(c1*x1 + ... + ck*xk + c0) % span + low`: an integer in the output type's range."""
    low, high = TYPES[out_type]
    *weights, constant = coefficients
    return (sum(w * v for w, v in zip(weights, values, strict=True)) + constant) % (high - low + 1) + low


@dataclass
class Graph:
    variables: dict[str, Variable] = field(default_factory=dict)
    functions: list[Function] = field(default_factory=list)
    """The core in topological order, then the connected distractors, then the disconnected ones."""
    sources: list[str] = field(default_factory=list)
    target: str = ""

    def role(self, role: Role) -> list[Function]:
        return [f for f in self.functions if f.role == role]

    def core_variables(self) -> set[str]:
        core = self.role("core")
        return {v for f in core for v in f.inputs} | {f.output for f in core}

    def core_types(self) -> set[str]:
        return {self.variables[v].type for v in self.core_variables()}

    def longest_path(self) -> int:
        """Edges on the longest path through the core (the depth): 0 for one function, 1 for a star."""
        made_by = {f.output: f for f in self.role("core")}
        length: dict[str, int] = {}
        for f in self.role("core"):  # topological order: a function's producers come before it
            length[f.key] = max((1 + length[made_by[v].key] for v in f.inputs if v in made_by), default=0)
        return max(length.values())


class _Builder:
    def __init__(self, knobs: Knobs) -> None:
        self.knobs = knobs
        self.rng = stable_rng(knobs.graph_key())
        self.graph = Graph()

    def variable(self, type_: str, value: int | None = None) -> str:
        key = f"v{len(self.graph.variables) + 1}"
        low, high = TYPES[type_]
        self.graph.variables[key] = Variable(key, type_, self.rng.randint(low, high) if value is None else value)
        return key

    def function(self, role: Role, inputs: list[str], out_type: str) -> str:
        rng = self.rng
        coefficients = (*(rng.randint(2, 9) for _ in inputs), rng.randint(1, 97))
        salt = rng.randint(1, 10**9)
        value = formula(coefficients, [self.graph.variables[v].value for v in inputs], out_type)
        output = self.variable(out_type, value)
        key = f"f{len(self.graph.functions) + 1}"
        self.graph.functions.append(Function(key, role, tuple(inputs), output, coefficients, salt))
        return output

    def core(self) -> None:
        """A tree whose spine has `depth` edges (`depth + 1` functions), filled out to `core` functions attached
        anywhere above the deepest level, then extra edges that keep the depth. With depth 1 every other function
        feeds the target's function directly: a star."""
        rng, knobs = self.rng, self.knobs
        level: list[int] = [0]  # edges from this function down to the target's
        children: list[list[int]] = [[]]
        for _ in range(knobs.depth):
            children[-1].append(len(level))
            level.append(level[-1] + 1)
            children.append([])
        for _ in range(knobs.core - knobs.depth - 1):
            open_ = [n for n in range(len(level)) if level[n] < knobs.depth]
            parent = rng.choice(open_)
            children[parent].append(len(level))
            level.append(level[parent] + 1)
            children.append([])
        height = [0] * len(level)
        for node in reversed(range(len(level))):  # children are created after their parent
            height[node] = 1 + max((height[c] for c in children[node]), default=0)
        palette = rng.sample(sorted(TYPES), rng.randint(2, 3))
        output: dict[int, str] = {}
        for node in sorted(range(len(level)), key=lambda n: (height[n], n)):
            inputs = [output[c] for c in sorted(children[node])]
            free = max(0, MAX_INPUTS - len(inputs))
            extra = rng.choices([1, 2, 3], [5, 4, 1])[0] if not inputs else rng.choices([0, 1, 2], [6, 3, 1])[0]
            lower = [output[n] for n in sorted(output) if height[n] < height[node]]  # an edge that keeps the depth
            for _ in range(min(extra, free)):
                shortcuts = [v for v in lower if v not in inputs]
                reuse = [v for v in self.graph.sources if v not in inputs]
                draw = rng.random()
                if shortcuts and draw < 0.25:
                    inputs.append(rng.choice(shortcuts))
                elif reuse and draw < 0.5:
                    inputs.append(rng.choice(reuse))
                else:
                    source = self.variable(rng.choice(palette))
                    self.graph.sources.append(source)
                    inputs.append(source)
            output[node] = self.function("core", inputs, rng.choice(palette))
        self.graph.target = output[0]

    def distractors(self, role: Role, count: int, shared: list[str], types: list[str]) -> None:
        """`count` functions over `shared` variables (at least one each, when given) and new ones of `types`."""
        rng, made = self.rng, list[str]()
        for _ in range(count):
            wanted = rng.choices([1, 2, 3], [4, 4, 2])[0]
            inputs = [rng.choice(shared)] if shared else []
            while len(inputs) < wanted:
                draw = rng.random()
                spare_shared = [v for v in shared if v not in inputs]
                spare_made = [v for v in made if v not in inputs]
                if spare_shared and draw < 0.35:
                    inputs.append(rng.choice(spare_shared))
                elif spare_made and draw < 0.55:
                    inputs.append(rng.choice(spare_made))
                else:
                    inputs.append(self.variable(rng.choice(types)))
            made.append(self.function(role, inputs, rng.choice(types)))


def build_graph(knobs: Knobs) -> Graph:
    """The graph for `knobs` (which must have no `problem()`): the same knobs always give the same graph."""
    problem = knobs.problem()
    if problem is not None:
        raise ValueError(problem)
    builder = _Builder(knobs)
    builder.core()
    graph = builder.graph
    core_vars = sorted(graph.core_variables(), key=lambda v: int(v[1:]))
    core_types = sorted(graph.core_types())
    builder.distractors("connected", knobs.connected, core_vars, core_types)
    builder.distractors("disconnected", knobs.disconnected, [], sorted(set(TYPES) - set(core_types)))
    return graph
