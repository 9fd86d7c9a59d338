"""An external agent that exits with code 3 at once, before connecting: a program that cannot start (a missing API
key, say). `mcp-hazard run` must stop at its first episode with one line."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    print("never connects: OPENAI_API_KEY is not set", file=sys.stderr)
    sys.exit(3)
