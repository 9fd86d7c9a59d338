"""Episode and agent names are checked whole (fullmatch): a trailing newline, a NUL, a look-alike letter, a path
separator or 10 kB of text is refused with a one-line 400 wherever a name enters, and the server keeps serving."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import anyio
import httpx
import pytest
from conftest import WAIT_S, run_main
from mcp import Client

from mcp_hazard.server.episodes import valid_id
from mcp_hazard.server.served_episode import SUBMIT_TOOL

from .http_support import OPERATOR, TRAVEL, serving, travel_registry

pytestmark = pytest.mark.anyio

BAD_IDS = {
    "trailing-newline": "abc\n",
    "trailing-crlf": "abc\r\n",
    "inner-newline": "ab\nc",
    "nul": "abc\x00",
    "cyrillic-a": "\u0430bc",  # looks like 'abc'
    "fullwidth-digit": "run\uff11",
    "dotless-i": "\u0131d",
    "parent-dir": "../x",
    "slash": "a/b",
    "backslash": "a\\b",
    "dot-first": ".hidden",
    "dash-first": "-x",
    "space": "a b",
    "empty": "",
    "129-chars": "a" * 129,
    "10kB": "a" * 10_000,
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


def test_the_rule_is_anchored_at_both_ends() -> None:
    assert valid_id("abc") and valid_id("a" * 128) and valid_id("run-1.seed_2")
    assert not any(valid_id(bad) for bad in BAD_IDS.values())
    assert not valid_id(7) and not valid_id(None)


def _one_line_400(response: httpx.Response, where: str) -> None:
    assert response.status_code == 400, (where, response.status_code, response.text[:300])
    message = response.json()["error"]
    assert isinstance(message, str) and "\n" not in message and len(message) < 400, (where, message)


async def test_every_way_a_name_enters_refuses_bad_ones_and_the_server_keeps_serving(tmp_path: Path) -> None:
    registry = travel_registry(tmp_path, ttl=None)
    tried = 0
    with anyio.fail_after(WAIT_S):
        async with serving(registry) as base, httpx.AsyncClient(timeout=WAIT_S, headers=OPERATOR) as http:
            for label, bad in BAD_IDS.items():
                body = {"scenario": "travel", "task": "fare-class"}
                _one_line_400(await http.post(f"{base}/episodes", json={**body, "episode_id": bad}), f"POST {label}")
                _one_line_400(await http.post(f"{base}/episodes", json={**body, "agent": bad}), f"agent {label}")
                tried += 2
                if not bad:
                    continue  # an empty path segment is another route, tried below
                path = quote(bad, safe="")
                for method in ("GET", "DELETE"):
                    _one_line_400(await http.request(method, f"{base}/episodes/{path}"), f"{method} {label}")
                    tried += 1
                created = await http.post(
                    f"{base}/episodes/{path}/mcp?scenario=travel&task=fare-class", headers=MCP_HEADERS, json=INITIALIZE
                )
                _one_line_400(created, f"lazy {label}")
                _one_line_400(await http.get(f"{base}/episodes/{path}/mcp", headers=MCP_HEADERS), f"mcp {label}")
                tried += 2
            empty = await http.get(f"{base}/episodes//mcp", headers=MCP_HEADERS)
            assert empty.status_code in (400, 404) and "\n" not in empty.json()["error"]
            assert registry.episodes == {}, "no refused name left an episode behind"
            good = await http.post(f"{base}/episodes", json={"scenario": "travel", "episode_id": "still-fine"})
            assert good.status_code == 201, good.text
            async with Client(good.json()["mcp_url"], mode="legacy") as client:
                assert (await client.call_tool(SUBMIT_TOOL, {"answer": "Standard"})).is_error is not True
    assert tried == 2 * len(BAD_IDS) + 4 * (len(BAD_IDS) - 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["still-fine.jsonl"], "no file named after a bad id"


@pytest.mark.parametrize("label", ["trailing-newline", "nul-free-slash", "cyrillic-a", "10kB"])
def test_stdio_serve_refuses_a_bad_episode_id_in_one_line(tmp_path: Path, label: str) -> None:
    bad = {"nul-free-slash": "../x", **BAD_IDS}[label]
    result = run_main("serve", str(TRAVEL), "--trace-dir", str(tmp_path), "--episode-id", bad)  # no process needed
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "episode id" in lines[0] and "Traceback" not in result.stderr, result.stderr
    assert list(tmp_path.iterdir()) == []
