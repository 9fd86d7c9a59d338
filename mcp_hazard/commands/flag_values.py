"""What a flag's text means: each function turns one flag's words into its value, or says in one line why not
(argparse prints it as `mcp-hazard: error: argument --seeds: ...`)."""

from __future__ import annotations

import argparse


def seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be a whole number, got {text!r}") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"seed must be between 0 and 2**63-1, got {value}")
    return value


MAX_SEEDS = 100_000


def parse_seeds(text: str) -> list[int]:
    """`0-19`, `1,5,9` or a mix: the seeds a check or a run covers, each once, in the order given (`0-5,3-9` is
    0 to 9: a seed is one episode per cell however often it is named)."""
    seeds: list[int] = []
    for part in filter(None, text.split(",")):
        low, sep, high = part.partition("-")
        try:
            first = int(low)
            last = int(high) if sep else first
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected seeds like 0-19 or 1,5,9, got {text!r}") from None
        if first < 0 or last < first:
            raise argparse.ArgumentTypeError(f"bad seed range {part!r}")
        if last >= 2**63:  # as `seed` (a run's seeds go where one seed goes)
            raise argparse.ArgumentTypeError(f"seeds must be between 0 and 2**63-1, got {last}")
        if len(seeds) + last - first + 1 > MAX_SEEDS:  # checked before the range is made: 0-10**18 is one range
            raise argparse.ArgumentTypeError(f"at most {MAX_SEEDS} seeds in all, got more in {text[:80]!r}")
        seeds.extend(range(first, last + 1))
    if not seeds:
        raise argparse.ArgumentTypeError("no seeds given")
    return list(dict.fromkeys(seeds))


def positive(text: str, limit: int = 1_000_000) -> int:
    """A count such as --concurrency or --max-connections: 1 to `limit` (a typo of many digits is refused here,
    not met later as an overflow or a run that fills the memory)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= limit:
        shown = str(value) if len(str(value)) <= 24 else f"{str(value)[:20]}... ({len(str(value))} digits)"
        raise argparse.ArgumentTypeError(f"must be between 1 and {limit}, got {shown}")
    return value


def repeats(text: str) -> int:
    """`run --repeats`: attempts per cell, at most 10000 (each is an episode of every cell of the matrix)."""
    return positive(text, limit=10_000)


def _number(text: str, expected: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None


def positive_float(text: str) -> float:
    value = _number(text, "a number of seconds")
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError(f"must be between 0 and 86400 seconds, got {value:g}")
    return value


def cpus(text: str) -> float:
    value = _number(text, "a number of CPUs such as 1 or 0.25")
    if not 0 < value <= 1024:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 1024 CPUs, got {value:g}")
    return value


def ttl(text: str) -> float:
    value = _number(text, "a number of seconds")
    if not 0 < value <= 365 * 24 * 3600:
        raise argparse.ArgumentTypeError(f"TTL must be more than 0 and at most a year, got {text!r}")
    return value


def port(text: str) -> int:
    """A TCP port, 0-65535 (0: any free one)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number such as 8765, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535, got {value}")
    return value


def host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT such as 127.0.0.1:8765, got {text!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535, got {number}")
    return host.strip("[]") or "127.0.0.1", number


def level(text: str) -> float:
    """A two-sided significance level (`--alpha` of plan, gate and run): a chance below 1, and at least 1e-12, so
    that its normal quantile stays a number after the gate divides it among its checks."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 1e-12 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1e-12 and below 1, got {text}")
    return value


def power(text: str) -> float:
    """The chance to detect a drop (`plan --power`): at least 0.5 (below it the planning formula does not hold, and
    a plan more likely to miss the drop than to see it plans nothing) and below 1 (no finite run is certain)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 0.8, got {text!r}") from None
    if not 0.5 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 0.5 and below 1, got {text}")
    return value


def drop(text: str) -> float:
    """The drop in success to plan for (`plan --drop`): a share, at least 0.0001 (0.01 points; smaller ones need
    more pairs than a float counts)."""
    value = fraction(text)
    if value < 1e-4:
        raise argparse.ArgumentTypeError(f"expected a drop of at least 0.0001 (0.01 points), got {text!r}")
    return value


def fraction(text: str) -> float:
    """A share given as 0.1 or 10%: the argparse type of --base-rate, and of --drop through `drop`."""
    value = text.strip()
    try:
        number = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share such as 0.1 or 10%, got {text!r}") from None
    if not 0 < number <= 1:
        raise argparse.ArgumentTypeError(f"expected a share above 0 and at most 1 (or 100%), got {text!r}")
    return number
