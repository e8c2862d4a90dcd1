"""Every script of the repository (benchmarks/, scripts/, examples/) starts and answers --help:
an import that breaks (a renamed function, a moved module) fails here, not in a user's hands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    path.relative_to(ROOT)
    for folder in ("benchmarks", "scripts", "examples")
    for path in (ROOT / folder).glob("*.py")
)

# One interpreter runs every script's --help in turn (as __main__, its folder on the path):
# torch and ilplayer are imported once, not once a script, which made this the slowest file.
_DRIVER = """
import contextlib, io, json, runpy, sys, traceback
results = {}
for script in sys.argv[1:]:
    out, err = io.StringIO(), io.StringIO()
    sys.argv = [script, "--help"]
    sys.path.insert(0, script.rpartition("/")[0] or ".")
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
    sys.path.pop(0)
    results[script] = {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def help_runs():
    result = subprocess.run(
        [sys.executable, "-c", _DRIVER, *map(str, SCRIPTS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize("script", SCRIPTS, ids=str)
def test_every_script_answers_help(script, help_runs):
    result = help_runs[str(script)]
    assert result["code"] == 0, result["stderr"][-2000:]
    assert "usage" in result["stdout"].lower(), result["stdout"][-500:]


# The docs include these scripts (--8<--): each runs to the end in a small setting.
INCLUDED_EXAMPLES = {
    "examples/read_cvxpy.py": ["--epochs", "3"],
    "examples/read_pyomo.py": ["--scenarios", "3"],
    "examples/read_mps.py": ["--epochs", "3"],
    "examples/read_gurobipy.py": ["--scenarios", "3"],
    "examples/read_pyepo.py": ["--epochs", "1", "--train", "200"],
    "examples/tsp_spo.py": ["--epochs", "1", "--samples", "60"],
    "examples/solve_sudoku.py": ["--puzzles", "3"],
}


@pytest.mark.parametrize("script", sorted(INCLUDED_EXAMPLES))
def test_included_examples_run(script):
    for module in {
        "read_cvxpy": "cvxpy",
        "read_pyomo": "pyomo",
        "read_gurobipy": "gurobipy",
        "read_pyepo": "pyepo",
        "read_mps": "highspy",
        "tsp_spo": "highspy",
        "solve_sudoku": "highspy",
    }[Path(script).stem].split():
        pytest.importorskip(module)
    result = subprocess.run(
        [sys.executable, script, *INCLUDED_EXAMPLES[script]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
