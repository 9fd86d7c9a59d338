"""The Python reference time server (mcp-server-time) behind the proxy: every hazard kind that can act on its tools
fires, is traced and is scored; the others are refused at load with why; a recorded run replays exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_main

from mcp_hazard.trace.events import comparable

from .support import PROXIES, events, made_once

pytestmark = pytest.mark.e2e

APPLICABLE = ["transient_error", "latency:seconds=3", "invocation_error", "spec_drift", "output_drift",
              "silent_wrong_value"]  # fmt: skip


def _rows(out: Path) -> list[dict[str, object]]:
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return list(report["per_episode"])


TASK = "tokyo-time"  # one task: a kind fires and is scored alike on either (both read convert_time)
RUN_FLAGS = ("--task", TASK, "--call-timeout", "1", "--no-progress", "--concurrency", "8")


@pytest.fixture(scope="module")
def live_run(tmp_path_factory: pytest.TempPathFactory, time_server: str) -> Path:
    """Every applicable kind (and clean) on the live time server over memory, the server's replies recorded in a
    cassette: one run, made once per session, for the scoring tests and the replay test."""

    def make(folder: Path) -> None:
        hazards = [arg for kind in APPLICABLE for arg in ("--hazard", kind)]
        done = run_main("run", str(PROXIES / "time.yaml"), "--upstream-cmd", time_server, "--transport", "memory",
                        "--record", str(folder / "time.cassette.jsonl"), "--out", str(folder / "run"), *RUN_FLAGS,
                        *hazards, cwd=REPO_ROOT)  # fmt: skip
        assert done.returncode == 0, done.stderr

    return made_once(tmp_path_factory, "time-live", make) / "run"


def test_every_applicable_kind_fires_and_is_scored_on_the_time_server(live_run: Path) -> None:
    rows = _rows(live_run)
    assert len(rows) == 2 * 1 * (1 + len(APPLICABLE))  # agents x task x (clean + each kind)
    for row in rows:
        kind = str(row["condition"]).split(":")[0]
        fired = row["hazards_fired"]
        if kind == "clean":
            assert fired == [] and row["correct"], row
            continue
        assert kind in fired, row  # it fired on the real server's tool
        if row["agent"] == "recovering":
            assert row["correct"] and kind in row["hazards_recovered"], row
        else:
            assert not row["correct"], row  # and it bites an agent that does not recover
    traces = list((live_run / "traces").glob("*.jsonl"))
    started = events(traces[0])[0]
    upstream = started["upstream"]
    assert isinstance(upstream, dict)
    assert upstream["name"] == "mcp-time" and {t["name"] for t in upstream["tools"]} == {
        "convert_time",
        "get_current_time",
    }


def test_a_run_through_the_proxy_scores_again_the_same_from_its_folder(live_run: Path, tmp_path: Path) -> None:
    rescored = run_main("score", str(live_run), "--per-episode", str(tmp_path / "again.jsonl"))
    assert rescored.returncode == 0, rescored.stderr
    again = [json.loads(line) for line in (tmp_path / "again.jsonl").read_text().splitlines()]
    assert sorted((r["episode_id"], r["correct"], r["hazards_recovered"]) for r in again) == sorted(
        (r["episode_id"], r["correct"], r["hazards_recovered"]) for r in _rows(live_run)
    )


@pytest.mark.parametrize(
    ("hazard", "why"),
    [
        ("permanent_error", "names no fallback for 'convert_time'"),
        ("conflict", "names no independent source for 'convert_time'"),
        ("pagination", "does not say which list of 'convert_time' to page"),
    ],
)
def test_kinds_that_cannot_act_on_its_tools_are_refused_with_why(
    tmp_path: Path, live_run: Path, hazard: str, why: str
) -> None:
    # Its tools as the live server listed them in the recorded run: replayed, no server started per refusal.
    cassette = live_run.parent / "time.cassette.jsonl"
    done = run_main("proxy", str(PROXIES / "time.yaml"), "--replay", str(cassette), "--hazard",
                    f"{hazard}:tools=convert_time", "--trace-dir", str(tmp_path))  # fmt: skip
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and why in lines[0] and "Traceback" not in done.stderr, done.stderr
    assert not list(tmp_path.glob("*.jsonl"))  # refused before any episode was written


def test_a_recorded_run_replays_without_the_server_and_gives_the_same_traces(live_run: Path, tmp_path: Path) -> None:
    cassette = live_run.parent / "time.cassette.jsonl"
    header = json.loads(cassette.read_text().splitlines()[0])
    assert header["cassette"] == 1 and header["upstream"]["name"] == "mcp-time"
    # A part of the recorded matrix (the recovering agent, clean and silent_wrong_value), replayed over another
    # transport (a `proxy --replay` subprocess per episode), with no server at all.
    replayed = run_main("run", str(PROXIES / "time.yaml"), "--replay", str(cassette), "--transport", "stdio",
                        "--agent", "recovering", "--hazard", "silent_wrong_value", "--out", str(tmp_path / "replay"),
                        *RUN_FLAGS, cwd=REPO_ROOT)  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    again_paths = sorted((tmp_path / "replay" / "traces").glob("*.jsonl"))
    assert len(again_paths) == 2  # clean, silent_wrong_value
    for again in again_paths:
        path = live_run / "traces" / again.name
        assert [comparable(e) for e in events(path)] == [comparable(e) for e in events(again)], path.name
        assert events(again)[0]["upstream"]["via"]["cassette"] == str(cassette)  # type: ignore[index]
    live_rows = {row["episode_id"]: row for row in _rows(live_run)}
    for row in _rows(tmp_path / "replay"):
        live = live_rows[row["episode_id"]]
        assert {k: v for k, v in live.items() if k not in ("duration_s", "trace")} == {
            k: v for k, v in row.items() if k not in ("duration_s", "trace")
        }


def test_a_request_the_cassette_lacks_is_a_named_error_traced_as_upstream_error(tmp_path: Path) -> None:
    cassette = tmp_path / "small.jsonl"
    tools = [{"name": "convert_time", "inputSchema": {"type": "object", "properties": {"time": {"type": "string"}}}}]
    cassette.write_text(
        json.dumps({"cassette": 1, "upstream": {"name": "mcp-time", "version": "1", "protocol_version": "2025-11-25",
                                                "capabilities": {"tools": {}}}}) + "\n"
        + json.dumps({"request": "tools/list {}", "result": {"tools": tools}}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    import anyio
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from .support import proxy_params

    async def call() -> str:
        params = proxy_params("--replay", str(cassette), "--trace-dir", str(tmp_path), "--episode-id", "miss")
        async with Client(params) as client:
            try:
                await client.call_tool("convert_time", {"time": "12:00"})
            except MCPError as exc:
                return exc.error.message
        return ""

    message = anyio.run(call)
    assert "has no reply to tools/call" in message and "convert_time" in message and "--record" in message
    called = [e for e in events(tmp_path / "miss.jsonl") if e["type"] == "tool_called"]
    assert called[0]["outcome"] == "upstream_error" and "has no reply" in str(called[0]["error"])


@pytest.mark.parametrize("era", ["legacy", "auto"])
def test_the_frame_relay_and_the_sdk_proxy_leave_the_same_trace(tmp_path: Path, time_server: str, era: str) -> None:
    """A stdio client before a stdio server is relayed frame by frame by default; `--sdk` goes through the SDK on
    both sides. The same actions must leave the same trace either way, but for the protocol version spoken with the
    server: the relay speaks the client's, the SDK client negotiates its own."""
    import anyio
    from mcp import Client

    from .support import proxy_params

    async def act(*extra: str) -> None:
        params = proxy_params(str(PROXIES / "time.yaml"), "--upstream-cmd", time_server, "--hazard",
                              "transient_error", "--hazard", "silent_wrong_value", "--task", "tokyo-time",
                              "--trace-dir", str(tmp_path), *extra)  # fmt: skip
        async with Client(params, mode=era) as client:  # type: ignore[arg-type]
            await client.list_tools()
            prompt = await client.get_prompt("task")
            assert "Asia/Tokyo" in prompt.messages[0].content.text  # type: ignore[union-attr]
            arguments = {"source_timezone": "Etc/UTC", "time": "14:30", "target_timezone": "Asia/Tokyo"}
            for _ in range(4):
                await client.call_tool("convert_time", arguments)
            await client.call_tool("submit_answer", {"answer": "23:30"})

    anyio.run(act, "--episode-id", "relay")
    anyio.run(act, "--episode-id", "sdk", "--sdk")
    relayed, through_sdk = events(tmp_path / "relay.jsonl"), events(tmp_path / "sdk.jsonl")
    assert [e["type"] for e in relayed].count("hazard_fired") == 3
    for trace in (relayed, through_sdk):
        trace[0]["upstream"].pop("protocol_version")  # type: ignore[union-attr]
    assert [comparable(e) for e in relayed] == [comparable(e) for e in through_sdk]
