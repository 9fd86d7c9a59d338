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
    d, f = world.domain, fields(world.domain)
    cur, unit = d.currency, d.unit
    id_arg = {f.item_id: _text(f"{d.id_label.capitalize()} of the {d.item}, e.g. {world.items[0].id}")}
    owner_arg = {f.owner_id: _text(f"Id of the {d.owner}, e.g. {world.owners[0].id}")}
    record = {
        f.item_id: {"type": "string"},
        "name": {"type": "string"},
        f.category: {"type": "string"},
        d.measure: {"type": "integer"},
        f.price: {"type": "number"},
        d.date_field: {"type": "string"},
        d.flag_field: {"type": "boolean"},
        f.owner_id: {"type": "string"},
    }
    owner_record = {
        f.owner_id: {"type": "string"},
        "name": {"type": "string"},
        "city": {"type": "string"},
        d.days_field: {"type": "integer"},
        f.minimum: {"type": "number"},
    }

    def item_row(i: Item) -> dict[str, Any]:
        return {
            f.item_id: i.id,
            "name": i.name,
            f.category: i.category,
            d.measure: i.measure,
            f.price: i.price,
            d.date_field: i.date,
            d.flag_field: i.flag,
            f.owner_id: world.owner_of(i).id,
        }

    rates = "{" + ", ".join(f"'{k}': {v}" for k, v in RATES.items()) + "}"
    return [
        {
            "name": f.find,
            "description": f"Find a {d.item} by its name; returns its {d.id_label} and {d.category_label}.",
            "input_schema": _obj({"name": _text(f"Name of the {d.item}")}),
            "annotations": READ,
            "behaviour": {
                "kind": "table",
                "casefold": True,
                "rows": [
                    {"when": {"name": i.name}, "result": {f.item_id: i.id, "name": i.name, f.category: i.category}}
                    for i in world.items
                ],
                "default": {"error": f"No {d.item} named '{{{{ name }}}}'."},
            },
        },
        {
            "name": f.get,
            "description": f"The record of a {d.item}: name, {d.category_label}, {d.measure_label} "
            f"({unit}), price in {cur}, {d.date_field.replace('_', ' ')}, {d.flag_field.replace('_', ' ')} and "
            f"{d.owner} id.",
            "input_schema": _obj(id_arg),
            "output_schema": _obj(record),
            "annotations": READ,
            "serves": {f"{snake(d.item)}_price": f.price, f"{snake(d.item)}_measure": d.measure},
            "behaviour": {
                "kind": "table",
                "rows": [{"when": {f.item_id: i.id}, "result": item_row(i)} for i in world.items],
                "default": {"error": f"Unknown {d.id_label} '{{{{ {f.item_id} }}}}'."},
            },
        },
        {
            "name": f.list,
            "description": f"The {d.items} in one {d.category_label}, with {d.id_label}, name and "
            f"price in {cur}, sorted by {d.id_label}.",
            "input_schema": _obj(
                {
                    f.category: {
                        "type": "string",
                        "enum": list(d.categories),
                        "description": d.category_label.capitalize(),
                    }
                }
            ),
            "annotations": READ,
            "behaviour": {
                "kind": "table",
                "rows": [
                    {
                        "when": {f.category: c},
                        "result": {
                            f.category: c,
                            d.items: [
                                {f.item_id: i.id, "name": i.name, f.price: i.price} for i in world.in_category(c)
                            ],
                        },
                    }
                    for c in d.categories
                ],
                "default": {"error": f"Unknown {d.category_label}."},
            },
        },
        {
            "name": f.ledger,
            "description": f"Accounts ledger entry of a {d.item}: its price in cents of {cur} and "
            f"its {d.measure_label} ({unit}).",
            "input_schema": _obj(id_arg),
            "annotations": READ,
            "serves": {f"{snake(d.item)}_price": "price_cents", f"{snake(d.item)}_measure": d.measure},
            "behaviour": {
                "kind": "table",
                "rows": [
                    {
                        "when": {f.item_id: i.id},
                        "result": {f.item_id: i.id, "price_cents": round(i.price * 100), d.measure: i.measure},
                    }
                    for i in world.items
                ],
                "default": {"error": f"No ledger entry for '{{{{ {f.item_id} }}}}'."},
            },
        },
        {
            "name": f.get_owner,
            "description": f"The record of a {d.owner}: name, city, {d.days_label} in days and {d.min_label} in {cur}.",
            "input_schema": _obj(owner_arg),
            "output_schema": _obj(owner_record),
            "annotations": READ,
            "serves": {f"{snake(d.owner)}_terms": [d.days_field, f.minimum]},
            "behaviour": {
                "kind": "table",
                "rows": [
                    {
                        "when": {f.owner_id: o.id},
                        "result": {
                            f.owner_id: o.id,
                            "name": o.name,
                            "city": o.city,
                            d.days_field: o.days,
                            f.minimum: o.minimum,
                        },
                    }
                    for o in world.owners
                ],
                "default": {"error": f"Unknown {d.owner} id '{{{{ {f.owner_id} }}}}'."},
            },
        },
        {
            "name": f.directory,
            "description": f"Trade directory entry of a {d.owner}: {d.days_label} in days and "
            f"{d.min_label} in cents of {cur}.",
            "input_schema": _obj(owner_arg),
            "annotations": READ,
            "serves": {f"{snake(d.owner)}_terms": [d.days_field, "minimum_order_cents"]},
            "behaviour": {
                "kind": "table",
                "rows": [
                    {
                        "when": {f.owner_id: o.id},
                        "result": {
                            f.owner_id: o.id,
                            d.days_field: o.days,
                            "minimum_order_cents": round(o.minimum * 100),
                        },
                    }
                    for o in world.owners
                ],
                "default": {"error": f"No directory entry for '{{{{ {f.owner_id} }}}}'."},
            },
        },
        {
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
        },
    ]
