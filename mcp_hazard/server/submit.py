"""The `submit_answer` tool every task's episode serves, as its agent sees it. Plain values, no SDK: scoring reads
the description (an answer that copies it names no value) without importing the server.
"""

from __future__ import annotations

from typing import Any

SUBMIT_TOOL = "submit_answer"
SUBMIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "description": "Your final answer to the task, as text."}},
    "required": ["answer"],
    "additionalProperties": False,
}
SUBMIT_DESCRIPTION = (
    "Submit your final answer to the task. This ends the episode: call it once, when you are sure, "
    "with the answer in the form the task asks for."
)
ANSWER_RECEIVED = "Answer received. The episode is over."
