"""The MCP reference test server (npm server-everything) behind the proxy: everything the hazards do not touch
passes through in both protocol eras (resources and templates, prompts, completion, logging, progress,
cancellation, the server's own errors), and hazards act on its tools reached over stdio and over Streamable HTTP."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from conftest import SERVER_STOP_TIMEOUT, free_port, start_http_server
from mcp import Client, StdioServerParameters

from .support import PROXIES, events, proxy_params

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),  # logging, passed on
]


async def _pass_through(client: Client, legacy: bool) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    resources = await client.list_resources()
    seen["resources"] = [str(r.uri) for r in resources.resources]
    read = await client.read_resource(resources.resources[0].uri)
    seen["read"] = read.contents[0]
    templates = await client.list_resource_templates()
    seen["templates"] = [t.uri_template for t in templates.resource_templates]
    prompts = await client.list_prompts()
    seen["prompts"] = [p.name for p in prompts.prompts]
    got = await client.get_prompt("args-prompt", {"city": "Paris", "state": "TX"})
    seen["prompt"] = got.messages[0].content
    reference = types.PromptReference(type="ref/prompt", name="completable-prompt")
    seen["completion"] = (await client.complete(reference, {"name": "department", "value": "E"})).completion.values
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    done = await client.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 4},
                                  progress_callback=on_progress)  # fmt: skip
    seen["progress"] = (done.is_error, progress)
    with anyio.move_on_after(1.0):
        await client.call_tool("trigger-long-running-operation", {"duration": 5, "steps": 5})
    refused = await client.call_tool("get-sum", {"a": "x"})
    seen["refused"] = (refused.is_error, refused.content[0].text if refused.content else "")  # type: ignore[union-attr]
    if legacy:
        await client.set_logging_level("debug")
    return seen


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_everything_the_hazards_do_not_touch_passes_through(
    tmp_path: Path, npm_servers: dict[str, Path], era: str
) -> None:
    # The same server, once directly and once through the proxy: what a client sees must be the same.
    direct = StdioServerParameters(command=str(npm_servers["everything"]), args=[])
    async with Client(direct, mode=era) as client:  # type: ignore[arg-type]
        expected = await _pass_through(client, era == "legacy")
    proxied = proxy_params("--upstream-cmd", str(npm_servers["everything"]), "--trace-dir", str(tmp_path),
                            "--episode-id", f"pass-{era}")  # fmt: skip
    async with Client(proxied, mode=era) as client:  # type: ignore[arg-type]
        assert client.server_info is not None and client.server_info.name == "mcp-servers/everything"
        seen = await _pass_through(client, era == "legacy")
    assert seen["progress"] == (False, [1.0, 2.0, 3.0, 4.0])
    assert seen == expected
    called = [e for e in events(tmp_path / f"pass-{era}.jsonl") if e["type"] == "tool_called"]
    outcomes = [(e["tool"], e["outcome"]) for e in called]
    assert outcomes == [("trigger-long-running-operation", "ok"), ("trigger-long-running-operation", "cancelled"),
                        ("get-sum", "invalid_arguments")]  # fmt: skip
    assert "Input validation error" in str(called[2]["error"])  # the server's own words, not ours


async def test_hazards_act_on_its_tools_and_announce_drift_in_both_eras(
    tmp_path: Path, npm_servers: dict[str, Path]
) -> None:
    for era in ("legacy", "auto"):
        params = proxy_params(
            str(PROXIES / "everything.yaml"), "--upstream-cmd", str(npm_servers["everything"]),
            "--hazard", "spec_drift:mode=renamed_field,tools=get-structured-content", "--hazard", "silent_wrong_value",
            "--trace-dir", str(tmp_path), "--episode-id", era,
        )  # fmt: skip
        changed: list[object] = []

        async def note(message: object, changed: list[object] = changed) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                changed.append(message)

        async with Client(params, mode=era, message_handler=note) as client:  # type: ignore[arg-type]
            listing = await client.list_tools()
            assert "submit_answer" in [t.name for t in listing.tools]  # the file has a task
            first = await client.call_tool("get-structured-content", {"location": "Chicago"})
            assert first.is_error and "interface has changed" in first.content[0].text  # type: ignore[union-attr]
            relisted = {t.name: t for t in (await client.list_tools()).tools}
            renamed = next(iter(relisted["get-structured-content"].input_schema["properties"]))
            reading = await client.call_tool("get-structured-content", {renamed: "Chicago"})
            again = await client.call_tool("get-structured-content", {renamed: "Chicago"})
            assert not reading.is_error and not again.is_error
            wrong, right = reading.structured_content, again.structured_content
            assert wrong != right and right == {"temperature": 36, "conditions": "Light rain / drizzle",
                                                "humidity": 82}  # fmt: skip
            await client.call_tool("submit_answer", {"answer": "36"})
        trace = events(tmp_path / f"{era}.jsonl")
        fired = [e["kind"] for e in trace if e["type"] == "hazard_fired"]
        assert fired == ["spec_drift", "silent_wrong_value"]
        ours = [e["delivered"] for e in trace if e["type"] == "list_changed" and "source" not in e]
        assert ours == [True]  # the drift's announcement (the server may announce changes of its own too)
        if era == "legacy":
            assert changed, "the legacy-era client heard list_changed"


@contextlib.contextmanager
def _everything_over_http(npm_servers: dict[str, Path], log: Path) -> Iterator[str]:
    """server-everything's own Streamable HTTP transport on a free port (it listens on every interface; this test
    only ever connects to 127.0.0.1)."""
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    with log.open("wb") as err:
        process = subprocess.Popen([str(npm_servers["everything"]), "streamableHttp"], env=env,
                                   stdin=subprocess.DEVNULL, stdout=err, stderr=err)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=0.5)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=SERVER_STOP_TIMEOUT)


async def test_a_streamable_http_upstream_behind_an_http_proxy_in_both_eras(
    tmp_path: Path, npm_servers: dict[str, Path]
) -> None:
    with _everything_over_http(npm_servers, tmp_path / "everything.log") as upstream:
        served = ("proxy", str(PROXIES / "everything.yaml"), "--upstream-url", upstream)
        proxy = start_http_server(tmp_path / "traces", tmp_path, served=served)
        try:
            async with httpx.AsyncClient(timeout=120, headers=proxy.auth) as http:
                for era in ("legacy", "auto"):
                    body = {"episode_id": f"h-{era}", "hazards": ["transient_error:tools=echo"]}
                    created = await http.post(f"{proxy.base_url}/episodes", json=body)
                    assert created.status_code == 201, created.text
                    assert "condition" not in created.json()  # the agent-facing view names no hazard
                    async with Client(created.json()["mcp_url"], mode=era) as client:  # type: ignore[arg-type]
                        results = [await client.call_tool("echo", {"message": "hi"}) for _ in range(3)]
                        assert [r.is_error for r in results] == [True, True, False]
                        assert results[2].content[0].text == "Echo: hi"  # type: ignore[union-attr]
                        uris = [str(r.uri) for r in (await client.list_resources()).resources]
                        assert uris[0] == "task://everything/chicago-temperature" and len(uris) == 1 + 7
                foreign = await http.post(f"{proxy.base_url}/episodes", json={}, headers={"Host": "evil.example"})
                assert foreign.status_code == 421
            trace = events(tmp_path / "traces" / "h-auto.jsonl")
            started = trace[0]
            assert started["upstream"]["via"] == {"url": upstream}  # type: ignore[index]
            assert [e["outcome"] for e in trace if e["type"] == "tool_called"] == ["rejected", "rejected", "ok"]
        finally:
            proxy.stop()
