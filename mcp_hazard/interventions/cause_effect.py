"""Well-known cause-effect pairs and their entities, for the name policies that test memorised relations.

The interventional-reasoning study (paper 002, section 5 and appendix A.2) names variables three ways: random
characters, entities of the Tübingen cause-effect pairs arranged so that the stated relation involves a familiar
pair, and the same entities with no familiar relation ("Random Tübingen"). Its RQ2 looks for a drop where the served
relation contradicts what a model may have memorised. These pairs are in the style of the Tübingen pairs (Mooij et
al., 2016; several are among them: altitude and temperature, cement and compressive strength, horsepower and fuel
consumption, age and blood pressure): the cause comes first. Some effects cause something in turn, so chains of
tools can contradict step after step. Every name is snake_case whose parts are letters only.
"""

from __future__ import annotations

CAUSE_EFFECT: tuple[tuple[str, str], ...] = (
    ("altitude", "temperature"),
    ("temperature", "ozone"),
    ("altitude", "air_pressure"),
    ("altitude", "boiling_point"),
    ("altitude", "precipitation"),
    ("cement", "compressive_strength"),
    ("horsepower", "fuel_consumption"),
    ("fuel_consumption", "carbon_emissions"),
    ("age", "blood_pressure"),
    ("rainfall", "river_level"),
    ("river_level", "flood_damage"),
    ("rainfall", "soil_moisture"),
    ("soil_moisture", "crop_yield"),
    ("fertilizer", "plant_height"),
    ("sunlight", "plant_growth"),
    ("wind_speed", "wave_height"),
    ("wave_height", "coastal_erosion"),
    ("snowfall", "snow_depth"),
    ("snow_depth", "avalanche_risk"),
    ("exercise", "heart_rate"),
    ("vehicle_speed", "braking_distance"),
    ("voltage", "electric_current"),
    ("electric_current", "wire_heat"),
    ("advertising", "sales"),
    ("sales", "revenue"),
    ("price", "demand"),
    ("interest_rate", "loan_demand"),
    ("caffeine", "alertness"),
    ("cloud_cover", "solar_output"),
    ("salinity", "freezing_point"),
    ("schooling", "earnings"),
    ("earnings", "spending"),
    ("population", "traffic"),
    ("traffic", "commute_time"),
    ("apartment_size", "rent"),
    ("vehicle_mileage", "resale_value"),
    ("earthquake_magnitude", "building_damage"),
    ("drug_dose", "drug_level"),
)
"""(cause, effect): the cause is the familiar direction's source."""

ENTITIES: tuple[str, ...] = tuple(dict.fromkeys(name for pair in CAUSE_EFFECT for name in pair))
"""Every entity once, in the order first named."""

_RELATED = frozenset(CAUSE_EFFECT) | frozenset((effect, cause) for cause, effect in CAUSE_EFFECT)


def base(name: str) -> str:
    """The entity a name was made from: `altitude_2` -> `altitude` (a copy numbered when the entities run out)."""
    head, _, tail = name.rpartition("_")
    return head if head and tail.isdigit() else name


def familiar(a: str, b: str) -> bool:
    """Whether two names form a well-known cause-effect pair, in either direction."""
    return (base(a), base(b)) in _RELATED


def causes_of(effect: str) -> list[str]:
    """The familiar causes of an entity, in list order."""
    return [cause for cause, known in CAUSE_EFFECT if known == base(effect)]
