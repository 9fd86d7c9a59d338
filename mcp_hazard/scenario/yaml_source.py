"""Safe YAML reading that remembers where every value came from.

`yaml.safe_load` forgets positions, and scenario files may come from strangers. So we compose the node graph with
PyYAML's safe loader and build plain JSON-like data ourselves: only standard tags, a byte limit, a depth limit and a
node budget that counts alias expansions (the billion-laughs guard), and a map from field path to line and column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from mcp_hazard.errors import Problem, ScenarioError

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_NODES = 200_000
MAX_DEPTH = 64

_STR = "tag:yaml.org,2002:str"
_SCALAR_TAGS = {
    _STR,
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:timestamp",
}
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"

Path = tuple[str | int, ...]


@dataclass
class Positions:
    """Line/column (1-based) of each value and each mapping key, by field path."""

    values: dict[Path, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def locate(self, path: Path, *, prefer_key: bool = False) -> tuple[int, int] | None:
        """The most precise known position for `path`, walking up to the nearest ancestor that has one."""
        probe = tuple(path)
        while True:
            if prefer_key and probe in self.keys:
                return self.keys[probe]
            if probe in self.values:
                return self.values[probe]
            if probe in self.keys:
                return self.keys[probe]
            if not probe:
                return None
            probe = probe[:-1]


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.positions = Positions()
        self.nodes = 0
        self._scalar_loader = yaml.SafeLoader("")

    def fail(self, node: yaml.Node, path: Path, message: str) -> ScenarioError:
        mark = node.start_mark
        return ScenarioError([Problem(self.file, mark.line + 1, mark.column + 1, format_path(path), message)])

    def build(self, node: yaml.Node, path: Path, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.fail(node, path, f"document expands to more than {MAX_NODES} values (alias expansion limit)")
        if depth > MAX_DEPTH:
            raise self.fail(node, path, f"nesting deeper than {MAX_DEPTH} levels")
        self.positions.values.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.ScalarNode):
            if node.tag not in _SCALAR_TAGS:
                raise self.fail(node, path, f"tag {node.tag!r} is not allowed (only plain YAML values)")
            if node.tag in (_STR, "tag:yaml.org,2002:timestamp"):
                return node.value  # dates stay text: results must be JSON
            value = self._scalar_loader.construct_object(node)
            if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
                raise self.fail(node, path, f"{node.value!r} is not a valid JSON number")
            return value
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ:
                raise self.fail(node, path, f"tag {node.tag!r} is not allowed (only plain YAML values)")
            return [self.build(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            if node.tag != _MAP:
                raise self.fail(node, path, f"tag {node.tag!r} is not allowed (only plain YAML values)")
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise self.fail(key_node, path, "merge keys ('<<') are not supported; write the fields out")
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _SCALAR_TAGS:
                    raise self.fail(key_node, path, "mapping keys must be plain scalars")
                key = str(self._scalar_loader.construct_object(key_node)) if key_node.tag != _STR else key_node.value
                child = (*path, key)
                if key in result:
                    raise self.fail(key_node, child, f"duplicate key {key!r}")
                self.positions.keys[child] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                result[key] = self.build(value_node, child, depth + 1)
            return result
        raise self.fail(node, path, "unsupported YAML node")


def format_path(path: Path) -> str:
    """`tasks[0].golden_path.steps[2].tool`: the field path as a user would write it."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def parse_yaml(text: str, file: str) -> tuple[Any, Positions]:
    """Parse one YAML document from `text` into JSON-like data plus positions; raise ScenarioError on any problem."""
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_FILE_BYTES:
        raise ScenarioError([Problem(file, None, None, "", f"file is {size} bytes; the limit is {MAX_FILE_BYTES}")])
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        reason = " ".join(part for part in (exc.context, exc.problem) if part)
        raise ScenarioError([Problem(file, line, col, "", f"invalid YAML: {reason}")]) from None
    except yaml.YAMLError as exc:
        raise ScenarioError([Problem(file, None, None, "", f"invalid YAML: {exc}")]) from None
    except RecursionError:
        raise ScenarioError([Problem(file, None, None, "", f"nesting deeper than {MAX_DEPTH} levels")]) from None
    if root is None:
        raise ScenarioError([Problem(file, 1, 1, "", "file is empty")])
    builder = _Builder(file)
    try:
        data = builder.build(root, (), 0)
    except RecursionError:
        raise ScenarioError([Problem(file, None, None, "", f"nesting deeper than {MAX_DEPTH} levels")]) from None
    return data, builder.positions
