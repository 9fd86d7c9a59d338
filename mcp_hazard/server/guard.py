"""The guarded harness (profile `guarded`): ToolBench-X's harness rule, "block premature completion when evidence is
incomplete or contradictory, and require final-answer canonicalization before FINISH" (paper 004, table 12).

`submit_answer` is refused, with a reason the agent sees and an `answer_refused` trace event, while

- the evidence is incomplete: a golden-path step has had no successful call of its tool or of a tool that stands in
  for it, serving the facts the task reads from it (the scorer's premature rule (a), docs/scoring.md); the reason
  names the tools the agent itself called without success, never a tool it has not met, so the golden path is not
  served;
- the evidence is contradictory: a `conflict` fired and no tool standing in for it has answered since (rule (b));
- the answer names no single value of the kind the task expects (the scorer's extraction: no candidate, or several).

Otherwise the answer is accepted in canonical form: markers stripped, the one value the sentence asserts, a number
written plainly. Errors and hints are those of the strict profile. The harness knows what the benchmark knows (the
golden path, the hazards that fired), as the paper's patched modules do; that is what a user measures against
strict and guided.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp_hazard.scenario.answers import (
    answer_fields,
    answer_vocabulary,
    canonical_text,
    field_values,
    judge_answer,
    parse_number,
    strip_markers,
)
from mcp_hazard.scenario.models import Scenario, Task
from mcp_hazard.scenario.serves import step_stand_ins, tool_stand_ins


@dataclass
class Refusal:
    reason: str
    missing: list[str] = field(default_factory=list)


class Guard:
    def __init__(self, scenario: Scenario, task: Task) -> None:
        self.scenario = scenario
        self.task = task
        self.steps = [
            (step.tool, {step.tool, *others})
            for step, others in zip(task.golden_path.steps, step_stand_ins(scenario, task), strict=True)
        ]
        self.succeeded: set[str] = set()
        self.failed: set[str] = set()
        self.conflicts: set[str] = set()
        self.fields = answer_fields(task)
        self.seen: set[str] = set(answer_vocabulary(scenario, task))

    def fired(self, kind: str, tool: str) -> None:
        if kind == "conflict":
            self.conflicts.add(tool)

    def called(self, tool: str, outcome: str, result: Any) -> None:
        if outcome != "ok":
            self.failed.add(tool)
            return
        self.succeeded.add(tool)
        self.conflicts = {c for c in self.conflicts if tool not in tool_stand_ins(self.scenario, self.task, c)}
        if self.fields:
            field_values(result, self.fields, self.seen)

    def check(self, answer: Any) -> tuple[Refusal | None, Any]:
        """(a refusal, None) or (None, the canonical answer)."""
        missing = [(tool, accepted) for tool, accepted in self.steps if accepted.isdisjoint(self.succeeded)]
        if missing:
            tried = sorted({tool for _, accepted in missing for tool in accepted} & self.failed)
            told = f": {', '.join(tried)} has not yet returned a result" if tried else ""
            return Refusal(
                "Answer refused: the evidence is incomplete; not every fact the task needs has been read"
                f"{told}. Get the missing facts, then submit again.",
                sorted({tool for tool, _ in missing}),
            ), None
        if self.conflicts:
            tools = ", ".join(sorted(self.conflicts))
            return Refusal(
                f"Answer refused: the evidence is contradictory; the result of {tools} has not been cross-checked "
                "against another tool that serves the same fact. Check it, then submit again."
            ), None
        verdict = judge_answer(self.task.answer, answer, prompt=self.task.prompt, vocabulary=frozenset(self.seen))
        if verdict.rule == "no_candidate":
            return Refusal("Answer refused: it names no value of the kind the task asks for. Submit the value."), None
        if verdict.rule == "ambiguous":
            return Refusal(f"Answer refused: it names several values ({', '.join(verdict.named)}); submit one."), None
        return None, self._canonical(answer, verdict.extracted, verdict.gave_up)

    def _canonical(self, answer: Any, extracted: Any, gave_up: bool) -> Any:
        if gave_up or not isinstance(answer, str):
            return answer
        text = extracted if isinstance(extracted, str) and extracted else strip_markers(canonical_text(answer))
        if self.task.answer.match == "numeric":
            number = parse_number(text)
            if number is not None:
                return str(int(number)) if number.is_integer() else repr(number)
        return text
