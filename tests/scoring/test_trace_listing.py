"""Which files `score` reads, in which order (trace_listing.py): the walk lists what `sorted(rglob("*.jsonl"))` lists,
resolves each file right without resolving it alone, and survives links that loop or lead nowhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run_main

from mcp_hazard.scoring.collect import resolved_jsonl_files, score_traces
from mcp_hazard.scoring.trace_listing import jsonl_under


def _tree(root: Path) -> Path:
    """Names that sort differently as strings and as parts (`a-c` < `a/` as text, `a` < `a-c` as parts), a hidden
    folder, a folder named like a trace, links to a file, to a link, to a folder, to nowhere, and other files."""
    for folder in ("a", "a-c", "a b", ".hidden", "x.jsonl", "real/deeper", "empty"):
        (root / folder).mkdir(parents=True)
    files = ("a/b.jsonl", "a-c/x.jsonl", "a b/c.jsonl", ".hidden/h.jsonl", "x.jsonl/in.jsonl", "real/r.jsonl",
             "real/deeper/d.jsonl", ".jsonl", "A.jsonl", "z.jsonl", "b.JSONL", "notes.json", "a.jsonl.bak")  # fmt: skip
    for file in files:
        (root / file).write_text("{}\n", encoding="utf-8")
    (root / "linkdir").symlink_to("real")
    (root / "l.jsonl").symlink_to(root / "real" / "r.jsonl")
    (root / "ll.jsonl").symlink_to("l.jsonl")
    (root / "dangling.jsonl").symlink_to("nowhere")
    return root


EXPECTED = (  # (listed below the root, resolved below the root)
    (".hidden/h.jsonl", ".hidden/h.jsonl"), (".jsonl", ".jsonl"), ("A.jsonl", "A.jsonl"), ("a/b.jsonl", "a/b.jsonl"),
    ("a b/c.jsonl", "a b/c.jsonl"), ("a-c/x.jsonl", "a-c/x.jsonl"), ("dangling.jsonl", "nowhere"),
    ("l.jsonl", "real/r.jsonl"), ("ll.jsonl", "real/r.jsonl"), ("real/deeper/d.jsonl", "real/deeper/d.jsonl"),
    ("real/r.jsonl", "real/r.jsonl"), ("x.jsonl", "x.jsonl"), ("x.jsonl/in.jsonl", "x.jsonl/in.jsonl"),
    ("z.jsonl", "z.jsonl"),
)  # fmt: skip


def test_the_walk_lists_and_resolves_as_the_path_library_does(tmp_path: Path) -> None:
    root = _tree(tmp_path / "tree")
    real = Path(os.path.realpath(root))
    listed = jsonl_under(str(root))
    assert listed == [(str(root / a), str(real / b)) for a, b in EXPECTED]
    assert listed == [(str(p), str(p.resolve())) for p in sorted(root.rglob("*.jsonl"))]
    # Reached through a link to it, the names keep the link; what they resolve to does not.
    (tmp_path / "via").symlink_to(root)
    assert jsonl_under(str(tmp_path / "via")) == [(str(tmp_path / "via" / a), str(real / b)) for a, b in EXPECTED]


@pytest.mark.parametrize("spelling", ["", ".", "./", "tree/..", "tree//real/"])
def test_listed_paths_are_spelled_as_paths_spell_them(
    tmp_path: Path, spelling: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path / "tree")
    monkeypatch.chdir(tmp_path)
    assert [p for p, _ in jsonl_under(spelling)] == [str(p) for p in sorted(Path(spelling).rglob("*.jsonl"))]


def test_a_file_named_and_also_found_in_a_named_folder_is_read_once(tmp_path: Path) -> None:
    root = _tree(tmp_path / "tree")
    files = resolved_jsonl_files([str(root / "real" / "r.jsonl"), str(root)])
    assert next(iter(files)) == str(root / "real" / "r.jsonl")
    assert str(root / "real" / "r.jsonl") in files and str(root / "l.jsonl") not in files  # one file, three names
    assert len(files) == len(EXPECTED) - 2


def test_a_link_that_loops_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    """`Path.resolve` raised RuntimeError on it, so `score` ended in a traceback."""
    root = _tree(tmp_path / "tree")
    (root / "loop.jsonl").symlink_to("loop.jsonl")
    scored = score_traces([str(root)])
    assert f"{root / 'loop.jsonl'}: cannot read: Too many levels of symbolic links; file skipped" in scored.warnings
    assert f"{root / 'dangling.jsonl'}: cannot read: No such file or directory; file skipped" in scored.warnings
    done = run_main("score", str(root))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "mcp-hazard: error: nothing to score: no traces in" in done.stderr


def test_a_folder_nested_deeper_than_the_recursion_limit_is_listed(tmp_path: Path) -> None:
    """A stranger's run folder nested 1,500 deep (3,000 characters of path, within PATH_MAX) was a RecursionError
    traceback from `score`; the walk now keeps its own stack."""
    folder = tmp_path
    for _ in range(1500):  # one by one: os.makedirs recurses
        folder = folder / "d"
        folder.mkdir()
    names = [str(Path(*(["d"] * level), "t.jsonl")) for level in (0, 300, 600, 900, 1200, 1500)]
    for name in names:
        (tmp_path / name).write_text("{}\n", encoding="utf-8")
    try:
        listed = jsonl_under(str(tmp_path))
    finally:  # bottom up, by hand: shutil.rmtree (pytest's clean-up) recurses too
        while folder != tmp_path:
            (folder / "t.jsonl").unlink(missing_ok=True)
            folder.rmdir()
            folder = folder.parent
    expected = sorted(names, key=lambda name: Path(name).parts)  # the deepest first: "d" sorts before "t.jsonl"
    assert expected == names[::-1]
    assert [os.path.relpath(path, tmp_path) for path, _ in listed] == expected
    assert [resolved for _, resolved in listed] == [str(tmp_path.resolve() / name) for name in expected]
