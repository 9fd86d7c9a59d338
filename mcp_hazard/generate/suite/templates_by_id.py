"""Short sequential task templates that start from an id the question gives, or from a list. The helpers are in
templates.py."""

from __future__ import annotations

from mcp_hazard.generate.suite.templates import Ctx, Task, convert, money, name, owner_step, ref, step, task


def t_owner_by_id(c: Ctx) -> Task:
    [i] = c.pick(1)
    steps = [step("rec", c.f.get, **{c.f.item_id: i.id}), owner_step(c)]
    return task(
        f"{c.d.owner_q.format(x=f'the {c.d.item} {i.id}')} Answer with the {c.d.owner}'s name.",
        name(c.world.owner_of(i).name),
        "sequential",
        steps,
        ref("own", "name"),
    )


def t_price_by_id_converted(c: Ctx) -> Task:
    [i] = c.pick(1)
    to = c.other_currency()
    steps = [
        step("rec", c.f.get, **{c.f.item_id: i.id}),
        step("conv", "convert_currency", amount=ref("rec", c.f.price), from_currency=c.d.currency, to_currency=to),
    ]
    return task(
        f"What is the {c.d.price_label} of the {c.d.item} {i.id} in {to}? Answer with the amount in {to}.",
        money(convert(i.price, c.d.currency, to)),
        "sequential",
        steps,
        ref("conv", "amount"),
    )


def t_owner_minimum_by_id(c: Ctx) -> Task:
    o = c.rng.choice(list(c.world.owners))
    to = c.other_currency()
    steps = [
        step("own", c.f.get_owner, **{c.f.owner_id: o.id}),
        step("conv", "convert_currency", amount=ref("own", c.f.minimum), from_currency=c.d.currency, to_currency=to),
    ]
    return task(
        f"What is the {c.d.min_label} of the {c.d.owner} {o.id} ({o.name}) in {to}? Answer with the amount in {to}.",
        money(convert(o.minimum, c.d.currency, to)),
        "sequential",
        steps,
        ref("conv", "amount"),
    )


def t_cheapest_converted(c: Ctx) -> Task:
    cat = c.rng.choice(list(c.d.categories))
    best = min(c.world.in_category(cat), key=lambda i: i.price)
    to = c.other_currency()
    steps = [
        step("cat", c.f.list, **{c.f.category: cat}),
        step(
            "conv",
            "convert_currency",
            amount=f"{{{{ min_by(cat.{c.d.items}, '{c.f.price}').{c.f.price} }}}}",
            from_currency=c.d.currency,
            to_currency=to,
        ),
    ]
    return task(
        f"What is the lowest {c.d.price_label} of any {c.kind(cat)}, in {to}? Answer with the amount in {to}.",
        money(convert(best.price, c.d.currency, to)),
        "sequential",
        steps,
        ref("conv", "amount"),
    )


SEQUENTIAL_BY_ID = (t_owner_by_id, t_price_by_id_converted, t_owner_minimum_by_id, t_cheapest_converted)
