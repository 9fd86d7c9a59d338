"""A domain's invented world (items and owners with drawn values) and the tools that serve it, as scenario dicts.

Every value is drawn from a random generator seeded by a stable hash of the domain and the suite's seed, and every
measure, price, date and number of days is distinct within a domain, so no question over them can end in a tie.

The tools, named after the domain's nouns (`find_book`, `get_book`, `list_books`, `book_ledger`, `get_publisher`,
`publisher_directory`, `convert_currency`):

- `find` (name -> id and category), `get` (id -> the full record), `list` (category -> the items, sorted by id, so
  the one a question needs is often not first: a page cut hides it);
- `ledger`, a second source of an item's price (in cents) and measure, and `directory`, a second source of an
  owner's days and minimum order (in cents): the fallback of a permanent error and the cross-check of a conflict;
- `convert_currency`, fixed rates between the four currencies.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_hazard.generate.dag import stable_rng
from mcp_hazard.generate.suite.domains import CITIES, Domain

RATES = {"EUR": 1.0, "GBP": 0.85, "USD": 1.08, "CHF": 0.96}  # units of each currency per EUR
FIRST_DAY = dt.date(2026, 1, 5)


@dataclass(frozen=True)
class Item:
    id: str
    name: str
    category: str
    measure: int
    price: float
    date: str
    flag: bool
    owner: int  # index into World.owners


@dataclass(frozen=True)
class Owner:
    id: str
    name: str
    city: str
    days: int
    minimum: float


@dataclass(frozen=True)
class World:
    domain: Domain
    items: tuple[Item, ...]
    owners: tuple[Owner, ...]

    def in_category(self, category: str) -> list[Item]:
        return sorted((i for i in self.items if i.category == category), key=lambda i: i.id)

    def owner_of(self, item: Item) -> Owner:
        return self.owners[item.owner]


def a(noun: str) -> str:
    """The noun with its indefinite article: "an ingredient", "a book"."""
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def snake(text: str) -> str:
    return text.lower().replace(" ", "_").replace("-", "_")


def build_world(domain: Domain, seed: int) -> World:
    rng = stable_rng(f"suite|{domain.id}|{seed}")
    low, high = domain.measure_range
    measures = rng.sample(range(low, high + 1), 15)
    cents = rng.sample(range(domain.price_range[0] * 100, domain.price_range[1] * 100), 15)
    days = rng.sample(range(0, 400), 15)
    ids = rng.sample(range(1000, 9999), 15)
    items = tuple(
        Item(
            id=f"{domain.id_prefix}-{ids[i]}",
            name=domain.names[i],
            category=domain.categories[i // 5],
            measure=measures[i],
            price=cents[i] / 100,
            date=(FIRST_DAY + dt.timedelta(days=days[i])).isoformat(),
            flag=rng.random() < 0.45,
            owner=rng.randrange(5),
        )
        for i in range(15)
    )
    cities = rng.sample(CITIES, 5)
    lead = rng.sample(range(2, 22), 5)
    minimum = rng.sample(range(60, 900), 5)
    owner_ids = rng.sample(range(100, 999), 5)
    owners = tuple(
        Owner(
            id=f"{domain.owner_prefix}-{owner_ids[i]}",
            name=domain.owner_names[i],
            city=cities[i],
            days=lead[i],
            minimum=float(minimum[i] * 5),
        )
        for i in range(5)
    )
    return World(domain, items, owners)


# ---- field names, shared by the tools and the task templates


@dataclass(frozen=True)
class Fields:
    item_id: str
    owner_id: str
    category: str
    price: str
    minimum: str
    find: str
    get: str
    list: str
    ledger: str
    get_owner: str
    directory: str


def fields(domain: Domain) -> Fields:
    item, owner, cur = snake(domain.item), snake(domain.owner), domain.currency.lower()
    return Fields(
        item_id=f"{item}_id",
        owner_id=f"{owner}_id",
        category=snake(domain.category_label),
        price=f"price_{cur}",
        minimum=f"minimum_order_{cur}",
        find=f"find_{item}",
        get=f"get_{item}",
        list=f"list_{snake(domain.items)}",
        ledger=f"{item}_ledger",
        get_owner=f"get_{owner}",
        directory=f"{owner}_directory",
    )


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or list(props), "additionalProperties": False}


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


READ = {"read_only_hint": True, "idempotent_hint": True}


def build_tools(world: World) -> list[dict[str, Any]]:
    """The domain's tools: four over its items, two over their owners, and the currency converter."""
    d, f = world.domain, fields(world.domain)
    return [
        _find(world, d, f), _get(world, d, f), _list(world, d, f), _ledger(world, d, f),
        _get_owner(world, d, f), _directory(world, d, f), _convert_currency(),
    ]  # fmt: skip


def _table_tool(
    name: str, description: str, arguments: dict[str, Any], rows: list[tuple[dict[str, Any], Any]], missing: str,
    *, output: dict[str, Any] | None = None, serves: dict[str, Any] | None = None, casefold: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """A read-only table tool: a row `(when, result)` per known value of its arguments, `missing` for any other."""
    tool: dict[str, Any] = {"name": name, "description": description, "input_schema": _obj(arguments)}
    if output is not None:
        tool["output_schema"] = _obj(output)
    tool["annotations"] = READ
    if serves is not None:
        tool["serves"] = serves
    behaviour: dict[str, Any] = {"kind": "table", "casefold": True} if casefold else {"kind": "table"}
    behaviour["rows"] = [{"when": when, "result": result} for when, result in rows]
    behaviour["default"] = {"error": missing}
    tool["behaviour"] = behaviour
    return tool


def _id_arg(world: World, d: Domain, f: Fields) -> dict[str, Any]:
    return {f.item_id: _text(f"{d.id_label.capitalize()} of the {d.item}, e.g. {world.items[0].id}")}


def _by_owner(
    world: World, d: Domain, f: Fields, row: Callable[[Owner], dict[str, Any]]
) -> tuple[dict[str, Any], list[tuple[dict[str, Any], Any]]]:
    """The argument and the rows of a tool that looks an owner up by id."""
    argument = {f.owner_id: _text(f"Id of the {d.owner}, e.g. {world.owners[0].id}")}
    return argument, [({f.owner_id: o.id}, row(o)) for o in world.owners]


def _find(world: World, d: Domain, f: Fields) -> dict[str, Any]:
    return _table_tool(
        f.find,
        f"Find {a(d.item)} by its name; returns its {d.id_label} and {d.category_label}.",
        {"name": _text(f"Name of the {d.item}")},
        [({"name": i.name}, {f.item_id: i.id, "name": i.name, f.category: i.category}) for i in world.items],
        f"No {d.item} named '{{{{ name }}}}'.",
        casefold=True,
    )


def _get(world: World, d: Domain, f: Fields) -> dict[str, Any]:
    def row(i: Item) -> dict[str, Any]:
        return {
            f.item_id: i.id, "name": i.name, f.category: i.category, d.measure: i.measure, f.price: i.price,
            d.date_field: i.date, d.flag_field: i.flag, f.owner_id: world.owner_of(i).id,
        }  # fmt: skip

    record = {
        f.item_id: {"type": "string"}, "name": {"type": "string"}, f.category: {"type": "string"},
        d.measure: {"type": "integer"}, f.price: {"type": "number"}, d.date_field: {"type": "string"},
        d.flag_field: {"type": "boolean"}, f.owner_id: {"type": "string"},
    }  # fmt: skip
    return _table_tool(
        f.get,
        f"The record of {a(d.item)}: name, {d.category_label}, {d.measure_label} ({d.unit}), price in {d.currency}, "
        f"{d.date_field.replace('_', ' ')}, {d.flag_field.replace('_', ' ')} and {d.owner} id.",
        _id_arg(world, d, f),
        [({f.item_id: i.id}, row(i)) for i in world.items],
        f"Unknown {d.id_label} '{{{{ {f.item_id} }}}}'.",
        output=record,
        serves={f"{snake(d.item)}_price": f.price, f"{snake(d.item)}_measure": d.measure},
    )


def _list(world: World, d: Domain, f: Fields) -> dict[str, Any]:
    def listed(category: str) -> list[dict[str, Any]]:
        return [{f.item_id: i.id, "name": i.name, f.price: i.price} for i in world.in_category(category)]

    category = {"type": "string", "enum": list(d.categories), "description": d.category_label.capitalize()}
    return _table_tool(
        f.list,
        f"The {d.items} in one {d.category_label}, with {d.id_label}, name and price in {d.currency}, sorted by "
        f"{d.id_label}.",
        {f.category: category},
        [({f.category: c}, {f.category: c, d.items: listed(c)}) for c in d.categories],
        f"Unknown {d.category_label}.",
    )


def _ledger(world: World, d: Domain, f: Fields) -> dict[str, Any]:
    return _table_tool(
        f.ledger,
        f"Accounts ledger entry of {a(d.item)}: its price in cents of {d.currency} and its {d.measure_label} "
        f"({d.unit}).",
        _id_arg(world, d, f),
        [
            ({f.item_id: i.id}, {f.item_id: i.id, "price_cents": round(i.price * 100), d.measure: i.measure})
            for i in world.items
        ],
        f"No ledger entry for '{{{{ {f.item_id} }}}}'.",
        serves={f"{snake(d.item)}_price": "price_cents", f"{snake(d.item)}_measure": d.measure},
    )


def _get_owner(world: World, d: Domain, f: Fields) -> dict[str, Any]:
    def row(o: Owner) -> dict[str, Any]:
        return {f.owner_id: o.id, "name": o.name, "city": o.city, d.days_field: o.days, f.minimum: o.minimum}

    record = {
        f.owner_id: {"type": "string"}, "name": {"type": "string"}, "city": {"type": "string"},
        d.days_field: {"type": "integer"}, f.minimum: {"type": "number"},
    }  # fmt: skip
    return _table_tool(
        f.get_owner,
        f"The record of {a(d.owner)}: name, city, {d.days_label} in days and {d.min_label} in {d.currency}.",
        *_by_owner(world, d, f, row),
        f"Unknown {d.owner} id '{{{{ {f.owner_id} }}}}'.",
        output=record,
        serves={f"{snake(d.owner)}_terms": [d.days_field, f.minimum]},
    )


def _directory(world: World, d: Domain, f: Fields) -> dict[str, Any]:
    def row(o: Owner) -> dict[str, Any]:
        return {f.owner_id: o.id, d.days_field: o.days, "minimum_order_cents": round(o.minimum * 100)}

    return _table_tool(
        f.directory,
        f"Trade directory entry of {a(d.owner)}: {d.days_label} in days and {d.min_label} in cents of {d.currency}.",
        *_by_owner(world, d, f, row),
        f"No directory entry for '{{{{ {f.owner_id} }}}}'.",
        serves={f"{snake(d.owner)}_terms": [d.days_field, "minimum_order_cents"]},
    )


def _convert_currency() -> dict[str, Any]:
    rates = "{" + ", ".join(f"'{k}': {v}" for k, v in RATES.items()) + "}"
    return {
        "name": "convert_currency",
        "description": "Convert an amount between EUR, GBP, USD and CHF at today's fixed rates; rounded to cents.",
        "input_schema": _obj(
            {
                "amount": {"type": "number", "description": "Amount to convert"},
                "from_currency": {"type": "string", "enum": list(RATES)},
                "to_currency": {"type": "string", "enum": list(RATES)},
            }
        ),
        "annotations": READ,
        "behaviour": {
            "kind": "compute",
            "let": {"rates": rates},
            "result": {
                "amount": "{{ round(amount / rates[from_currency] * rates[to_currency], 2) }}",
                "currency": "{{ to_currency }}",
            },
        },
    }
