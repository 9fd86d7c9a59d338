"""The scenario format as strict pydantic models: unknown keys are errors, and the JSON Schema comes from here."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from mcp_hazard.scenario.hazard_spec import HazardSpec

JSON = Any
"""Any JSON value (object, list, text, number, boolean or null)."""

Identifier = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]
ToolName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")]
StepId = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]
FieldPath = Annotated[str, Field(pattern=r"^(?:\$|[^.\s]+(?:\.[^.\s]+)*)$")]
"""A field of a tool's output, dotted through nested objects and lists (`stores.qty_available`); `$`: all of it."""


def _shape(value: Any, one: str, many: str) -> str | None:
    return many if isinstance(value, list) else one if isinstance(value, str) else None


FactFields = Annotated[
    Annotated[FieldPath, Tag("one")] | Annotated[list[FieldPath], Tag("many"), Field(min_length=1)],
    Discriminator(
        lambda value: _shape(value, "one", "many"),
        custom_error_type="fact_fields",
        custom_error_message="give the output field that carries the fact, or a list of fields",
    ),
]
Serves = Annotated[
    Annotated[list[Identifier], Tag("list")] | Annotated[dict[Identifier, FactFields], Tag("mapping")],
    Discriminator(
        lambda value: "list" if isinstance(value, list) else "mapping" if isinstance(value, dict) else None,
        custom_error_type="serves",
        custom_error_message="give a list of facts, or a mapping of each fact to the output field(s) that carry it",
    ),
]
"""`serves:` as written: fact names (the whole output carries each), or each fact with the fields that carry it."""

RESERVED_TOOL_NAMES = frozenset({"submit_answer"})


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Outcome(Strict):
    """What a behaviour gives back: a result (a template over the arguments) or an error message."""

    result: JSON = Field(default=None, description="The result; strings may contain {{ expressions }}.")
    error: str | None = Field(default=None, description="An error message; the call becomes an MCP isError result.")

    @model_validator(mode="before")
    @classmethod
    def _one_of(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("result" in data) == ("error" in data):
            raise ValueError("give exactly one of 'result' or 'error'")
        if isinstance(data, dict) and "error" in data and not isinstance(data["error"], str):
            raise ValueError("'error' must be a message (text)")
        return data


class TableRow(Outcome):
    when: dict[str, JSON] = Field(
        default_factory=dict, description="Arguments that must equal these values; arguments not named here match any."
    )


class TableBehaviour(Strict):
    """Rows of argument patterns: the first row whose `when` matches gives the outcome, else `default`."""

    kind: Literal["table"]
    rows: list[TableRow] = Field(min_length=1)
    default: Outcome
    casefold: bool = Field(default=False, description="Compare text arguments without regard to case and outer spaces.")


class ConstantBehaviour(Outcome):
    """The same outcome for every call (a template, so it may still echo arguments)."""

    kind: Literal["constant"]


class Guard(Strict):
    """An error returned when `if` (an expression over the arguments) is true; checked in order before the result."""

    if_: str = Field(alias="if")
    error: str

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ComputeBehaviour(Strict):
    """A result computed from the arguments with the expression language (docs/scenario-format.md)."""

    kind: Literal["compute"]
    let: dict[str, str] = Field(default_factory=dict, description="Named intermediate expressions, in order.")
    errors: list[Guard] = Field(default_factory=list)
    result: JSON


class PythonBehaviour(Strict):
    """A Python function `module:function(arguments) -> result`; only runs when the user passes --allow-python."""

    kind: Literal["python"]
    function: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


Behaviour = Annotated[
    TableBehaviour | ConstantBehaviour | ComputeBehaviour | PythonBehaviour, Field(discriminator="kind")
]


class Annotations(Strict):
    """MCP tool annotations (hints to the client, not guarantees)."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class Fallback(Strict):
    """A declared recovery path: another tool serving the same fact, and how to call it with this tool's arguments."""

    tool: ToolName
    arguments: dict[str, JSON] = Field(
        description="Arguments for the fallback tool; templates over this tool's arguments, e.g. {{ flight_id }}."
    )


class Replacement(Strict):
    """A declared equivalent of the tool for `--intervention replace`: another name and input schema, and where each
    original argument sits in the new arguments. Without one, replace derives an equivalent from synonyms."""

    name: ToolName
    description: str | None = Field(default=None, description="Served description (default: the tool's own).")
    input_schema: dict[str, JSON] = Field(description="JSON Schema of the new arguments; its type must be 'object'.")
    arguments: dict[str, str] = Field(
        description="Each original argument -> its place in the new arguments, dotted through nested objects "
        "(route.from)."
    )


class ToolSpec(Strict):
    name: ToolName
    title: str | None = None
    description: str = Field(min_length=1)
    input_schema: dict[str, JSON] = Field(description="JSON Schema of the arguments; its type must be 'object'.")
    output_schema: dict[str, JSON] | None = Field(
        default=None, description="JSON Schema of the result; results must then be objects that match it."
    )
    annotations: Annotations | None = None
    serves: Serves = Field(
        default_factory=list,
        description="Facts this tool serves; two tools serving one fact offer a fallback and a cross-check. A list "
        "names facts the whole output carries; a mapping gives each fact the output field(s) that carry it "
        "({flight_fare: price_eur}), and only a task that reads those fields can be served by another tool.",
    )
    behaviour: Behaviour
    fallbacks: list[Fallback] = Field(
        default_factory=list,
        description="Tools serving the same fact, with an argument mapping (default: same names, or the one key).",
    )
    hazards: list[HazardSpec] = Field(
        default_factory=list, description="Hazards offered for this tool (applied with --hazard declared)."
    )
    replacement: Replacement | None = Field(
        default=None, description="The equivalent served under --intervention replace (default: derived)."
    )
    effect: Literal["read", "write"] = Field(
        default="read",
        description="write: a call changes something (books, sends, pays), so calling it twice does it twice. Not "
        "served; the lost_response hazard acts on writes.",
    )
    checked_by: list[ToolName] = Field(
        default_factory=list,
        description="For a write: the tools whose results show whether a call of it went through (the recovery "
        "path of lost_response: check, then repeat only if it did not). Not served.",
    )


class AnswerSpec(Strict):
    """The canonical answer and how a submitted answer is matched against it (docs/scenario-format.md)."""

    value: JSON
    match: Literal["exact", "case_insensitive", "numeric", "one_of", "unordered_list"] = "exact"
    tolerance: float = Field(default=0.0, ge=0, description="For 'numeric': the largest accepted absolute difference.")

    @model_validator(mode="after")
    def _value_fits_rule(self) -> AnswerSpec:
        if self.match in ("one_of", "unordered_list") and not (isinstance(self.value, list) and self.value):
            raise ValueError(f"match '{self.match}' needs a non-empty list as value")
        if self.match == "numeric" and (isinstance(self.value, bool) or not isinstance(self.value, int | float)):
            raise ValueError("match 'numeric' needs a number as value")
        return self


class GoldenStep(Strict):
    id: StepId
    tool: ToolName
    arguments: dict[str, JSON] = Field(
        default_factory=dict, description="Arguments; strings may refer to earlier steps' results, e.g. {{ s1.id }}."
    )


class GoldenPath(Strict):
    """Reference tool calls that reach the answer. For the scorer and reference agents only: never served."""

    steps: list[GoldenStep] = Field(min_length=1)
    answer: JSON = Field(description="Template over the step results that yields the final answer.")


class Task(Strict):
    id: Identifier
    title: str | None = None
    prompt: str = Field(min_length=1)
    answer: AnswerSpec
    workflow: Literal["sequential", "parallel", "mixed"]
    tools: list[ToolName] | None = Field(default=None, description="Tools served for this task; default all.")
    golden_path: GoldenPath
    hazards: list[HazardSpec] = Field(
        default_factory=list, description="Hazards offered for this task (applied with --hazard declared)."
    )
    restate_known: dict[str, JSON] | None = Field(
        default=None,
        description="Restatement (FuncBenchGen's mitigation): when set, every successful result that is an object "
        "also carries `known_values`, every variable value known so far: these given values, then every top-level "
        "field of the episode's successful results, latest first-seen order.",
    )


class Generated(Strict):
    """What `mcp-hazard generate` made a scenario from, so the scorer can pair and group generated tasks."""

    generator_version: int
    command: str
    core: int = Field(ge=1, description="Core functions (the golden path's calls).")
    depth: int = Field(ge=0, description="Dependency depth: edges on the longest path of core functions.")
    connected: int = Field(ge=0)
    disconnected: int = Field(ge=0)
    names: str = Field(description="The name policy.")
    restate: bool = False
    problem: Identifier = Field(
        description="The same for every name policy and restatement setting of one graph: what pairs them."
    )


class SuiteTag(Strict):
    """The benchmark suite a scenario belongs to; every report records it with the suite's content hash."""

    name: Identifier
    version: str = Field(min_length=1, max_length=32, pattern=r"^[0-9A-Za-z][0-9A-Za-z.+-]*$")


class Scenario(Strict):
    """One tool environment and its tasks."""

    tool_facts: ClassVar[Any] = None
    """What answers the hazard kinds' questions about this kind of environment's tools (a class taking the scenario);
    None: the scenario's own answers (hazards/tool_facts.py)."""

    format: Literal[1] = Field(default=1, description="Version of this file format.")
    id: Identifier
    title: str = Field(min_length=1)
    description: str = ""
    tools: list[ToolSpec] = Field(min_length=1)
    tasks: list[Task] = Field(min_length=1)
    generated: Generated | None = Field(default=None, description="Set by `mcp-hazard generate`; never served.")
    suite: SuiteTag | None = Field(default=None, description="The suite this scenario belongs to; never served.")

    def tool(self, name: str) -> ToolSpec | None:
        return next((tool for tool in self.tools if tool.name == name), None)

    def task(self, task_id: str) -> Task | None:
        for task in self.tasks:  # a plain loop: asked once per scored episode, and a generator costs a frame
            if task.id == task_id:
                return task
        return None

    def task_tools(self, task: Task) -> list[ToolSpec]:
        """The tools served for `task`, in the order the scenario lists them."""
        if task.tools is None:
            return list(self.tools)
        wanted = set(task.tools)
        return [tool for tool in self.tools if tool.name in wanted]


def scenario_json_schema() -> dict[str, Any]:
    schema = Scenario.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "mcp-hazard scenario"
    return schema
