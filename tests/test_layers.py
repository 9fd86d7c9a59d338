"""The package keeps its floors: import-linter's contracts in pyproject.toml ([tool.importlinter]) hold.

A module imports only from its own floor or below (docs/decisions.md, "Floors"), sibling modules never import each
other both ways, hazard kinds and interventions stand alone, and the optional extras stay optional. The contracts
read every import, lazy ones inside functions and `TYPE_CHECKING` blocks included, so an import that breaks a floor
fails here with import-linter's report naming the chain, whether or not it would run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")  # installed by the `test` extra


def test_import_contracts_are_kept() -> None:
    assert LINT_IMPORTS.is_file(), f"{LINT_IMPORTS} is missing: install the test extra (pip install -e '.[test]')"
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(ROOT / "pyproject.toml")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, f"an import contract is broken:\n{done.stdout}{done.stderr}"
    assert "0 broken" in done.stdout, done.stdout
