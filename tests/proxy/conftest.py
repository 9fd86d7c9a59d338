"""Real MCP servers no one here wrote, for proxy tests: the Python reference time server (PyPI `mcp-server-time`, a
test dependency) and the npm reference servers `@modelcontextprotocol/server-everything` and `server-filesystem`,
installed into .cache/upstream-npm (by .ci/run, or here on first use). In CI a missing server is a failure."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, in_ci

NPM_VERSION = "2026.8.31"
NPM_PACKAGES = {
    "everything": f"@modelcontextprotocol/server-everything@{NPM_VERSION}",
    "filesystem": f"@modelcontextprotocol/server-filesystem@{NPM_VERSION}",
}
NPM_PREFIX = REPO_ROOT / ".cache" / "upstream-npm"
PROXIES = REPO_ROOT / "proxies"


def _unavailable(reason: str) -> None:
    if in_ci():
        pytest.fail(f"reference MCP server unavailable in CI: {reason}", pytrace=False)
    pytest.skip(f"reference MCP server unavailable: {reason} (set CI=true to make this a failure)")


def _installed(package: str) -> bool:
    name = package.rsplit("@", 1)[0]
    manifest = NPM_PREFIX / "node_modules" / name / "package.json"
    try:
        return json.loads(manifest.read_text(encoding="utf-8")).get("version") == NPM_VERSION
    except (OSError, ValueError):
        return False


@pytest.fixture(scope="session")
def npm_servers() -> dict[str, Path]:
    """The two npm reference servers' binaries, installed at a pinned version."""
    if not all(_installed(p) for p in NPM_PACKAGES.values()):
        npm = shutil.which("npm")
        if npm is None:
            _unavailable("npm is not installed")
        NPM_PREFIX.mkdir(parents=True, exist_ok=True)
        command = [npm, "install", "--prefix", str(NPM_PREFIX), "--no-audit", "--no-fund", *NPM_PACKAGES.values()]
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            _unavailable(f"`{' '.join(command)}` failed: {(done.stderr or done.stdout).strip()[-300:]}")
    if shutil.which("node") is None:
        _unavailable("node is not installed")
    binaries = {
        "everything": NPM_PREFIX / "node_modules" / ".bin" / "mcp-server-everything",
        "filesystem": NPM_PREFIX / "node_modules" / ".bin" / "mcp-server-filesystem",
    }
    for name, path in binaries.items():
        if not path.exists():
            _unavailable(f"{path} is missing after npm install ({name})")
    return binaries


@pytest.fixture(scope="session")
def time_server() -> str:
    """The time server's command line, run by this interpreter."""
    if importlib.util.find_spec("mcp_server_time") is None:
        _unavailable("the mcp-server-time package is not installed (pip install -e '.[test]')")
    return f"{sys.executable} -m mcp_server_time"


@pytest.fixture
def fs_root(tmp_path: Path) -> Path:
    """A temporary copy of proxies/fs-root (an inventory note and a shelf of six crates) for the filesystem server."""
    root = tmp_path / "fs-root"
    shutil.copytree(REPO_ROOT / "proxies" / "fs-root", root)
    return root.resolve()
