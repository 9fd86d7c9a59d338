"""The real server's stderr in a run through a proxy: kept in the run folder (`RUN/upstream.log`), not the terminal.

Every server the run starts (the first connection that reads its tools, then one per episode, over any transport)
appends its stderr to that one file, so banners and warnings never land in the progress bar. The run says where
the file is, and how many lines this run added to it, in one line at the end; `--verbose` prints those lines too,
and a server that fails to start is reported with the file's name and its last line (proxy/server_process.py).
A rerun appends to the same file: the lines of earlier runs stay, and the counts are this run's.
"""

from __future__ import annotations

import sys
from collections import deque
from pathlib import Path

from mcp_hazard.terminal_text import visible

UPSTREAM_LOG = "upstream.log"
SHOWN_LINES = 200  # --verbose prints at most this many (the last ones); the file keeps every line


class UpstreamLog:
    def __init__(self, path: Path) -> None:
        """Remember where this run's lines will begin (after those of earlier runs)."""
        self.path = path
        try:
            self.start = path.stat().st_size
        except OSError:
            self.start = 0

    def _lines(self) -> tuple[int, list[str]]:
        """How many lines this run added, and the last SHOWN_LINES of them."""
        count = 0
        last: deque[str] = deque(maxlen=SHOWN_LINES)
        try:
            with self.path.open("rb") as log:
                log.seek(self.start)
                for raw in log:
                    count += 1
                    last.append(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except OSError:
            return 0, []
        return count, list(last)

    def summary(self, verbose: bool) -> None:
        """One line on where the server's stderr is (nothing when it wrote none); with `verbose`, the lines too."""
        count, last = self._lines()
        if not count:
            return
        lines = f"{count} line{'' if count == 1 else 's'}"
        print(f"Upstream server's stderr: {self.path} ({lines} from this run"
              f"{'' if verbose else '; --verbose prints them'})")  # fmt: skip
        if verbose:
            shown = "" if count <= SHOWN_LINES else f", the last {SHOWN_LINES}"
            print(f"mcp-hazard: the upstream server's stderr ({self.path}{shown}):", file=sys.stderr)
            for line in last:
                print(visible(line, one_line=True), file=sys.stderr)  # a stranger's server wrote it
