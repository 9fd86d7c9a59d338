"""Turn a generated graph into a scenario (plain dicts in the order they are written, format version 1).

Each function becomes a `compute` tool. Its `let` block checks that every argument is exactly its expected value
(`ok`), computes the true formula (`raw`) and a random three-digit number drawn from the arguments (`draw`, through
the stable `scramble`), and answers `raw` when `ok`, else `draw` moved off the correct value: a wrong input never
yields the right output and never an error (a silent failure), as FuncBenchGen's functions do.
"""

from __future__ import annotations

import textwrap
from typing import Any

from mcp_hazard.generate.dag import GENERATOR_VERSION, TYPES, Function, Graph, Knobs, build_graph, stable_rng
from mcp_hazard.generate.variable_names import ABBREVIATIONS, Naming, name_graph

TASK_ID = "target"
KNOWN_FIELD = "known_values"  # the server's restatement field (server/restate.py), listed in the output schema


def _shape(knobs: Knobs) -> str:
    return f"c{knobs.core}d{knobs.depth}k{knobs.connected}u{knobs.disconnected}"


def scenario_id(knobs: Knobs) -> str:
    """Unique per knob set, so suites made with different knobs can be served together; kept short because
    episode ids (agent.scenario.task.condition.profile.seed) are cut at 80 characters."""
    restate = "-restate" if knobs.restate else ""
    return f"dag-{_shape(knobs)}-{ABBREVIATIONS[knobs.names]}{restate}-s{knobs.seed}"


def problem_id(knobs: Knobs) -> str:
    """The graph's id without the surface (names, restatement): equal for every variant of one problem."""
    return f"dag-{_shape(knobs)}-s{knobs.seed}"


def _behaviour(f: Function, graph: Graph, names: Naming) -> dict[str, Any]:
    args = [names.variables[v] for v in f.inputs]
    out_type = graph.variables[f.output].type
    low, high = TYPES[out_type]
    span = high - low + 1
    right = graph.variables[f.output].value
    *weights, constant = f.coefficients
    total = " + ".join(f"{w} * {a}" for w, a in zip(weights, args, strict=True))
    return {
        "kind": "compute",
        "let": {
            "ok": " and ".join(f"{a} == {graph.variables[v].value}" for a, v in zip(args, f.inputs, strict=True)),
            "raw": f"({total} + {constant}) % {span} + {low}",
            "draw": f"scramble({f.salt}, {', '.join(args)}) % {span - 1} + {low}",
            "value": f"int(raw if ok else (draw if draw < {right} else draw + 1))",
        },
        "result": {names.variables[f.output]: "{{ value }}"},
    }


def _tool(f: Function, graph: Graph, names: Naming, restate: bool) -> dict[str, Any]:
    args = [names.variables[v] for v in f.inputs]
    output: dict[str, Any] = {names.variables[f.output]: {"type": "integer"}}
    if restate:
        output[KNOWN_FIELD] = {"type": "object", "additionalProperties": {"type": "integer"}}
    return {
        "name": names.tools[f.key],
        "description": names.descriptions[f.key]
        + (" Every result also lists all variable values known so far." if restate else ""),
        "input_schema": {
            "type": "object",
            "properties": {a: {"type": "integer"} for a in args},
            "required": args,
            "additionalProperties": False,
        },
        "output_schema": {"type": "object", "properties": output, "required": [names.variables[f.output]]},
        "annotations": {"read_only_hint": True, "idempotent_hint": True},
        "behaviour": _behaviour(f, graph, names),
    }


def _golden_path(graph: Graph, names: Naming) -> dict[str, Any]:
    step_of: dict[str, str] = {}
    steps = []
    for n, f in enumerate(graph.role("core"), start=1):
        arguments: dict[str, Any] = {}
        for v in f.inputs:
            name = names.variables[v]
            arguments[name] = graph.variables[v].value if v in graph.sources else f"{{{{ {step_of[v]}.{name} }}}}"
        step_of[f.output] = f"s{n}"
        steps.append({"id": f"s{n}", "tool": names.tools[f.key], "arguments": arguments})
    return {"steps": steps, "answer": f"{{{{ {step_of[graph.target]}.{names.variables[graph.target]} }}}}"}


def _prompt(graph: Graph, names: Naming) -> str:
    given = sorted((names.variables[v], graph.variables[v].value) for v in graph.sources)
    lines = [f"- {name} = {value}" for name, value in given]
    target = names.variables[graph.target]
    return "\n".join(["Known values:", *lines, "", f"Use the tools to find the value of {target}.",
                      "Answer with the number only."])  # fmt: skip


def _description(knobs: Knobs, graph: Graph, names: Naming) -> str:
    def tools(role: str) -> str:
        listed = sorted(names.tools[f.key] for f in graph.functions if f.role == role)
        return ", ".join(listed) or "none"

    lines = [
        f"Generated task (generator version {GENERATOR_VERSION}); the first lines of the file give the command.",
        f"Core: {knobs.core} functions, depth {knobs.depth} (edges on the longest path of core functions).",
        f"Inputs: {', '.join(sorted(names.variables[v] for v in graph.sources))}. "
        f"Target: {names.variables[graph.target]}.",
        f"Core tools: {tools('core')}.",
        f"Connected distractors (take core variables): {tools('connected')}.",
        f"Disconnected distractors (no core type): {tools('disconnected')}.",
    ]
    if knobs.names == "contradicting":
        lines.append(f"Functions computing a familiar cause from its effect: {names.contradicting} of "
                     f"{len(graph.functions)}.")  # fmt: skip
    return "\n".join(part for line in lines for part in textwrap.wrap(line, 110, break_on_hyphens=False))


def build_scenario(knobs: Knobs) -> tuple[dict[str, Any], Graph, Naming]:
    """The scenario for `knobs` as data, with the graph and names it was made from."""
    graph = build_graph(knobs)
    names = name_graph(graph, knobs.names, stable_rng(f"{knobs.graph_key()}|names={knobs.names}"))
    core = graph.role("core")
    chain = len(core) == knobs.depth + 1
    task: dict[str, Any] = {
        "id": TASK_ID,
        "title": f"Find {names.variables[graph.target]}",
        "prompt": _prompt(graph, names),
        "answer": {"value": graph.variables[graph.target].value, "match": "numeric", "tolerance": 0},
        "workflow": "sequential" if chain else "mixed",
        "golden_path": _golden_path(graph, names),
    }
    if knobs.restate:
        task["restate_known"] = dict(sorted((names.variables[v], graph.variables[v].value) for v in graph.sources))
    tools = sorted((_tool(f, graph, names, knobs.restate) for f in graph.functions), key=lambda t: t["name"])
    scenario = {
        "format": 1,
        "id": scenario_id(knobs),
        "title": (
            f"Function graph: {knobs.core} core functions, depth {knobs.depth}, {knobs.connected} connected "
            f"and {knobs.disconnected} disconnected distractors (seed {knobs.seed})"
        ),
        "description": _description(knobs, graph, names),
        "tools": tools,
        "tasks": [task],
        "generated": {
            "generator_version": GENERATOR_VERSION, "command": knobs.command(), "core": knobs.core,
            "depth": knobs.depth, "connected": knobs.connected, "disconnected": knobs.disconnected,
            "names": knobs.names, "restate": knobs.restate, "problem": problem_id(knobs),
        },
    }  # fmt: skip
    return scenario, graph, names
