"""A small, safe expression and template language for tool behaviours and golden paths.

Scenario files may come from strangers, so nothing here reaches Python's `eval`. An expression is parsed with `ast`
and walked by an interpreter that knows only literals, names, arithmetic, comparisons, boolean logic, conditionals,
indexing, `a.b` as a mapping lookup, and a fixed list of pure functions (expression_functions.py). Every value it
builds is charged to a budget before it is built (expression_budget.py), so no expression can exhaust memory or time,
however its `let`s share and nest what they build.

A template is any JSON value. A string that is exactly `{{ expr }}` becomes the expression's value (keeping its type);
a string with `{{ expr }}` inside other text is interpolated; every other value is taken literally.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from itertools import islice
from typing import Any

from mcp_hazard.scenario.expression_budget import (
    EXPRESSION_BUDGET,
    MAX_INT,
    MAX_VALUE_DEPTH,
    MAX_VALUE_UNITS,
    Budget,
    BudgetExceeded,
    ExpressionError,
    brief,
)
from mcp_hazard.scenario.expression_format import MAX_FORMAT_WIDTH, format_text
from mcp_hazard.scenario.expression_functions import FUNCTIONS, text_of

__all__ = [
    "EXPRESSION_BUDGET", "MAX_FORMAT_WIDTH", "MAX_INT", "MAX_VALUE_DEPTH", "MAX_VALUE_UNITS", "Budget",
    "BudgetExceeded", "ExpressionError", "access_paths", "deepest_let", "evaluate", "parse_expression",
    "referenced_names", "render", "template_expressions",
]  # fmt: skip

MAX_EXPRESSION_CHARS = 2_000
MAX_TEXT_CHARS = 100_000
MAX_ITEMS = 10_000
MAX_EXPONENT = 64
MAX_DEPTH = 100
MAX_LET_DEPTH = 64  # `let`s that each use the one before: checked when the file is loaded

_WHOLE = re.compile(r"^\{\{(.*)\}\}$", re.DOTALL)
_PART = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


@lru_cache(maxsize=4096)
def parse_expression(source: str) -> ast.Expression:
    """Parse once and check every node against the whitelist, so bad expressions fail at load time."""
    if len(source) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse expression {source.strip()!r}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"expression nested too deeply: {source.strip()[:60]!r}") from None
    for node in ast.walk(tree):
        _check_node(node, source)
    if _depth(tree) > MAX_DEPTH:
        raise ExpressionError(f"expression nested deeper than {MAX_DEPTH} levels: {source.strip()[:60]!r}")
    return tree


def _depth(node: ast.AST) -> int:
    """Nesting depth without recursion, so a long chain of operators cannot overflow the stack."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        current, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(current))
    return deepest


_ALLOWED = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
    ast.Subscript, ast.Attribute, ast.Call, ast.List, ast.Tuple, ast.Dict, ast.Slice, ast.And, ast.Or, ast.Not,
    ast.USub, ast.UAdd, *_BINARY, *_COMPARE,
)  # fmt: skip


def _check_node(node: ast.AST, source: str) -> None:
    if not isinstance(node, _ALLOWED):
        raise ExpressionError(f"{type(node).__name__} is not allowed in expression {source.strip()!r}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise ExpressionError(f"unknown function in {source.strip()!r}; known: {', '.join(sorted(FUNCTIONS))}")
        if node.keywords:
            raise ExpressionError(f"keyword arguments are not allowed in {source.strip()!r}")
    if isinstance(node, ast.Constant) and not isinstance(node.value, str | int | float | bool | None):
        raise ExpressionError(f"constant {node.value!r} is not a JSON value in {source.strip()!r}")
    if isinstance(node, ast.Dict) and any(key is None for key in node.keys):
        raise ExpressionError(f"'**' unpacking is not allowed in {source.strip()!r}")
    if isinstance(node, ast.Slice) and node.step is not None:
        raise ExpressionError(f"slices with a step are not allowed in {source.strip()!r}")
    if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
        raise ExpressionError(f"field names starting with '_' are not allowed in {source.strip()!r}")


def evaluate(source: str, names: Mapping[str, Any], budget: Budget | None = None) -> Any:
    """Evaluate an expression against `names` (tool arguments, or earlier golden-path results), charging what it
    builds to `budget` (a fresh one of EXPRESSION_BUDGET units when none is given)."""
    tree = parse_expression(source)
    try:
        return _bounded(_eval(tree.body, names, Budget() if budget is None else budget))
    except ExpressionError:
        raise
    except (RecursionError, MemoryError):
        raise ExpressionError(f"expression nested too deeply: {source.strip()[:60]!r}") from None
    except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError, OverflowError, AttributeError) as exc:
        raise ExpressionError(f"{source.strip()!r}: {type(exc).__name__}: {exc}") from None


def _bounded(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, complex):
        raise ExpressionError("result is not a real number")
    if isinstance(value, int) and abs(value) > MAX_INT:
        raise ExpressionError(f"integer result larger than {MAX_INT}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ExpressionError("result is not a finite number")
    if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
        raise ExpressionError(f"text result longer than {MAX_TEXT_CHARS} characters")
    if isinstance(value, list | dict) and len(value) > MAX_ITEMS:
        raise ExpressionError(f"result with more than {MAX_ITEMS} items")
    return value


def _eval(node: ast.expr, names: Mapping[str, Any], budget: Budget) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[node.id]
        if node.id not in names:
            raise ExpressionError(f"unknown name {node.id!r}; known: {', '.join(sorted(names)) or 'none'}")
        return names[node.id]
    if isinstance(node, ast.Attribute):
        return _lookup(_eval(node.value, names, budget), node.attr)
    if isinstance(node, ast.Subscript):
        container = _eval(node.value, names, budget)
        if isinstance(node.slice, ast.Slice):
            parts = [None if p is None else _eval(p, names, budget) for p in (node.slice.lower, node.slice.upper)]
            return _bounded(_built(container[parts[0] : parts[1]], budget, "a slice"))
        return _lookup(container, _eval(node.slice, names, budget))
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, names, budget), _eval(node.right, names, budget)
        return _bounded(_binary(node.op, left, right, budget))
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, names, budget)
        budget.spend(1, "an operator")
        if isinstance(node.op, ast.Not):
            return not operand
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BoolOp):
        return _bool_op(node, names, budget)
    if isinstance(node, ast.Compare):
        return _compare(node, names, budget)
    if isinstance(node, ast.IfExp):
        test = _eval(node.test, names, budget)
        return _eval(node.body, names, budget) if test else _eval(node.orelse, names, budget)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        args = [_eval(arg, names, budget) for arg in node.args]
        budget.spend(1, "a function call")
        return _bounded(FUNCTIONS[node.func.id](budget, *args))
    if isinstance(node, ast.List | ast.Tuple):
        return _built([_eval(item, names, budget) for item in node.elts], budget, "a list")
    if isinstance(node, ast.Dict):
        built = {
            text_of(_eval(k, names, budget), budget) if k is not None else "": _eval(v, names, budget)
            for k, v in zip(node.keys, node.values, strict=True)
        }
        return _built(built, budget, "a mapping")
    raise ExpressionError(f"{type(node).__name__} is not allowed")


def _bool_op(node: ast.BoolOp, names: Mapping[str, Any], budget: Budget) -> Any:
    """`and` / `or` as Python does them: the deciding value, and nothing after it evaluated."""
    result: Any = isinstance(node.op, ast.And)
    for value in node.values:
        result = _eval(value, names, budget)
        if not result if isinstance(node.op, ast.And) else result:
            return result
    return result


def _compare(node: ast.Compare, names: Mapping[str, Any], budget: Budget) -> bool:
    """A chain of comparisons, each costing the size of what it compares (a scalar costs one)."""
    left = _eval(node.left, names, budget)
    for op, comparator in zip(node.ops, node.comparators, strict=True):
        right = _eval(comparator, names, budget)
        scalars = type(left) in _SCALARS and type(right) in _SCALARS
        budget.spend(1 if scalars else budget.size(left) + budget.size(right), "a comparison")
        if not _COMPARE[type(op)](left, right):
            return False
        left = right
    return True


_SCALARS = frozenset({int, float, bool, type(None)})


def _binary(op: ast.operator, left: Any, right: Any, budget: Budget) -> Any:
    """An arithmetic operator, refused before it builds anything too big: `+` of texts or lists is charged for what it
    makes, `%` of a text is a bounded format, and `**` of whole numbers refused before it makes a huge one."""
    if isinstance(op, ast.Add):
        if isinstance(left, str) and isinstance(right, str):
            budget.room(len(left) + len(right) + 1, "joining texts with '+'")
            budget.left -= len(left) + len(right) + 1
            return left + right
        if isinstance(left, list) and isinstance(right, list):
            (left_size, left_height), (right_size, right_height) = budget.measure(left), budget.measure(right)
            budget.room(left_size + right_size - 1, "joining lists with '+'")  # before the copy is made
            height = max(left_height, right_height, 1)
            return budget.built(left + right, left_size + right_size - 1, height, "joining lists with '+'")
    elif isinstance(op, ast.Mod) and isinstance(left, str):
        return format_text(left, right, budget)
    elif isinstance(op, ast.Pow) and isinstance(right, int | float):
        if abs(right) > MAX_EXPONENT:
            raise ExpressionError(f"exponent larger than {MAX_EXPONENT}")
        if isinstance(left, int) and isinstance(right, int) and right > 0 and (abs(left).bit_length() - 1) * right > 64:
            raise ExpressionError(f"integer result larger than {MAX_INT}")
    elif isinstance(op, ast.Mult) and (isinstance(left, str | list) or isinstance(right, str | list)):
        raise ExpressionError("repeating text or lists with '*' is not allowed")
    budget.spend(1, "an operator")
    return _BINARY[type(op)](left, right)


def _built(value: Any, budget: Budget, what: str) -> Any:
    """Charge a value just made from others (a list, a mapping, a slice) for its size, before it is handed on."""
    if isinstance(value, str):
        budget.spend(len(value) + 1, what)
        return value
    if isinstance(value, dict):
        size, height = budget.sizes(value.values())
        size += sum(map(len, value)) + len(value)
    else:
        size, height = budget.sizes(value)
    return budget.built(value, size + 1, height + 1, what)


def _lookup(container: Any, key: Any) -> Any:
    if isinstance(container, Mapping):
        if key not in container:
            fields = ", ".join(islice(map(str, container), 20)) + (", ..." if len(container) > 20 else "")
            raise ExpressionError(f"no field {brief(key)}; fields: {fields or 'none'}")
        return container[key]
    if isinstance(container, list | str):
        if not isinstance(key, int) or isinstance(key, bool):
            raise ExpressionError(f"list index must be a whole number, got {brief(key)}")
        if not -len(container) <= key < len(container):
            raise ExpressionError(f"index {key} out of range (length {len(container)})")
        return container[key]
    raise ExpressionError(f"cannot look up {brief(key)} in {brief(container)}")


def template_expressions(template: Any) -> list[str]:
    """Every expression inside a template, so a loader can check them all before anything runs."""
    found: list[str] = []
    if isinstance(template, str):
        found.extend(match.group(1) for match in _PART.finditer(template))
    elif isinstance(template, list):
        for item in template:
            found.extend(template_expressions(item))
    elif isinstance(template, dict):
        for item in template.values():
            found.extend(template_expressions(item))
    return found


def render(template: Any, names: Mapping[str, Any], budget: Budget | None = None) -> Any:
    """Fill a template: whole-expression strings keep their type, mixed strings are interpolated. What it builds is
    charged to `budget` (a fresh one of EXPRESSION_BUDGET units when none is given): every list and mapping that
    holds an expression's value costs its size, so a value used in many places counts in each; a part of the template
    with no expression is a copy of a literal from the file and costs nothing."""
    if budget is None:
        budget = Budget()
    if isinstance(template, str):
        whole = _WHOLE.match(template.strip())
        if whole and "{{" not in whole.group(1):
            budget.placed += 1
            return evaluate(whole.group(1), names, budget)
        if "{{" not in template:
            return template
        budget.placed += 1
        text = _PART.sub(lambda m: text_of(evaluate(m.group(1), names, budget), budget), template)
        return _bounded(_built(text, budget, "a template's text"))
    placed = budget.placed
    if isinstance(template, dict):
        rendered = {key: render(value, names, budget) for key, value in template.items()}
        if budget.placed == placed:
            return rendered
        size, height = budget.sizes(rendered.values())  # sized here, not by _built: this runs on most calls
        size += sum(map(len, rendered)) + len(rendered) + 1
        return budget.built(rendered, size, height + 1, "a template's mapping")
    if isinstance(template, list):
        items = [render(item, names, budget) for item in template]
        return items if budget.placed == placed else _built(items, budget, "a template's list")
    return template


def deepest_let(let: Mapping[str, str]) -> str | None:
    """The first `let` name at the end of a chain of more than MAX_LET_DEPTH `let`s each using the one before (None
    when there is none), so such a file is refused at load with the name, not at its first call."""
    depth: dict[str, int] = {}
    for name, source in let.items():
        try:
            used = referenced_names(source)
        except ExpressionError:
            used = set()  # reported on its own
        depth[name] = 1 + max((depth[other] for other in used if other in depth and other != name), default=0)
        if depth[name] > MAX_LET_DEPTH:
            return name
    return None


def referenced_names(source: str) -> set[str]:
    """Top-level names an expression reads (golden-path steps use this to find the steps they depend on)."""
    tree = parse_expression(source)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and id(node) not in called}
    return used - {"true", "false", "null"}


def _chain(node: ast.expr, root: str) -> list[Any] | None:
    """The access path of `node` if it reads from the name `root` (`a.b[0].c` -> ['b', 0, 'c'])."""
    if isinstance(node, ast.Name):
        return [] if node.id == root else None
    if isinstance(node, ast.Attribute):
        base = _chain(node.value, root)
        return None if base is None else [*base, node.attr]
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base = _chain(node.value, root)
        return None if base is None else [*base, node.slice.value]
    return None


def access_paths(source: str, root: str) -> list[list[Any]]:
    """The access paths an expression reads from the name `root` (`min_by(s1.flights, ...)` -> [['flights']])."""
    tree = parse_expression(source)
    found: list[list[Any]] = []
    extended: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute | ast.Subscript):
            extended.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.expr) and id(node) not in extended:
            path = _chain(node, root)
            if path is not None:
                found.append(path)
    # a name read through a dynamic index (x[i]) stops the chain: the whole prefix is needed
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Constant):
            path = _chain(node.value, root)
            if path is not None:
                found.append(path)
    return found
