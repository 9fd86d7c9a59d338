"""Task templates: each turns a domain's world into one natural question, its canonical answer and a golden path.

A template picks the items it asks about with a random generator seeded by the domain, the template and its variant,
and only where the answer is unique (distinct values make every "cheapest" and "largest" unique; a list question
needs at least one item that qualifies). Its canonical answer is computed here in Python from the world, and its
golden path reaches it through the tools, so loading a generated file checks one against the other.

Roles of the steps (the shape of a golden path, tests/suite): F find, G get, L list, O get owner, C convert.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_hazard.generate.suite.world import RATES, Fields, Item, World

Task = dict[str, Any]


@dataclass(frozen=True)
class Ctx:
    world: World
    f: Fields
    rng: random.Random
    variant: int

    @property
    def d(self) -> Any:
        return self.world.domain

    def pick(self, n: int, where: Callable[[Item], bool] = lambda i: True) -> list[Item]:
        return self.rng.sample([i for i in self.world.items if where(i)], n)

    def kind(self, category: str, plural: bool = False) -> str:
        noun = self.d.items if plural else self.d.item
        return str(self.d.kind_phrase.format(c=category, item=noun))

    def other_currency(self) -> str:
        return self.rng.choice(sorted(c for c in RATES if c != self.d.currency))

    def day(self) -> str:
        return (dt.date(2026, 6, 1) + dt.timedelta(days=self.rng.randrange(0, 150))).isoformat()


def q(item: Item) -> str:
    return f'"{item.name}"'


def said(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def either(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def step(id_: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"id": id_, "tool": tool, "arguments": arguments}


def ref(step_id: str, field: str) -> str:
    return f"{{{{ {step_id}.{field} }}}}"


def number(value: float) -> dict[str, Any]:
    return {"value": value, "match": "numeric"}


def money(value: float) -> dict[str, Any]:
    return {"value": round(value, 2), "match": "numeric", "tolerance": 0.005}


def exact(value: Any) -> dict[str, Any]:
    return {"value": value, "match": "exact"}


def name(value: str) -> dict[str, Any]:
    return {"value": value, "match": "case_insensitive"}


def listing(values: list[str]) -> dict[str, Any]:
    return {"value": values, "match": "unordered_list"}


def convert(amount: float, source: str, target: str) -> float:
    return round(amount / RATES[source] * RATES[target], 2)


def task(prompt: str, answer: dict[str, Any], workflow: str, steps: list[dict[str, Any]], golden: Any) -> Task:
    return {"prompt": prompt, "answer": answer, "workflow": workflow, "golden_path": {"steps": steps, "answer": golden}}


def find_get(c: Ctx, item: Item, n: str = "") -> list[dict[str, Any]]:
    return [
        step(f"found{n}", c.f.find, name=item.name),
        step(f"rec{n}", c.f.get, **{c.f.item_id: ref(f"found{n}", c.f.item_id)}),
    ]


def owner_step(c: Ctx, n: str = "") -> dict[str, Any]:
    return step(f"own{n}", c.f.get_owner, **{c.f.owner_id: ref(f"rec{n}", c.f.owner_id)})


# ---- sequential: one chain


def t_measure(c: Ctx) -> Task:
    [i] = c.pick(1)
    return task(
        f"{c.d.measure_q.format(x=q(i))} Answer with the number of {c.d.unit}.",
        number(i.measure),
        "sequential",
        find_get(c, i),
        ref("rec", c.d.measure),
    )


def t_price(c: Ctx) -> Task:
    [i] = c.pick(1)
    return task(
        f"{c.d.price_q.format(x=q(i))} Answer with the amount in {c.d.currency}.",
        money(i.price),
        "sequential",
        find_get(c, i),
        ref("rec", c.f.price),
    )


def t_date(c: Ctx) -> Task:
    [i] = c.pick(1)
    return task(
        f"{c.d.date_q.format(x=q(i))} Answer with the date as YYYY-MM-DD.",
        exact(i.date),
        "sequential",
        find_get(c, i),
        ref("rec", c.d.date_field),
    )


def t_flag(c: Ctx) -> Task:
    """About an item whose yes/no is the rarer one in its domain, so most other items answer the other way: a
    silently wrong id read on the way then changes the answer."""
    rare = sum(i.flag for i in c.world.items) * 2 < len(c.world.items)
    [i] = c.pick(1, lambda i: i.flag == rare)
    return task(
        f"{c.d.flag_q.format(x=q(i))} Answer yes or no.",
        exact(i.flag),
        "sequential",
        find_get(c, i),
        ref("rec", c.d.flag_field),
    )


def t_owner_name(c: Ctx) -> Task:
    [i] = c.pick(1)
    return task(
        f"{c.d.owner_q.format(x=q(i))} Answer with the {c.d.owner}'s name.",
        name(c.world.owner_of(i).name),
        "sequential",
        [*find_get(c, i), owner_step(c)],
        ref("own", "name"),
    )


def t_owner_city(c: Ctx) -> Task:
    [i] = c.pick(1)
    return task(
        f"In which city is the {c.d.owner} of {q(i)} based? Answer with the city.",
        name(c.world.owner_of(i).city),
        "sequential",
        [*find_get(c, i), owner_step(c)],
        ref("own", "city"),
    )


def t_arrival(c: Ctx) -> Task:
    [i] = c.pick(1)
    day = c.day()
    due = (dt.date.fromisoformat(day) + dt.timedelta(days=c.world.owner_of(i).days)).isoformat()
    return task(
        f"{c.d.arrival_q.format(x=q(i), d=day)} Answer with the date as YYYY-MM-DD.",
        exact(due),
        "sequential",
        [*find_get(c, i), owner_step(c)],
        f"{{{{ add_days('{day}', own.{c.d.days_field}) }}}}",
    )


def t_days(c: Ctx) -> Task:
    [i] = c.pick(1)
    return task(
        f"What is the {c.d.days_label} of the {c.d.owner} of {q(i)}? Answer with a whole number of days.",
        number(c.world.owner_of(i).days),
        "sequential",
        [*find_get(c, i), owner_step(c)],
        ref("own", c.d.days_field),
    )


def t_price_converted(c: Ctx) -> Task:
    [i] = c.pick(1)
    to = c.other_currency()
    steps = [
        *find_get(c, i),
        step("conv", "convert_currency", amount=ref("rec", c.f.price), from_currency=c.d.currency, to_currency=to),
    ]
    return task(
        f"{c.d.price_q.format(x=q(i))} I need the figure in {to}, not {c.d.currency}. Answer with the amount in {to}.",
        money(convert(i.price, c.d.currency, to)),
        "sequential",
        steps,
        ref("conv", "amount"),
    )


def t_minimum_converted(c: Ctx) -> Task:
    [i] = c.pick(1)
    to = c.other_currency()
    steps = [
        *find_get(c, i),
        owner_step(c),
        step("conv", "convert_currency", amount=ref("own", c.f.minimum), from_currency=c.d.currency, to_currency=to),
    ]
    return task(
        f"What is the {c.d.min_label} of the {c.d.owner} of {q(i)}, converted to {to}? Answer with the amount in {to}.",
        money(convert(c.world.owner_of(i).minimum, c.d.currency, to)),
        "sequential",
        steps,
        ref("conv", "amount"),
    )


def paged_category(c: Ctx, answer_of: Callable[[list[Item]], Any]) -> str:
    """A category whose answer needs more than the list's first item (so a page cut changes it), when there is one:
    pagination then bites."""
    options = [
        cat for cat in c.d.categories if answer_of(c.world.in_category(cat)) != answer_of(c.world.in_category(cat)[:1])
    ]
    return c.rng.choice(options or list(c.d.categories))


def cheapest(items: list[Item]) -> Item:
    return min(items, key=lambda i: i.price)


def priciest(items: list[Item]) -> Item:
    return max(items, key=lambda i: i.price)


def t_cheapest_attribute(c: Ctx) -> Task:
    """A date or a measure, not a yes/no: a silently wrong reading must have a value to change."""
    by_date = c.variant % 2 == 0
    attribute: Callable[[Item], Any] = (lambda i: i.date) if by_date else (lambda i: i.measure)
    cat = paged_category(c, lambda items: attribute(cheapest(items)))
    i = cheapest(c.world.in_category(cat))
    x = f"the {c.d.cheapest} {c.kind(cat)}"
    lst = step("cat", c.f.list, **{c.f.category: cat})
    get = step("rec", c.f.get, **{c.f.item_id: f"{{{{ min_by(cat.{c.d.items}, '{c.f.price}').{c.f.item_id} }}}}"})
    if by_date:
        return task(
            f"{c.d.date_q.format(x=x)} Answer with the date as YYYY-MM-DD.",
            exact(i.date),
            "sequential",
            [lst, get],
            ref("rec", c.d.date_field),
        )
    return task(
        f"{c.d.measure_q.format(x=x)} Answer with the number of {c.d.unit}.",
        number(i.measure),
        "sequential",
        [lst, get],
        ref("rec", c.d.measure),
    )


def t_priciest_owner(c: Ctx) -> Task:
    city = bool(c.variant % 2)
    cat = paged_category(c, lambda items: c.world.owner_of(priciest(items)).city if city else priciest(items).owner)
    i = priciest(c.world.in_category(cat))
    steps = [
        step("cat", c.f.list, **{c.f.category: cat}),
        step("rec", c.f.get, **{c.f.item_id: f"{{{{ max_by(cat.{c.d.items}, '{c.f.price}').{c.f.item_id} }}}}"}),
        owner_step(c),
    ]
    if city:
        return task(
            f"In which city is the {c.d.owner} of the {c.d.priciest} {c.kind(cat)} based? Answer with the city.",
            name(c.world.owner_of(i).city),
            "sequential",
            steps,
            ref("own", "city"),
        )
    return task(
        f"{c.d.owner_q.format(x=f'the {c.d.priciest} {c.kind(cat)}')} Answer with the {c.d.owner}'s name.",
        name(c.world.owner_of(i).name),
        "sequential",
        steps,
        ref("own", "name"),
    )


def t_cheapest_in_own(c: Ctx) -> Task:
    want = bool(c.variant % 2)
    cat = paged_category(c, lambda items: cheapest(items).id)
    members = c.world.in_category(cat)
    i = cheapest(members) if want else members[0]  # the first item: a page cut would make it look cheapest
    steps = [step("found", c.f.find, name=i.name), step("cat", c.f.list, **{c.f.category: ref("found", c.f.category)})]
    return task(
        f"Is {q(i)} the {c.d.cheapest} {c.d.item} {c.d.category_in} its {c.d.category_label}? Answer yes or no.",
        exact(want),
        "sequential",
        steps,
        f"{{{{ min_by(cat.{c.d.items}, '{c.f.price}').name == found.name }}}}",
    )


def t_cheaper_same_category(c: Ctx) -> Task:
    cat = c.rng.choice(list(c.d.categories))
    ranked = sorted(c.world.in_category(cat), key=lambda i: i.price)
    rank = c.rng.randrange(1, 4)  # one to three cheaper items
    i = ranked[rank]
    steps = [step("found", c.f.find, name=i.name), step("cat", c.f.list, **{c.f.category: ref("found", c.f.category)})]
    golden = f"{{{{ pluck(sort_by(cat.{c.d.items}, '{c.f.price}')[0:{rank}], 'name') }}}}"
    return task(
        f"Which {c.d.items} {c.d.category_in} the same {c.d.category_label} as {q(i)} have a lower "
        f"{c.d.price_label}? Answer with their names, separated by commas.",
        listing([r.name for r in ranked[:rank]]),
        "sequential",
        steps,
        golden,
    )


def t_owner_of_cheapest_sibling(c: Ctx) -> Task:
    cat = paged_category(c, lambda items: cheapest(items).owner)
    members = c.world.in_category(cat)
    best = cheapest(members)
    i = c.rng.choice([m for m in members if m is not best])
    steps = [
        step("found", c.f.find, name=i.name),
        step("cat", c.f.list, **{c.f.category: ref("found", c.f.category)}),
        step("rec", c.f.get, **{c.f.item_id: f"{{{{ min_by(cat.{c.d.items}, '{c.f.price}').{c.f.item_id} }}}}"}),
        owner_step(c),
    ]
    return task(
        c.d.owner_q.format(x=f"the {c.d.cheapest} {c.d.item} {c.d.category_in} the same {c.d.category_label} as {q(i)}")
        + f" Answer with the {c.d.owner}'s name.",
        name(c.world.owner_of(best).name),
        "sequential",
        steps,
        ref("own", "name"),
    )


SEQUENTIAL = (
    t_measure,
    t_price,
    t_arrival,
    t_price_converted,
    t_minimum_converted,
    t_days,
    t_date,
    t_flag,
    t_owner_name,
    t_owner_city,
)
SEQUENTIAL_LISTS = (
    t_cheapest_attribute,
    t_priciest_owner,
    t_cheapest_in_own,
    t_cheaper_same_category,
    t_owner_of_cheapest_sibling,
)
