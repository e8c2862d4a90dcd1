"""Every script of the repository (benchmarks/, scripts/, examples/) starts and answers --help:
an import that breaks (a renamed function, a moved module) fails here, not in a user's hands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(path.relative_to(ROOT) for folder in ("benchmarks", "scripts", "examples")
                 for path in (ROOT / folder).glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=str)
def test_every_script_answers_help(script):
    result = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage" in result.stdout.lower(), result.stdout[-500:]
