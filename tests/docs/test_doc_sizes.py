"""The reference docs stay readable: README in about three minutes, the others references, not logs."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "most"),
    [("README.md", 130), ("docs/performance.md", 250), ("docs/decisions.md", 300)],
)
def test_a_reference_doc_stays_within_its_length(name: str, most: int) -> None:
    lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
    assert len(lines) <= most, f"{name} has {len(lines)} lines; keep it at {most} or fewer (history lives in git)"
