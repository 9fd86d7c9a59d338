"""The examples at the end of every command's `--help`: real command lines that work as written from the project
folder (a test parses each one with the real parser)."""

from __future__ import annotations

EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "validate": [
        ("mcp-hazard validate scenarios/", "check every shipped scenario and run its golden paths"),
        (
            "mcp-hazard validate scenarios/travel.yaml --hazard all --seeds 0-19",
            "also prove every hazard kind solvable for 20 seeds",
        ),
    ],
    "serve": [
        (
            "mcp-hazard serve scenarios/travel.yaml --task cheapest-trip --seed 7 --trace-dir runs/",
            "one episode over stdio, as a desktop assistant starts it",
        ),
        (
            "mcp-hazard serve scenarios/travel.yaml --hazard transient_error --profile guided",
            "the same with a hazard and guided error messages",
        ),
        (
            "mcp-hazard serve scenarios/ --http 127.0.0.1:8765 --trace-dir runs/",
            "many episodes over Streamable HTTP (routes: docs/http-api.md)",
        ),
    ],
    "schema": [
        ("mcp-hazard schema > scenario.schema.json", "the scenario format for editors"),
        ("mcp-hazard schema proxy > proxy.schema.json", "the proxy file format"),
    ],
    "proxy": [
        (
            "mcp-hazard proxy --upstream-cmd 'python -m mcp_server_time' --hazard transient_error",
            "hazards in front of a real server, over stdio, no file needed",
        ),
        (
            "mcp-hazard proxy proxies/time.yaml --allow-upstream-command --http 127.0.0.1:8766 --trace-dir runs/",
            "many episodes over HTTP, with the proxy file's notes and tasks",
        ),
        (
            "mcp-hazard proxy proxies/time.yaml --replay time.cassette.jsonl",
            "serve recorded replies without the server (docs/proxy.md)",
        ),
    ],
    "hazards": [
        ("mcp-hazard hazards", "the kinds as a table"),
        ("mcp-hazard hazards --json", "the same as JSON"),
    ],
    "score": [
        ("mcp-hazard score runs/matrix", "the scorecard of a run folder"),
        ("mcp-hazard score runs/matrix --verbose", "every table in the terminal"),
        ("mcp-hazard score runs/matrix --out report.html", "the full report, with drill-down to each episode"),
        ("mcp-hazard score runs/ --per-episode verdicts.csv", "also one row per episode"),
    ],
    "run": [
        ("mcp-hazard run scenarios/", "the main job: two reference agents, clean and under every hazard"),
        (
            "mcp-hazard run scenarios/ --agent recovering --seeds 0-4 --hazard transient_error",
            "one agent, one hazard, five seeds",
        ),
        (
            "mcp-hazard run scenarios/travel.yaml --intervention all --transport memory",
            "every interface intervention, in process",
        ),
        (
            "mcp-hazard run scenarios/ --agent-cmd 'python my_agent.py' --transport stdio",
            "your own agent program (docs/agents.md)",
        ),
        (
            "mcp-hazard run proxies/time.yaml --allow-upstream-command --record time.cassette.jsonl",
            "a matrix against a real MCP server, its replies recorded (docs/proxy.md)",
        ),
    ],
    "verify": [
        ("mcp-hazard verify scenarios/ --seeds 0-4", "every hazard instance solvable and biting"),
        ("mcp-hazard verify scenarios/travel.yaml --intervention all", "also solvable under each intervention"),
    ],
    "plan": [
        (
            "mcp-hazard plan scenarios/ --drop 10% --base-rate 0.8",
            "seeds needed to see a 10-point drop under each hazard, from an assumed 80% clean success",
        ),
        (
            "mcp-hazard plan scenarios/ --drop 0.1 --pilot runs/matrix",
            "the same, with each comparison's discordance measured in a pilot run",
        ),
    ],
    "perturb": [
        (
            "mcp-hazard perturb scenarios/travel.yaml --intervention rename --seed 1",
            "the tool listing an agent sees under an intervention",
        ),
    ],
    "replay": [
        (
            "mcp-hazard replay runs/matrix/traces/naive.travel.cheapest-trip.clean.strict.s0.jsonl",
            "re-run a trace's calls; exit 1 on the first difference",
        ),
    ],
    "generate": [
        (
            "mcp-hazard generate dag --core 5 --depth 3 --seed 1 --count 10 --out gen/",
            "ten generated tool graphs with five functions on the golden path",
        ),
        ("mcp-hazard generate suite --out scenarios/suite", "the shipped suite's generated files, byte for byte"),
    ],
    "gate": [
        (
            "mcp-hazard gate runs/pr --min overall=0.8 --min recovery.transient_error=0.9",
            "minimums, each failing only when its interval's upper bound is under it",
        ),
        (
            "mcp-hazard gate runs/pr --baseline runs/main",
            "fail on a significant drop in overall success, episode by episode",
        ),
        (
            "mcp-hazard gate runs/pr --baseline runs/main --max-drop hazard_kind.pagination=10 --junit junit.xml",
            "allow up to 10 points under pagination; a JUnit report for CI",
        ),
    ],
    "diff": [
        ("mcp-hazard diff runs/main runs/pr", "the episodes that flipped, strongest evidence first"),
        ("mcp-hazard diff runs/main runs/pr --out diff.html", "the same as an HTML page"),
    ],
    "completion": [
        (
            "mcp-hazard completion bash > ~/.local/share/bash-completion/completions/mcp-hazard",
            "install bash completion for your user",
        ),
        ('eval "$(mcp-hazard completion bash)"', "or only for this shell"),
    ],
}


def epilog(command: str) -> str:
    """The examples block of `command`'s --help."""
    lines = ["examples:"]
    for line, what in EXAMPLES[command]:
        lines.append(f"  {line}")
        lines.append(f"      {what}")
    return "\n".join(lines)
