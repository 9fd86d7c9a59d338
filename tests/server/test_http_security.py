"""Who may use the HTTP server and what it tells them, through a real `mcp-hazard serve --http` subprocess.

Every route (not only the MCP endpoints) refuses a foreign Host or Origin, so a web page cannot reach the episode API
by DNS rebinding or a cross-site request; an optional bearer token guards every route; what an agent can read from the
REST routes never names its condition, hazards, answer, golden path or trace path.
"""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from conftest import HttpServer, start_http_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_hazard.agents.golden import run_golden_agent
from mcp_hazard.hazards.base import REGISTRY
from mcp_hazard.load import load_scenarios
from mcp_hazard.server.episode import SUBMIT_TOOL

pytestmark = pytest.mark.anyio

REPO_ROOT = Path(__file__).resolve().parents[2]
SCENARIOS_DIR = REPO_ROOT / "scenarios"
TOKEN = "s3cret-token-for-tests"
DEADLINE = 120.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
CREATE = {"scenario": "travel", "task": "fare-class", "seed": 1}


def _stop(server: HttpServer) -> None:
    if server.process.poll() is None:
        with contextlib.suppress(AssertionError):
            server.stop(signal.SIGTERM)


@pytest.fixture
def token_server(tmp_path: Path) -> Iterator[HttpServer]:
    """A server started with --token."""
    server = start_http_server(tmp_path / "traces", tmp_path / "logs", extra=("--token", TOKEN))
    try:
        yield server
    finally:
        _stop(server)


def _routes(base: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """(method, url, JSON body) for every route the server has."""
    return [
        ("GET", f"{base}/episodes", None),
        ("POST", f"{base}/episodes", CREATE),
        ("GET", f"{base}/episodes/some-id", None),
        ("DELETE", f"{base}/episodes/some-id", None),
        ("GET", f"{base}/scenarios", None),
        ("POST", f"{base}/episodes/some-id/mcp?scenario=travel&task=fare-class", INITIALIZE),
        ("GET", f"{base}/episodes/some-id/mcp", None),
    ]


def _one_line_error(response: httpx.Response) -> str:
    assert response.headers["content-type"].startswith("application/json"), response.text
    message = response.json()["error"]
    assert isinstance(message, str) and "\n" not in message and "Traceback" not in response.text
    return message


async def _episode_count(http: httpx.AsyncClient, base: str, headers: dict[str, str] | None = None) -> int:
    listed = await http.get(f"{base}/episodes?limit=1000", headers=headers)
    assert listed.status_code == 200, listed.text
    return len(listed.json()["episodes"])


# -- Host and Origin, on every route ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "value", "status"),
    [
        ("host", "evil.example", 421),
        ("host", "evil.example:80", 421),
        ("host", "127.0.0.1.evil.example:80", 421),
        ("origin", "http://evil.example", 403),
        ("origin", "http://localhost.evil.example:3000", 403),
        ("origin", "null", 403),
    ],
)
async def test_every_route_refuses_a_foreign_host_or_origin(
    http_server: HttpServer, header: str, value: str, status: int
) -> None:
    base = http_server.base_url
    async with httpx.AsyncClient(timeout=120) as http:
        before = await _episode_count(http, base)
        for method, url, body in _routes(base):
            headers = {**MCP_HEADERS, header: value}
            response = await http.request(method, url, headers=headers, content=json.dumps(body) if body else None)
            assert response.status_code == status, (method, url, response.status_code, response.text)
            assert "Host" in _one_line_error(response) or "Origin" in _one_line_error(response)
        assert await _episode_count(http, base) == before, "a refused request must not create an episode"
        assert (await http.get(f"{base}/scenarios")).status_code == 200, "the server keeps serving"


async def test_the_mcp_endpoint_refuses_other_methods_and_a_host_without_its_port(http_server: HttpServer) -> None:
    """MCP requests skip the router, so what the router used to decide is checked here: a PUT or PATCH is still a
    one-line 405, and the Host rule still wants the port (`127.0.0.1:*`), as the SDK's own check does."""
    base = http_server.base_url
    async with httpx.AsyncClient(timeout=120) as http:
        created = await http.post(f"{base}/episodes", json=CREATE)
        url = created.json()["mcp_url"]
        for method in ("PUT", "PATCH"):
            response = await http.request(method, url, headers=MCP_HEADERS, content=json.dumps(INITIALIZE))
            assert response.status_code == 405, (method, response.text)
            assert method in _one_line_error(response)
        response = await http.post(url, headers={**MCP_HEADERS, "host": "127.0.0.1"}, content=json.dumps(INITIALIZE))
        assert response.status_code == 421 and "Host" in _one_line_error(response)
        response = await http.post(url, headers={**MCP_HEADERS, "origin": f"{base}"}, content=json.dumps(INITIALIZE))
        assert response.status_code == 200, response.text  # its own origin is welcome


async def test_a_cross_site_form_post_cannot_create_an_episode(http_server: HttpServer) -> None:
    """A browser sends text/plain or form bodies cross-site without a preflight; only JSON creates an episode."""
    base = http_server.base_url
    async with httpx.AsyncClient(timeout=120) as http:
        before = await _episode_count(http, base)
        for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
            response = await http.post(
                f"{base}/episodes", content=json.dumps(CREATE), headers={"content-type": content_type}
            )
            assert response.status_code == 415, response.text
            assert "application/json" in _one_line_error(response)
        assert await _episode_count(http, base) == before


async def test_mcp_url_is_built_from_the_bound_address_not_the_host_header(http_server: HttpServer) -> None:
    """`localhost:1` passes the Host rule, but the URL handed back must still be the address the server listens on."""
    async with httpx.AsyncClient(timeout=120) as http:
        response = await http.post(f"{http_server.base_url}/episodes", json=CREATE, headers={"host": "localhost:1"})
        assert response.status_code == 201, response.text
        created = response.json()
        listed = await http.get(f"{http_server.base_url}/episodes/{created['episode_id']}", headers={"host": "[::1]:9"})
    expected = f"http://127.0.0.1:{http_server.port}/episodes/{created['episode_id']}/mcp"
    assert created["mcp_url"] == expected
    assert listed.json()["mcp_url"] == expected


# -- the bearer token -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        *(None, "", "Bearer", "bearer wrong", "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x"),
        *(f"Bearer {TOKEN[:-1]}", TOKEN, f"Bearer {TOKEN.upper()}"),
    ],
)
async def test_with_a_token_every_route_needs_it(token_server: HttpServer, authorization: str | None) -> None:
    base = token_server.base_url
    good = {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(timeout=120) as http:
        for method, url, body in _routes(base):
            headers = dict(MCP_HEADERS)
            if authorization is not None:
                headers["authorization"] = authorization
            response = await http.request(method, url, headers=headers, content=json.dumps(body) if body else None)
            assert response.status_code == 401, (method, url, response.text)
            assert "bearer token" in _one_line_error(response)
            assert response.headers["www-authenticate"] == "Bearer"
        assert await _episode_count(http, base, good) == 0
        assert (await http.get(f"{base}/scenarios", headers=good)).status_code == 200


async def test_with_a_token_the_sdk_client_plays_an_episode_and_without_it_cannot(
    token_server: HttpServer,
) -> None:
    """How a client passes the token: an httpx2 client with the header, handed to the SDK's HTTP transport."""
    scenario = next(s for s in load_scenarios([SCENARIOS_DIR]) if s.id == "travel")
    task = scenario.model.task("fare-class")
    assert task is not None
    good = {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(timeout=120) as http:
        created = (await http.post(f"{token_server.base_url}/episodes", json=CREATE, headers=good)).json()
    with anyio.fail_after(DEADLINE):
        for mode in ("legacy", "2026-07-28"):
            with pytest.raises(Exception):  # noqa: B017 - the SDK reports a 401 in its own words
                async with Client(created["mcp_url"], mode=mode) as client:
                    await client.list_tools()
        async with (
            httpx2.AsyncClient(headers=good, timeout=120) as http2,
            Client(streamable_http_client(created["mcp_url"], http_client=http2), mode="legacy") as client,
        ):
            report = await run_golden_agent(client, task)
    assert report.answer is not None
    async with httpx.AsyncClient(timeout=120) as http:
        url = f"{token_server.base_url}/episodes/{created['episode_id']}?detail=operator"
        shown = await http.get(url, headers=good)
    detail = shown.json()
    assert (detail["answered"], detail["ended"], detail["end_reason"]) == (True, True, "answered")
    assert detail["condition"]["seed"] == 1
    assert detail["trace"] == str(token_server.trace_dir / f"{created['episode_id']}.jsonl")
    assert Path(detail["trace"]).exists()


async def test_the_token_can_come_from_the_environment(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "MCP_HAZARD_TOKEN": TOKEN}
    server = start_http_server(tmp_path / "traces", tmp_path / "logs", env=env)
    try:
        async with httpx.AsyncClient(timeout=120) as http:
            refused = await http.get(f"{server.base_url}/scenarios")
            allowed = await http.get(f"{server.base_url}/scenarios", headers={"authorization": f"Bearer {TOKEN}"})
        assert (refused.status_code, allowed.status_code) == (401, 200)
        assert TOKEN not in server.stderr(), "the token is never printed"
    finally:
        _stop(server)


async def test_operator_detail_needs_a_configured_token(http_server: HttpServer) -> None:
    base = http_server.base_url
    async with httpx.AsyncClient(timeout=120) as http:
        created = (await http.post(f"{base}/episodes", json=CREATE)).json()
        for method, url in [
            ("GET", f"{base}/episodes?detail=operator"),
            ("GET", f"{base}/episodes/{created['episode_id']}?detail=operator"),
            ("DELETE", f"{base}/episodes/{created['episode_id']}?detail=operator"),
            ("POST", f"{base}/episodes?detail=operator"),
        ]:
            response = await http.request(method, url, json=CREATE if method == "POST" else None)
            assert response.status_code == 403, (method, url, response.text)
            assert "--token" in _one_line_error(response)
        odd = await http.get(f"{base}/episodes?detail=everything")
        assert odd.status_code == 400 and "operator" in _one_line_error(odd)
        assert (await http.get(f"{base}/episodes/{created['episode_id']}")).json()["ended"] is False


# -- nothing agent-facing gives the game away --------------------------------------------------------------------------

LEAK_HAZARDS = [
    ["transient_error:times=2"],
    ["spec_drift:mode=rename_tool"],
    ["output_drift:mode=reordered"],
    ["silent_wrong_value"],
    ["latency:ms=1", "permanent_error"],
    ["declared"],
]


def _scrub(value: Any) -> Any:
    """Drop the two fields that are the episode's own name (chosen by the caller), then look at everything else."""
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in ("episode_id", "mcp_url")}
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    return value


async def test_no_route_reveals_answer_golden_path_hazards_or_trace_paths(http_server: HttpServer) -> None:
    """Episodes with hazards, played to the end or left open; then every route, as the agent could call it."""
    base = http_server.base_url
    scenarios = load_scenarios([SCENARIOS_DIR])
    bodies: list[tuple[str, str]] = []
    secrets: set[str] = {str(http_server.trace_dir), ".jsonl", "hazard", "schedule", "golden", *REGISTRY}
    created_ids: list[str] = []

    async def keep(label: str, response: httpx.Response) -> None:
        try:
            data = _scrub(response.json())
        except ValueError:
            data = response.text
        bodies.append((label, json.dumps(data, ensure_ascii=False)))

    async with httpx.AsyncClient(timeout=120) as http:
        plays = counter = 0
        for scenario in scenarios:
            for task in scenario.model.tasks:
                secrets.update(step.tool for step in task.golden_path.steps)
                value = task.answer.value
                secrets.update(str(v) for v in (value if isinstance(value, list) else [value]) if v not in (None, ""))
                counter += 1
                for hazards in (LEAK_HAZARDS[counter % 6], LEAK_HAZARDS[(counter + 3) % 6]):
                    payload = {"scenario": scenario.id, "task": task.id, "seed": 7, "hazards": hazards}
                    response = await http.post(f"{base}/episodes", json=payload)
                    if response.status_code == 400:  # a hazard that applies to no tool of this task
                        continue
                    assert response.status_code == 201, response.text
                    await keep("POST /episodes", response)
                    created = response.json()
                    created_ids.append(created["episode_id"])
                    if plays < 6:  # play some to the end, so ended/answered episodes are listed too
                        plays += 1
                        with anyio.fail_after(DEADLINE):
                            async with Client(created["mcp_url"], mode="legacy") as client:
                                with contextlib.suppress(Exception):
                                    await run_golden_agent(client, task)
                                await client.call_tool(SUBMIT_TOOL, {"answer": "a guess"})
        assert len(created_ids) >= 8
        cursor: str | None = None
        while True:
            query = f"?limit=7&cursor={cursor}" if cursor else "?limit=7"
            page = await http.get(f"{base}/episodes{query}")
            await keep("GET /episodes", page)
            cursor = page.json()["next_cursor"]
            if cursor is None:
                break
        for episode_id in created_ids:
            await keep("GET /episodes/{id}", await http.get(f"{base}/episodes/{episode_id}"))
        await keep("DELETE /episodes/{id}", await http.delete(f"{base}/episodes/{created_ids[-1]}"))
        await keep("GET /scenarios", await http.get(f"{base}/scenarios"))
        await keep("dup POST", await http.post(f"{base}/episodes", json={**CREATE, "episode_id": created_ids[0]}))
        await keep("404 mcp", await http.get(f"{base}/episodes/never-made/mcp"))
    assert len(bodies) > len(created_ids)
    found = [
        (label, secret)
        for label, text in bodies
        for secret in secrets
        if len(secret) >= 3 and secret.lower() in text.lower()
    ]
    assert found == [], found[:10]
