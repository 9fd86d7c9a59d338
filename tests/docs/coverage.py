"""How each command the docs show is proved to work. Every command (tests/docs/shown.py finds them) is exactly one of:

1. a *synopsis or a mention*: it has placeholders (`[optional]`, `...`, `RUNDIR`, `a|b`) or, inline, names a command
   and its flags without a file to act on (`mcp-hazard validate --hazard all`). It cannot run as written; its command
   and every flag it names must exist (checked against the real parser).
2. *registered*: an existing test runs it; REGISTERED names the test, which must exist and hold every word of the
   command as a string literal (words that cannot be literal are listed with what the test uses instead), or
   READ_FROM_DOC says the test reads the doc's commands itself.
3. *cannot run in CI* by nature, in CANNOT_RUN with its reason: installing packages, a model server, a cluster, a
   research run of hundreds of episodes, a benchmark.
4. *run here*: every other command of a doc is run as written, in doc order, by the session test RUN_HERE names for
   the doc's section (tests/docs/session.py says what a session substitutes).
A doc that gains a command falls into 4 if its section has a session test (which then runs it), and otherwise fails
tests/docs/test_doc_commands.py until it is covered.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .shown import ROOT, Shown, every_command, shown_in

PLACEHOLDER = re.compile(
    r"\[|\.\.\.|(?:^|(?<=[\s/=|:]))(?!(?:GET|POST|PUT|DELETE)\b)[A-Z][A-Z_]+(?=$|[\s./|\]])"
    r"|\w\|[\w.]"
)  # `[optional]`, `...`, `RUNDIR` (not an HTTP method), `a|b`
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
PATHLIKE = re.compile(r"[/.]")


@dataclass(frozen=True)
class Registered:
    """An existing test that runs `command`; `instead` maps each word it cannot hold literally to what it uses."""

    command: str
    test: str  # "tests/path.py::test_name"
    instead: dict[str, str] = field(default_factory=dict)


REGISTERED = [
    Registered("mcp-hazard run agentdojo:all --agent golden --seeds 0 --hazard declared --transport memory --out "
               "runs/agentdojo", "tests/agentdojo_suites/test_golden.py::golden_run",
               {"mcp-hazard": "main()", "runs/agentdojo": "a temporary folder"}),
    Registered("mcp-hazard score runs/agentdojo --per-episode episodes.csv",
               "tests/agentdojo_suites/test_golden.py::test_the_export_names_the_suite_and_agentdojos_task",
               {"mcp-hazard": "main()", "runs/agentdojo": "the golden run", "episodes.csv": "a temporary file"}),
    Registered("python -m mcp_hazard.scoring.agentdojo_table runs/agentdojo-agents/report.json",
               "tests/agentdojo_suites/test_doc.py::test_the_reference_agents_table_is_what_the_code_prints",
               {"python": "in process", "-m": "in process", "mcp_hazard.scoring.agentdojo_table": "table_main()",
                "runs/agentdojo-agents/report.json": "the report of a run of banking under three kinds"}),
    Registered("inspect eval mcp_hazard/inspect.py",
               "tests/test_inspect.py::test_inspect_eval_cli_with_the_mock_model"),
    Registered("inspect eval mcp_hazard/hazard --model mockllm/model -T scenarios=scenarios/travel.yaml "
               "-T task=fare-class",
               "tests/test_inspect.py::test_inspect_eval_finds_the_installed_package_task_from_any_directory"),
    Registered("inspect eval mcp_hazard/hazard --model mockllm/model",
               "tests/test_inspect.py::test_inspect_eval_finds_the_installed_package_task_from_any_directory"),
    Registered("inspect eval mcp_hazard/hazard",
               "tests/test_inspect.py::test_inspect_eval_finds_the_installed_package_task_from_any_directory"),
]  # fmt: skip

# doc -> the test that reads and runs every command of it (it names the doc and extracts the commands itself)
READ_FROM_DOC = {
    "docs/http-api.md": "tests/e2e/test_http_docs.py::test_every_curl_example_of_the_http_doc_works_as_written",
}
# commands of README's "Many episodes over HTTP" section, read and run by the test of the same name
READ_FROM_README = {
    "## Many episodes over HTTP": "tests/e2e/test_http_docs.py::test_the_readme_http_section_works_as_written",
}
# (doc, the paragraph's first words) -> the test that reads and runs every command of the block after it
READ_FROM_BLOCK = {
    (
        "docs/hazards.md",
        "Every bad declaration is a one-line error",
    ): "tests/hazards/test_docs_errors.py::test_each_documented_error_is_what_the_command_prints",
    (
        "docs/hazards.md",
        "With the package installed",
    ): "tests/hazards/test_third_party_kind.py::test_the_documented_commands_serve_run_verify_and_score_it",
}

CANNOT_RUN = {
    r"^python3 -m venv \.venv && .*pip install -e": "installs the package: .ci/run runs exactly these two commands on "
    "a clean clone",
    r"^pip install ": "installs packages from the package index",
    r"^MCP_HAZARD_LLM_BASE_URL=": "needs a model server (Ollama, llama.cpp); tests/agents/test_llm_cli.py runs "
    "`run --agent llm` against a fake OpenAI-compatible endpoint",
    r"--ray-address 10\.0\.0\.5|--agent llm --executor ray": "needs a Ray cluster or a model server",
    r"^mcp-hazard run scenarios/ --executor ray$": "starts a local Ray instance and runs the whole main job on it "
    "(minutes on 2 cores); tests/runner/test_ray.py runs `run --executor ray` on a small matrix",
    r"--model openai/": "needs an OpenAI API key",
    r"proxies/filesystem\.yaml --allow-upstream-command": "`npx -y` fetches the server from the npm registry; "
    "tests/proxy/test_filesystem_server.py runs this matrix with the server installed in .cache (--upstream-cmd)",
    r"^mcp-hazard run (gen/|scenarios/ --intervention all --seeds 0-1|scenarios/ --profile strict,guided,guarded)":
    "a research run of 240 to 960 episodes (minutes on 2 cores): docs/research.md reports what it measured; "
    "tests/runner/test_research_cli.py computes the same quantities on a small matrix",
    r"^/usr/bin/time -v python -m pytest ": "runs the whole test suite, which this command is part of: .ci/run runs "
    "README's test command on a clean clone",
    r"^(\.venv/bin/)?python -m bench\.": "a benchmark or a tool of bench/ (minutes of load, or a browser for "
    "screenshots): docs/performance.md records the benchmarks' measurements; tests use only bench's helpers",
    r"^mcp-hazard run agentdojo:all --agent naive --agent recovering": "a research run of 1584 episodes (minutes on "
    "2 cores); tests/agentdojo_suites/ run the same agents on one suite",
    r"^mcp-hazard verify agentdojo:all": "verifies every instance of the four suites (7 min on 2 cores); "
    "tests/agentdojo_suites/test_commands.py verifies banking's under injection",
    r"^mcp-hazard score /tmp/big ": "scores the benchmark's 10,000-episode folder (bench.report_load --keep)",
    r"^mcp-hazard run scenarios/ scenarios/suite/$": "the full suite: about 5,000 episodes with the two default "
    "agents (minutes on 2 cores); README's main job runs its quick subset, tests/suite/ check the rest of it",
    r"^mcp-hazard verify scenarios/ scenarios/suite/ --seeds 0-4": "verifies the full suite (many minutes on 2 "
    "cores): docs/suite.md records the result; tests/suite/test_suite.py verifies a seeded sample",
    r"^mcp-hazard run scenarios/ scenarios/suite/ --agent naive --agent recovering --agent golden --seeds 0-2":
    "the reference agents over the full suite, three seeds (21,015 episodes, most of an hour on 2 busy cores): "
    "docs/results.md records what it measured; its session runs the same command on one task",
}  # fmt: skip

# (doc, heading) -> why no command under that heading (of any level) can run in CI
CANNOT_RUN_SECTIONS = {
    ("docs/agents.md", "### A real small model on a laptop CPU"): "the llama.cpp recipe: builds llama-cpp-python "
    "from source, installs a model and serves it (its figures are measured by hand)",
    ("docs/results.md", "### How the model was run"): "serves a model with llama.cpp and plays 32 episodes of half a "
    "minute to four minutes each; the run it made is committed in docs/results/smollm2 and the doc's next section "
    "scores it",
}

# (doc, command) -> the doc whose session runs the same command, with the files it needs
SAME_AS = {
    ("docs/research.md", "mcp-hazard replay slip.yaml"): "docs/generator.md",
    (
        "README.md",
        "mcp-hazard run proxies/time.yaml --replay time.cassette.jsonl --hazard transient_error --out runs/replayed",
    ): "docs/proxy.md",
}

# inline spans that start like a command but are not one
NOT_COMMANDS = {"mcp-hazard scenario": "the title of the scenario schema (docs/scenario-format.md, section 7)"}


def _with_the_inspector(shown: Shown) -> bool:
    """A command of a block that uses the MCP Inspector CLI (the server and the variables it needs included)."""
    return any(other.block == shown.block and other.command.startswith("mcp-inspector ")
               for other in shown_in(ROOT / shown.doc)) and shown.block > 0  # fmt: skip


# doc -> [(session test, its share: the headings it starts with, or a test of the command; () for the rest)]
RUN_HERE: dict[str, list[tuple[str, tuple[str, ...] | Callable[[Shown], bool]]]] = {
    "README.md": [("tests/docs/test_readme_doc.py::test_readme_commands_work_as_written", ())],
    "docs/agents.md": [
        ("tests/docs/test_agents_doc.py::test_verify_in_the_agents_doc", lambda shown: shown.command.startswith(
            "mcp-hazard verify scenarios/")),
        ("tests/docs/test_agents_doc.py::test_running_the_reference_agents_and_replaying_their_traces",
         ("## 1.", "## 5.")),
        ("tests/docs/test_agents_doc.py::test_your_own_agent_a_desktop_assistant_and_pytest", ()),
    ],
    "docs/ci.md": [("tests/docs/test_ci_doc.py::test_ci_doc", ())],
    "docs/generator.md": [("tests/docs/test_small_docs.py::test_generator_doc", ())],
    "docs/hazards.md": [("tests/docs/test_small_docs.py::test_hazards_doc", ())],
    "docs/agentdojo.md": [("tests/agentdojo_suites/test_doc.py::test_agentdojo_doc", ())],
    "docs/scenario-format.md": [("tests/docs/test_small_docs.py::test_scenario_format_doc", ())],
    "docs/suite.md": [("tests/docs/test_small_docs.py::test_suite_doc", ())],
    "docs/security.md": [("tests/docs/test_small_docs.py::test_security_doc", ())],
    "docs/proxy.md": [("tests/proxy/test_docs.py::test_the_proxy_doc_runs_as_written", ())],
    "docs/research.md": [("tests/docs/test_small_docs.py::test_research_doc", ())],
    "docs/performance.md": [("tests/docs/test_small_docs.py::test_performance_doc", ())],
    "docs/statistics.md": [("tests/docs/test_small_docs.py::test_statistics_doc", ())],
    "docs/results.md": [("tests/docs/test_small_docs.py::test_results_doc", ())],
    "docs/interventions.md": [
        ("tests/docs/test_interventions_doc.py::test_interventions_through_the_inspector", _with_the_inspector),
        ("tests/docs/test_interventions_doc.py::test_interventions_doc", ()),
    ],
}  # fmt: skip


def is_synopsis(shown: Shown) -> bool:
    unquoted = QUOTED.sub("''", shown.command)
    if PLACEHOLDER.search(unquoted):
        return True
    rest = unquoted.split()[1:]
    return shown.inline and shown.command.startswith("mcp-hazard ") and not any(PATHLIKE.search(w) for w in rest)


def cannot_run(shown: Shown) -> str | None:
    section = next((why for (doc, heading), why in CANNOT_RUN_SECTIONS.items()
                    if doc == shown.doc and heading_of(shown, "#").startswith(heading)), None)  # fmt: skip
    return section or next((why for pattern, why in CANNOT_RUN.items() if re.search(pattern, shown.command)), None)


def _block_after(doc: str, intro: str) -> int:
    """The first line of the fenced block that follows the paragraph starting with `intro`."""
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(intro))
    return next(n for n in range(start, len(lines)) if lines[n].startswith("```")) + 2


def registered(shown: Shown) -> str | None:
    if shown.doc in READ_FROM_DOC:
        return READ_FROM_DOC[shown.doc]
    for (doc, intro), test in READ_FROM_BLOCK.items():
        if shown.doc == doc and shown.block == _block_after(doc, intro):
            return test
    if shown.doc == "README.md":
        for heading, test in READ_FROM_README.items():
            if heading_of(shown) == heading:
                return test
    return next((entry.test for entry in REGISTERED if entry.command == shown.command), None)


def heading_of(shown: Shown, level: str = "## ") -> str:
    """The heading the command is under: the last `## ` one, or with `level="#"` the last of any level."""
    lines = (ROOT / shown.doc).read_text(encoding="utf-8").splitlines()[: shown.line]
    return next((line for line in reversed(lines) if line.startswith(level)), "")


def how_covered(shown: Shown) -> str:
    """One line: how this command is proved (or "" when nothing covers it)."""
    if shown.command in NOT_COMMANDS:
        return "not a command: " + NOT_COMMANDS[shown.command]
    if (why := cannot_run(shown)) is not None:
        return "cannot run in CI: " + why
    if (test := registered(shown)) is not None:
        return "run by " + test
    if (other := SAME_AS.get((shown.doc, shown.command))) is not None:
        return f"run as written where {other} shows it"
    if is_synopsis(shown):
        return "synopsis: its command and flags exist (tests/docs/test_doc_commands.py)"
    return "run as written by " + session_test(shown) if session_test(shown) else ""


def session_test(shown: Shown) -> str:
    heading = heading_of(shown)
    for test, share in RUN_HERE.get(shown.doc, []):
        if share(shown) if callable(share) else not share or heading.startswith(share):
            return test
    return ""


def to_run(doc: str, test: str) -> list[Shown]:
    """The commands of `doc` that `test` (a name in RUN_HERE) runs, in the order a reader meets them."""
    commands = sorted(shown_in(ROOT / doc), key=lambda shown: shown.line)
    mine = [shown for shown in commands if how_covered(shown) == "run as written by " + session_test(shown)]
    return [shown for shown in mine if session_test(shown).endswith("::" + test)]


def table() -> list[tuple[Shown, str]]:
    return [(shown, how_covered(shown)) for shown in every_command()]
