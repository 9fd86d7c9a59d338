"""The shipped suite (scenarios/ and scenarios/suite/, docs/suite.md): the generated files are the generator's
output; size, domains, workflow coverage, golden-path shapes, answer types, unique answers, natural prompts and
hazard applicability are what docs/suite.md promises; and a seeded sample is proven solvable and biting by `verify`
(the whole suite takes minutes: its command and result are in docs/suite.md)."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
import yaml

from mcp_hazard.cli import main
from mcp_hazard.generate.dag import stable_rng
from mcp_hazard.generate.suite import DOMAINS, SUITE_NAME, SUITE_VERSION, render_suite
from mcp_hazard.generate.suite.world import build_world
from mcp_hazard.hazards import REGISTRY
from mcp_hazard.hazards.instances import all_hazards
from mcp_hazard.load import load_scenarios
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.workflow import step_dependencies

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "scenarios" / "suite"
# A kind applying to fewer tasks has its reason in docs/suite.md's table.
MIN_SHARE = 0.30


@cache
def suite() -> list[LoadedScenario]:
    return load_scenarios([str(ROOT / "scenarios"), str(GENERATED)])


def tasks() -> list[tuple[LoadedScenario, object]]:
    return [(s, t) for s in suite() for t in s.model.tasks]


def test_checked_in_files_are_the_generators_output() -> None:
    rendered = render_suite()
    assert sorted(rendered) == sorted(p.name for p in GENERATED.glob("*.yaml"))
    for name, text in rendered.items():
        assert (GENERATED / name).read_text(encoding="utf-8") == text, f"{name}: run `mcp-hazard generate suite`"


def test_size_domains_and_tags() -> None:
    assert len(tasks()) >= 200
    assert len(suite()) >= 15  # the 5 written by hand and 10 generated domains
    assert len(DOMAINS) >= 10
    assert {(s.model.suite.name, s.model.suite.version) for s in suite() if s.model.suite} == {
        (SUITE_NAME, SUITE_VERSION)
    }
    assert all(s.model.suite for s in suite())


def test_every_workflow_covers_a_quarter() -> None:
    counts = Counter(t.workflow for _, t in tasks())  # type: ignore[attr-defined]
    assert set(counts) == {"sequential", "parallel", "mixed"}
    assert all(n / len(tasks()) >= 0.25 for n in counts.values()), counts


def _shape(scenario: LoadedScenario, task: object) -> tuple[object, ...]:
    """Steps as (role, the steps each uses): generated domains share roles (find, get, list, ...) by tool position,
    so the same structure in two domains counts once."""
    names = [tool.name for tool in scenario.model.tools]
    generated = scenario.id.startswith("suite-")
    deps = step_dependencies(task)  # type: ignore[arg-type]
    steps = task.golden_path.steps  # type: ignore[attr-defined]
    roles = ["FGLRODC"[names.index(s.tool)] if generated else s.tool for s in steps]
    return tuple((role, tuple(sorted(d))) for role, d in zip(roles, deps, strict=True))


def test_golden_paths_have_many_shapes_and_two_to_eight_calls() -> None:
    assert len({_shape(s, t) for s, t in tasks()}) >= 50
    generated = [t for s, t in tasks() if s.id.startswith("suite-")]
    assert all(2 <= len(t.golden_path.steps) <= 8 for t in generated)  # type: ignore[attr-defined]
    assert max(len(t.golden_path.steps) for t in generated) == 8  # type: ignore[attr-defined]


def test_every_answer_type_the_scorer_handles() -> None:
    seen = Counter()
    for _, t in tasks():
        answer = t.answer  # type: ignore[attr-defined]
        value, match = answer.value, answer.match
        if isinstance(value, bool):
            seen["yes/no"] += 1
        elif match == "numeric" and answer.tolerance:
            seen["currency"] += 1
        elif match == "numeric":
            seen["number with unit"] += 1
        elif match == "unordered_list":
            seen["list"] += 1
            if all(isinstance(v, str) and re.fullmatch(r"[A-Z]+-\d+", v) for v in value):
                seen["identifier"] += 1  # a list of ids answers with identifiers too
        elif isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            seen["date"] += 1
        elif isinstance(value, str) and re.fullmatch(r"[A-Z]+-\d+", value):
            seen["identifier"] += 1
        elif isinstance(value, str):
            seen["name"] += 1
    expected = {"yes/no", "currency", "number with unit", "list", "date", "identifier", "name"}
    assert set(seen) >= expected and min(seen[k] for k in expected) >= 5, seen


def test_answers_are_unique() -> None:
    """No ties: every value a question ranks or sums is distinct within its domain; no two tasks ask the same; a
    list answer names distinct items; yes/no questions are not all one way."""
    for index, domain in enumerate(DOMAINS):
        world = build_world(domain, 33)
        for field in ("measure", "price", "date"):
            values = [getattr(i, field) for i in world.items]
            assert len(set(values)) == len(values), (domain.id, field)
        assert len({o.days for o in world.owners}) == len(world.owners), domain.id
        assert len({i.id for i in world.items}) == len(world.items) and index >= 0
    prompts = Counter(t.prompt for _, t in tasks())  # type: ignore[attr-defined]
    assert max(prompts.values()) == 1
    for _, t in tasks():
        value = t.answer.value  # type: ignore[attr-defined]
        if isinstance(value, list):
            assert value and len({str(v).casefold() for v in value}) == len(value), t
    booleans = Counter(t.answer.value for _, t in tasks() if isinstance(t.answer.value, bool))  # type: ignore[attr-defined]
    assert booleans[True] >= 10 and booleans[False] >= 10


WORD_TWICE = re.compile(r"\b(\w+) \1\b")


def test_prompts_read_as_questions() -> None:
    for scenario, t in tasks():
        if not scenario.id.startswith("suite-"):
            continue
        prompt = t.prompt  # type: ignore[attr-defined]
        where = f"{scenario.id}/{t.id}: {prompt}"  # type: ignore[attr-defined]
        assert "{" not in prompt and "}" not in prompt and "None" not in prompt and "_" not in prompt, where
        assert "  " not in prompt and not WORD_TWICE.search(prompt), where
        assert prompt[0].isupper() and prompt.endswith("."), where
        assert "?" in prompt or prompt.startswith("I need "), where  # a question, or a request
        assert re.search(r"Answer (with|yes or no|in)", prompt), where


# "a one-off" and "an hour" are read by sound, not by letter.
A_BEFORE_VOWEL = re.compile(r"\b[Aa] (?!one)[aeioAEIO]\w|\b[Aa]n (?!hour|honest)[^aeiouAEIOU\W]")
SUPERLATIVE_OF_TWO = re.compile(r"the (?:lowest|highest|largest|smallest|shortest|longest) [^:?]*: \"[^\"]+\" or ")


def test_articles_and_comparatives_agree() -> None:
    """'an ingredient', not 'a ingredient'; 'the lower price' of two things, 'the lowest' of three or more."""
    for scenario, t in tasks():
        texts = [t.prompt] + [tool.description for tool in scenario.model.tools]  # type: ignore[attr-defined]
        for text in texts:
            where = f"{scenario.id}/{t.id}: {text}"  # type: ignore[attr-defined]
            assert not A_BEFORE_VOWEL.search(text), where
            assert not SUPERLATIVE_OF_TWO.search(text), where


def hazard_table() -> dict[str, tuple[int, str]]:
    """docs/suite.md's table of hazard kinds: each kind named in a row, with the row's task count and its reason."""
    text = (ROOT / "docs" / "suite.md").read_text(encoding="utf-8")
    table = text.split("Hazard kinds that apply (`--hazard all`)", 1)[1].split("\n\n")[1]
    rows: dict[str, tuple[int, str]] = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        for kind in re.findall(r"`(\w+)`", cells[0]):
            rows[kind] = (int(cells[1]), cells[3])
    return rows


def test_every_hazard_kind_applies_to_at_least_30_percent_or_the_doc_says_why() -> None:
    counts: Counter[str] = Counter()
    for scenario, t in tasks():
        counts.update({spec.kind for spec in all_hazards(scenario.model, t)})  # type: ignore[arg-type]
    table = hazard_table()
    assert {kind: n for kind, (n, _why) in table.items()} == {kind: counts[kind] for kind in REGISTRY}
    below = {kind for kind in REGISTRY if counts[kind] / len(tasks()) < MIN_SHARE}
    assert all(table[kind][1] for kind in below), below  # a kind below 30 % has its reason in the doc
    assert below <= {"lost_response"}, below  # only the kind that needs a write; the suite's tasks are questions


SAMPLE_TEMPLATES = ("cheapest-measures", "total-by-id", "arrival", "owner-of-cheapest-sibling")


def test_a_seeded_sample_is_solvable_and_biting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One task of four templates that, together, every hazard kind applies to (lists, second sources, one tool
    and several), each from a domain drawn by a seed; every applicable kind, seed 0."""
    rng = stable_rng("suite-sample")
    for template in SAMPLE_TEMPLATES:
        domain = rng.choice(DOMAINS)
        data = yaml.safe_load((GENERATED / f"suite-{domain.id}.yaml").read_text(encoding="utf-8"))
        data["tasks"] = [t for t in data["tasks"] if t["id"] == template]
        assert data["tasks"], (domain.id, template)
        (tmp_path / f"{domain.id}-{template}.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    code = main(["verify", str(tmp_path), "--seeds", "0", "--concurrency", "32"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "all solvable, all biting" in out.out
    kinds = set()
    for scenario in load_scenarios([str(tmp_path)]):
        for t in scenario.model.tasks:
            kinds |= {spec.kind for spec in all_hazards(scenario.model, t)}
    assert kinds == set(REGISTRY) - {"lost_response"}  # no generated task writes (docs/suite.md)
