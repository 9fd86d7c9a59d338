"""An external agent that crashes at once with exit code 3 (after saying why on stderr)."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    print("crash agent: failing on purpose", file=sys.stderr)
    sys.exit(3)
