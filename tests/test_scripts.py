"""Every script of the repository (benchmarks/, scripts/, examples/) starts and answers --help:
an import that breaks (a renamed function, a moved module) fails here, not in a user's hands."""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(path.relative_to(ROOT) for folder in ("benchmarks", "scripts", "examples")
                 for path in (ROOT / folder).glob("*.py"))


@pytest.fixture(scope="module")
def help_runs():
    """Every script's ``--help``, started together a few at a time: each is an interpreter
    importing torch and ilplayer, mostly waiting on one core, and one after the other they were
    the suite's slowest file."""
    run = lambda script: subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True,
                                        text=True, timeout=300, check=False)
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        yield {script: pool.submit(run, script) for script in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=str)
def test_every_script_answers_help(script, help_runs):
    result = help_runs[script].result()
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage" in result.stdout.lower(), result.stdout[-500:]


# The docs include these scripts (--8<--): each runs to the end in a small setting.
INCLUDED_EXAMPLES = {"examples/read_cvxpy.py": ["--epochs", "3"], "examples/read_pyomo.py": ["--scenarios", "3"],
                     "examples/read_mps.py": ["--epochs", "3"], "examples/read_gurobipy.py": ["--scenarios", "3"],
                     "examples/read_pyepo.py": ["--epochs", "1", "--train", "200"],
                     "examples/tsp_spo.py": ["--epochs", "1", "--samples", "60"],
                     "examples/solve_sudoku.py": ["--puzzles", "3"]}


@pytest.mark.parametrize("script", sorted(INCLUDED_EXAMPLES))
def test_included_examples_run(script):
    for module in {"read_cvxpy": "cvxpy", "read_pyomo": "pyomo", "read_gurobipy": "gurobipy",
                   "read_pyepo": "pyepo", "read_mps": "highspy", "tsp_spo": "highspy",
                   "solve_sudoku": "highspy"}[Path(script).stem].split():
        pytest.importorskip(module)
    result = subprocess.run([sys.executable, script, *INCLUDED_EXAMPLES[script]], cwd=ROOT, capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
