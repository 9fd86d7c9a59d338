"""The task a proxy serves beside the server's own offer, the same on both of its paths (the SDK server in app.py and
the frame relay in relay.py): the prompt `task`, the task's resource, their entries in the lists, and the
instructions that point to them. Reading either is recorded in the trace."""

from __future__ import annotations

import mcp_types as types

from mcp_hazard.proxy.proxied_episode import ProxyEpisode
from mcp_hazard.server.app import INSTRUCTIONS
from mcp_hazard.server.served_episode import TASK_PROMPT_NAME


def prompt_entry(episode: ProxyEpisode) -> types.Prompt:
    """The task's entry in `prompts/list`."""
    return types.Prompt(name=TASK_PROMPT_NAME, title=episode.task.title, description="The task to solve.")


def resource_entry(episode: ProxyEpisode) -> types.Resource:
    """The task's entry in `resources/list`."""
    return types.Resource(name="task", uri=episode.task_uri(), mime_type="text/plain", description="The task to solve.")


def read_prompt(episode: ProxyEpisode) -> types.GetPromptResult:
    """The prompt `task`, its reading recorded."""
    episode.record_task_read("prompt")
    text = types.TextContent(type="text", text=episode.prompt_text())
    return types.GetPromptResult(description=episode.task.title,
                                 messages=[types.PromptMessage(role="user", content=text)])  # fmt: skip


def read_resource(episode: ProxyEpisode) -> types.ReadResourceResult:
    """The task's resource, its reading recorded."""
    episode.record_task_read("resource")
    text = types.TextResourceContents(uri=episode.task_uri(), mime_type="text/plain",
                                      text=episode.prompt_text())  # fmt: skip
    return types.ReadResourceResult(contents=[text])


def with_instructions(instructions: str | None) -> str:
    """The server's own instructions, then ours: how to read the task and submit the answer."""
    return ((instructions or "") + "\n\n" + INSTRUCTIONS).strip()
