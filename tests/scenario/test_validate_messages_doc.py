"""The validate messages docs/scenario-format.md shows under "More messages produced the same way" are real: each
comes from the section 2 example with one change, run through `mcp-hazard validate` in a subprocess."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "scenario-format.md").read_text(encoding="utf-8")

# file shown in the docs -> (text in the example, its replacement); each change is made once.
EDITS = {
    "when.yaml": ("- when: {title: Salt and Lantern}", "- when: {name: Salt and Lantern}"),
    "ref.yaml": ('{daily_fee_eur: "{{ book.daily_fee_eur }}"', '{daily_fee_eur: "{{ bok.daily_fee_eur }}"'),
    "kind.yaml": ("      kind: table\n", "      kind: tabel\n"),
    "tool.yaml": ("tool: find_book,", "tool: find_bok,"),
    "argtype.yaml": ("days_late: 5}", 'days_late: "5"}'),
    "unkname.yaml": ('if: "days_late < 0"', 'if: "dayslate < 0"'),
    "id.yaml": ("- id: late-fee", "- id: Late-Fee"),
    "tag.yaml": ("id: library ", "id: !!python/name:os.system"),
}


def _example() -> str:
    section = DOC[DOC.index("\n## 2.") :]
    found = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert found is not None
    return found.group(1)


def _shown() -> list[str]:
    block = DOC[DOC.index("More messages produced the same way:") :]
    found = re.search(r"```\n(.*?)```", block, re.S)
    assert found is not None
    return found.group(1).splitlines()


def test_every_message_shown_is_what_validate_prints(tmp_path: Path) -> None:
    example = _example()
    shown = _shown()
    assert sorted(line.split(":", 1)[0] for line in shown) == sorted(EDITS)
    for name, (old, new) in EDITS.items():
        assert example.count(old) == 1, (name, old)
        (tmp_path / name).write_text(example.replace(old, new), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mcp_hazard", "validate", *sorted(EDITS)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert sorted(done.stderr.splitlines()) == sorted(shown)
