"""Who may use the HTTP server and what it tells them, through a real `mcp-hazard serve --http` subprocess.

Every route (not only the MCP endpoints) refuses a foreign Host or Origin, so a web page cannot reach the episode API
by DNS rebinding or a cross-site request; the control token guards every route but the index and the MCP endpoints,
which take their episode's key (or the token); what the REST routes show without operator detail never names an
episode's condition, hazards, answer, golden path or trace path. tests/security/test_http.py holds the attacks.
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
from conftest import TEST_TOKEN, WAIT_S, HttpServer, run_main, start_http_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_hazard.agents.golden import run_golden_agent
from mcp_hazard.hazards.base import REGISTRY
from mcp_hazard.load import load_scenarios
from mcp_hazard.server.served_episode import SUBMIT_TOOL

pytestmark = pytest.mark.anyio

REPO_ROOT = Path(__file__).resolve().parents[2]
SCENARIOS_DIR = REPO_ROOT / "scenarios"
TOKEN = TEST_TOKEN
GOOD = {"authorization": f"Bearer {TOKEN}"}
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
def open_server(tmp_path: Path) -> Iterator[HttpServer]:
    """A server started with --no-token: the control plane open to anyone who reaches it."""
    server = start_http_server(tmp_path / "traces", tmp_path / "logs", token=None, extra=("--no-token",))
    try:
        yield server
    finally:
        _stop(server)


def _control_routes(base: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """(method, url, JSON body) for every route of the control plane."""
    return [
        ("GET", f"{base}/episodes", None),
        ("POST", f"{base}/episodes", CREATE),
        ("GET", f"{base}/episodes/some-id", None),
        ("DELETE", f"{base}/episodes/some-id", None),
        ("GET", f"{base}/scenarios", None),
        ("GET", f"{base}/no-such-route", None),
    ]


def _mcp_routes(base: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    return [
        ("POST", f"{base}/episodes/some-id/mcp?scenario=travel&task=fare-class", INITIALIZE),
        ("GET", f"{base}/episodes/some-id/mcp", None),
    ]


def _routes(base: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """(method, url, JSON body) for every route the server has."""
    return [("GET", f"{base}/", None), *_control_routes(base), *_mcp_routes(base)]


def _one_line_error(response: httpx.Response) -> str:
    assert response.headers["content-type"].startswith("application/json"), response.text
    message = response.json()["error"]
    assert isinstance(message, str) and "\n" not in message and "Traceback" not in response.text
    return message


async def _episode_count(http: httpx.AsyncClient, base: str, headers: dict[str, str] | None = GOOD) -> int:
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
        ("host", "127.0.0.1:{port}@evil.example", 421),
        ("host", "127.0.0.1:{port} evil", 421),
        ("origin", "http://evil.example", 403),
        ("origin", "http://localhost.evil.example:3000", 403),
        ("origin", "null", 403),
        ("origin", "http://127.0.0.1:{port}.evil", 403),
    ],
)
async def test_every_route_refuses_a_foreign_host_or_origin(
    http_server: HttpServer, header: str, value: str, status: int
) -> None:
    """Refused before the token is looked at: the requests carry it, and still get nothing."""
    base = http_server.base_url
    value = value.format(port=http_server.port)
    async with httpx.AsyncClient(timeout=120) as http:
        before = await _episode_count(http, base)
        for method, url, body in _routes(base):
            headers = {**MCP_HEADERS, **GOOD, header: value}
            response = await http.request(method, url, headers=headers, content=json.dumps(body) if body else None)
            assert response.status_code == status, (method, url, response.status_code, response.text)
            assert "Host" in _one_line_error(response) or "Origin" in _one_line_error(response)
        assert await _episode_count(http, base) == before, "a refused request must not create an episode"
        assert (await http.get(f"{base}/scenarios", headers=GOOD)).status_code == 200, "the server keeps serving"


async def test_the_mcp_endpoint_refuses_other_methods_and_a_host_without_its_port(http_server: HttpServer) -> None:
    """MCP requests skip the router, so what the router used to decide is checked here: a PUT or PATCH is still a
    one-line 405, and the Host rule still wants the port (`127.0.0.1:*`), as the SDK's own check does."""
    base = http_server.base_url
    async with httpx.AsyncClient(timeout=120) as http:
        created = await http.post(f"{base}/episodes", json=CREATE, headers=GOOD)
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
            response = await http.post(  # even with the token, which a cross-site page would not have
                f"{base}/episodes", content=json.dumps(CREATE), headers={"content-type": content_type, **GOOD}
            )
            assert response.status_code == 415, response.text
            assert "application/json" in _one_line_error(response)
        assert await _episode_count(http, base) == before


async def test_mcp_url_is_built_from_the_bound_address_not_the_host_header(http_server: HttpServer) -> None:
    """`localhost:1` passes the Host rule, but the URL handed back must still be the address the server listens on."""
    async with httpx.AsyncClient(timeout=120, headers=GOOD) as http:
        response = await http.post(f"{http_server.base_url}/episodes", json=CREATE, headers={"host": "localhost:1"})
        assert response.status_code == 201, response.text
        created = response.json()
        listed = await http.get(f"{http_server.base_url}/episodes/{created['episode_id']}", headers={"host": "[::1]:9"})
    expected = f"http://127.0.0.1:{http_server.port}/episodes/{created['episode_id']}/mcp?key="
    assert created["mcp_url"].startswith(expected)
    assert listed.json()["mcp_url"] == created["mcp_url"]


# -- the control token and the episode keys ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        *(None, "", "Bearer", "bearer wrong", "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x"),
        *(f"Bearer {TOKEN[:-1]}", TOKEN, f"Bearer {TOKEN.upper()}"),
    ],
)
async def test_every_control_route_needs_the_token_and_every_mcp_route_a_key(
    http_server: HttpServer, authorization: str | None
) -> None:
    """A wrong token is no token: 401 on the control routes; 404 on the MCP routes (they take a key), without
    creating anything; the index alone answers."""
    base = http_server.base_url
    async with httpx.AsyncClient(timeout=120) as http:
        before = await _episode_count(http, base)
        for method, url, body in _routes(base):
            headers = dict(MCP_HEADERS)
            if authorization is not None:
                headers["authorization"] = authorization
            response = await http.request(method, url, headers=headers, content=json.dumps(body) if body else None)
            if url == f"{base}/":
                assert response.status_code == 200 and response.json()["token_required"] is True
            elif "/mcp" in url:
                assert response.status_code == 404, (method, url, response.text)
                assert "no episode at this URL" in _one_line_error(response)
            else:
                assert response.status_code == 401, (method, url, response.text)
                assert "control token" in _one_line_error(response)
                assert response.headers["www-authenticate"] == "Bearer"
        assert await _episode_count(http, base) == before
        assert (await http.get(f"{base}/scenarios", headers=GOOD)).status_code == 200
        assert (await http.get(f"{base}/scenarios?token={TOKEN}")).status_code == 200, "?token= as Jupyter's"


async def test_the_sdk_client_plays_with_its_mcp_url_alone_and_no_other_url_reaches_the_episode(
    http_server: HttpServer,
) -> None:
    """The key in mcp_url is all an agent's client needs, in both eras; the URL without it, with another episode's,
    or with its episode's key on another episode is refused; the operator reaches any episode with the token."""
    scenario = next(s for s in load_scenarios([SCENARIOS_DIR]) if s.id == "travel")
    task = scenario.model.task("fare-class")
    assert task is not None
    async with httpx.AsyncClient(timeout=120, headers=GOOD) as http:
        created = [(await http.post(f"{http_server.base_url}/episodes", json=CREATE)).json() for _ in range(3)]
    mine, other, third = created
    bare = mine["mcp_url"].partition("?")[0]
    other_key = other["mcp_url"].partition("?")[2]
    with anyio.fail_after(DEADLINE):
        for mode in ("legacy", "2026-07-28"):
            for url in (bare, f"{bare}?{other_key}", f"{bare}?key=", f"{bare}?key={'A' * 22}"):
                with pytest.raises(Exception):  # noqa: B017 - the SDK reports the 404 in its own words
                    async with Client(url, mode=mode) as client:
                        await client.list_tools()
        async with Client(mine["mcp_url"], mode="legacy") as client:
            report = await run_golden_agent(client, task)
        async with Client(other["mcp_url"], mode="2026-07-28") as client:
            assert [t.name for t in (await client.list_tools()).tools]
        async with (
            httpx2.AsyncClient(headers=GOOD, timeout=30) as http2,
            Client(streamable_http_client(third["mcp_url"].partition("?")[0], http_client=http2)) as client,
        ):
            assert [t.name for t in (await client.list_tools()).tools], "the operator's token opens any episode"
    assert report.answer is not None
    async with httpx.AsyncClient(timeout=120, headers=GOOD) as http:
        shown = await http.get(f"{http_server.base_url}/episodes/{mine['episode_id']}?detail=operator")
    detail = shown.json()
    assert (detail["answered"], detail["ended"], detail["end_reason"]) == (True, True, "answered")
    assert detail["condition"]["seed"] == 1
    assert detail["trace"] == str(http_server.trace_dir / f"{mine['episode_id']}.jsonl")
    assert Path(detail["trace"]).exists()


async def test_the_token_can_come_from_the_environment(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "MCP_HAZARD_TOKEN": "from-the-environment"}
    server = start_http_server(tmp_path / "traces", tmp_path / "logs", env=env, token=None)
    try:
        async with httpx.AsyncClient(timeout=120) as http:
            refused = await http.get(f"{server.base_url}/scenarios")
            allowed = await http.get(
                f"{server.base_url}/scenarios", headers={"authorization": "Bearer from-the-environment"}
            )
        assert (refused.status_code, allowed.status_code) == (401, 200)
        assert "from-the-environment" not in server.stderr(), "a token the user gave is never printed"
    finally:
        _stop(server)


async def test_without_a_token_flag_one_is_generated_and_printed_once(tmp_path: Path) -> None:
    """As Jupyter does: a fresh token from `secrets`, printed once with a curl command that works as shown."""
    servers = [start_http_server(tmp_path / f"traces{n}", tmp_path / f"logs{n}", token=None) for n in range(2)]
    try:
        tokens = []
        for server in servers:
            deadline = anyio.current_time() + DEADLINE
            while "curl -H" not in server.stderr() and anyio.current_time() < deadline:
                await anyio.sleep(0.05)
            lines = server.stderr().splitlines()
            told = [line for line in lines if "control token (generated" in line]
            assert len(told) == 1, lines
            token = told[0].rsplit(" ", 1)[1]
            assert len(token) >= 32 and sum(token in line for line in lines) == 2, lines  # the line and the curl
            tokens.append(token)
            async with httpx.AsyncClient(timeout=120) as http:
                assert (await http.get(f"{server.base_url}/episodes")).status_code == 401
                ok = await http.get(f"{server.base_url}/episodes", headers={"authorization": f"Bearer {token}"})
                assert ok.status_code == 200, ok.text
        assert tokens[0] != tokens[1]
    finally:
        for server in servers:
            _stop(server)


async def test_no_token_opens_the_control_plane_with_a_warning_and_operator_detail_stays_closed(
    open_server: HttpServer,
) -> None:
    base = open_server.base_url
    warnings: list[str] = []
    with anyio.move_on_after(WAIT_S):  # the server may answer before its stderr reaches the file
        while not warnings:
            warnings = [line for line in open_server.stderr().splitlines() if "--no-token" in line]
            await anyio.sleep(0.05)
    assert len(warnings) == 1 and "anyone" in warnings[0], open_server.stderr()
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
            assert "--no-token" in _one_line_error(response)
        odd = await http.get(f"{base}/episodes?detail=everything")
        assert odd.status_code == 400 and "operator" in _one_line_error(odd)
        assert (await http.get(f"{base}/episodes/{created['episode_id']}")).json()["ended"] is False
        lazy = await http.post(f"{base}/episodes/open-lazy/mcp?scenario=travel", headers=MCP_HEADERS, json=INITIALIZE)
        assert lazy.status_code == 200, lazy.text


@pytest.mark.parametrize(
    ("flags", "needle"),
    [(("--token", "x", "--no-token"), "contradict"), (("--token", ""), "empty"), (("--token", "  "), "empty")],
)
def test_contradictory_or_empty_token_flags_are_one_line_and_exit_2(
    tmp_path: Path, flags: tuple[str, ...], needle: str
) -> None:
    done = run_main("serve", str(SCENARIOS_DIR), "--http", "127.0.0.1:0", *flags, cwd=tmp_path)  # refused: no server
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcp-hazard: error: ") and needle in lines[0], lines


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
    """Drop the two fields that are the episode's own name (chosen by the caller) and a file's sha256 (hex, which can
    hold an answer's digits by chance), then look at everything else."""
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in ("episode_id", "mcp_url", "sha256")}
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    return value


async def test_no_route_reveals_answer_golden_path_hazards_or_trace_paths(http_server: HttpServer) -> None:
    """Episodes with hazards, played to the end or left open; then every route without operator detail."""
    base = http_server.base_url
    scenarios = load_scenarios([SCENARIOS_DIR])
    bodies: list[tuple[str, str]] = []
    secrets: set[str] = {str(http_server.trace_dir), ".jsonl", "hazard", "schedule", "golden", *REGISTRY}
    created_ids: list[str] = []

    async def keep(label: str, response: httpx.Response) -> None:
        try:
            text = json.dumps(_scrub(response.json()), ensure_ascii=False)
        except ValueError:
            text = response.text
        for episode_id in created_ids:  # an id is random hex: '182' may be part of one by chance
            text = text.replace(episode_id, "<episode id>")
        bodies.append((label, text))

    async with httpx.AsyncClient(timeout=120, headers=GOOD) as http:
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
        async with httpx.AsyncClient(timeout=30) as stranger:
            await keep("404 mcp without a key", await stranger.get(f"{base}/episodes/{created_ids[0]}/mcp"))
    assert len(bodies) > len(created_ids)
    found = [
        (label, secret)
        for label, text in bodies
        for secret in secrets
        if len(secret) >= 3 and secret.lower() in text.lower()
    ]
    assert found == [], found[:10]
