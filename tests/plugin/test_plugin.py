"""The pytest plugin as an agent developer meets it: a test file in a fresh project (no conftest of ours) that asks
for the `hazard_episode` fixture, which the installed `pytest11` entry point must provide."""

from __future__ import annotations

import json
import shutil

# Imported here so that the inline runs below reuse them (pytester forgets modules first imported inside a run).
# httpcore above all: httpx imports it on first use and maps its exceptions by class, so a second copy imported after
# a run would raise errors that httpx no longer recognises in every later test of this worker.
import httpcore  # noqa: F401
import pytest

import mcp_hazard.runner.transports
import mcp_hazard.scoring.episode_score
import mcp_hazard.server.episodes  # noqa: F401
from tests.conftest import TRAVEL

pytest_plugins = ["pytester"]

# The inner runs leave out plugins that are not under test (and slow to start) and the cache.
INNER = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:langsmith_plugin")

RETRYING_AGENT = '''
import pytest
from mcp_hazard.pytest_plugin import HazardEpisode


async def ask_fare(client, attempts=5):
    """A tiny agent: call get_fare, retry a transient error, read the fare class."""
    for _ in range(attempts):
        result = await client.call_tool("get_fare", {"flight_id": "AU-426"})
        if not result.is_error:
            return result.structured_content["fare_class"]
    return "unknown"


@pytest.mark.anyio
async def test_retrying_agent(hazard_episode, transport):
    async with hazard_episode("scenarios/travel.yaml", task="fare-class", hazards=["transient_error"], seed=3,
                              transport=transport) as ep:
        assert isinstance(ep, HazardEpisode)
        assert "AU-426" in ep.prompt and "submit_answer" in ep.prompt
        await ep.client.call_tool("submit_answer", {"answer": await ask_fare(ep.client)})
    assert ep.trace_path.exists()
    assert ep.trace.started["condition"]["seed"] == 3
    assert ep.score.correct
    assert ep.score.verdicts and all(v.recovered for v in ep.score.verdicts)
    print("TRACE", ep.trace_path)


@pytest.mark.anyio
async def test_naive_agent(hazard_episode, transport):
    async with hazard_episode("scenarios/travel.yaml", task="fare-class", hazards=["transient_error"], seed=3,
                              transport=transport) as ep:
        await ep.client.call_tool("submit_answer", {"answer": await ask_fare(ep.client, attempts=1)})
    assert ep.score.correct, "the naive agent gave up after one error"
'''

TRANSPORT_FIXTURE = """
import pytest

@pytest.fixture(params={transports!r})
def transport(request):
    return request.param
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A user project: a copy of a shipped scenario, and entry-point plugins switched on."""
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    (pytester.path / "scenarios").mkdir()
    shutil.copy(TRAVEL, pytester.path / "scenarios" / "travel.yaml")
    return pytester


def test_entry_point_provides_the_fixture_in_a_fresh_process(project: pytest.Pytester) -> None:
    """The honest check: a separate pytest process, which finds the plugin only through the installed entry point."""
    project.makeconftest(TRANSPORT_FIXTURE.format(transports=["memory"]))
    project.makepyfile(test_agent=RETRYING_AGENT)
    result = project.runpytest_subprocess("--strict-markers", *INNER, "--mcp-hazard-trace-dir=kept")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_naive_agent*", "*AssertionError: the naive agent gave up after one error*"])
    kept = sorted((project.path / "kept").glob("*.jsonl"))
    assert [p.name.split(".")[0] for p in kept] == [
        f"test_{name}_agent-asyncio-memory" for name in ("naive", "retrying")
    ]
    first = json.loads(kept[1].read_text(encoding="utf-8").splitlines()[0])
    assert first["type"] == "episode_started" and first["run"]["agent"] == "under-test"


@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
def test_recovery_and_failure_are_scored_over_each_transport(project: pytest.Pytester, transport: str) -> None:
    project.makeconftest(TRANSPORT_FIXTURE.format(transports=[transport]))
    project.makepyfile(test_agent=RETRYING_AGENT)
    result = project.runpytest("--strict-markers", *INNER, "-s")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*TRACE */mcp-hazard-traces/test_retrying_agent-asyncio-{transport}.travel.*.jsonl"])


def test_user_errors_fail_the_test_with_one_line(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.anyio
        async def test_bad_hazard(hazard_episode):
            async with hazard_episode("scenarios/travel.yaml", hazards=["transient_eror"]):
                pass

        @pytest.mark.anyio
        async def test_bad_path(hazard_episode):
            async with hazard_episode("scenarios/nowhere.yaml"):
                pass

        @pytest.mark.anyio
        async def test_bad_task(hazard_episode):
            async with hazard_episode("scenarios/travel.yaml", task="no-such-task"):
                pass

        @pytest.mark.anyio
        async def test_bad_parameter(hazard_episode):
            async with hazard_episode("scenarios/travel.yaml", hazards="latency:delay_s=-1"):
                pass
        """
    )
    result = project.runpytest(*INNER)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines_random([
        "*test_bad.py:5: mcp-hazard: hazard #1 (transient_eror): unknown kind (did you mean 'transient_error'?); *",
        "*test_bad.py:10: mcp-hazard: scenarios/nowhere.yaml: cannot read file: No such file or directory",
        "*test_bad.py:15: mcp-hazard: scenarios/travel.yaml: scenario 'travel' has no task 'no-such-task'; its tasks:*",
        "*test_bad.py:20: mcp-hazard: hazard #1 (latency): params.delay_s*",
    ])  # fmt: skip
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*pytest_plugin.py*")


def test_an_error_inside_the_block_is_the_tests_own(project: pytest.Pytester) -> None:
    """The SDK client wraps what leaves its block in an exception group; the test sees its own exception."""
    project.makepyfile(
        test_inside="""
        import pytest

        @pytest.mark.anyio
        async def test_assert_inside(hazard_episode):
            async with hazard_episode("scenarios/travel.yaml") as ep:
                with pytest.raises(RuntimeError, match="when the `async with` block ends"):
                    ep.score
                assert 1 + 1 == 3, "inside the block"
        """
    )
    result = project.runpytest(*INNER)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E * AssertionError: inside the block", "test_inside.py:8: AssertionError"])
    result.stdout.no_fnmatch_line("*ExceptionGroup*")


def test_scenario_path_may_be_relative_to_the_test_file(project: pytest.Pytester) -> None:
    sub = project.mkpydir("agent_tests")
    shutil.move(project.path / "scenarios", sub / "scenarios")
    (sub / "test_here.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.anyio\n"
        "async def test_golden(hazard_episode):\n"
        "    async with hazard_episode('scenarios/travel.yaml', task='fare-class', profile='guided') as ep:\n"
        "        result = await ep.client.call_tool('get_fare', {'flight_id': 'AU-426'})\n"
        "        await ep.client.call_tool('submit_answer', {'answer': result.structured_content['fare_class']})\n"
        "    assert ep.score.correct and ep.score.verdicts == [] and ep.score.profile == 'guided'\n",
        encoding="utf-8",
    )
    result = project.runpytest(*INNER)
    result.assert_outcomes(passed=1)


def test_interventions_are_part_of_the_condition(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_renamed="""
        import pytest

        @pytest.mark.anyio
        async def test_renamed(hazard_episode):
            async with hazard_episode("scenarios/travel.yaml", task="fare-class", interventions=["rename"]) as ep:
                names = [tool.name for tool in (await ep.client.list_tools()).tools]
            assert "get_fare" not in names and "submit_answer" in names
            assert ep.trace.started["condition"]["interventions"] == ["rename"]
            assert not ep.score.answered
        """
    )
    result = project.runpytest(*INNER)
    result.assert_outcomes(passed=1)
