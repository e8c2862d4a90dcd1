"""ruff and mypy, with the project's configuration (pyproject.toml), pass on the whole repository."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    importlib.util.find_spec("ruff") is None,
    reason="ruff is not installed (it comes with the [test] extra)",
)
def test_ruff_check_passes():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy is not installed (it comes with the [test] extra)",
)
def test_the_annotations_check():
    """The package ships py.typed: code that type-checks against it must not inherit errors.
    The files and settings are pyproject.toml's [tool.mypy]."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_docstrings_use_markdown_cross_references_not_sphinx_roles():
    """mkdocstrings renders ``[name][ilplayer.module.name]``; a Sphinx role such as
    ``:func:`name``` prints as literal text on the API pages."""
    import re

    role = re.compile(r":(meth|class|func|mod|attr|data|exc|obj):`")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("ilplayer", "plugins")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if role.search(line)
    ]
    assert not found, f"Sphinx roles in docstrings: {found[:10]}"


def test_library_lines_cite_no_timings():
    """Docstrings and comments of the library and the plugins say what a thing is and why;
    the measurements behind them live in docs/records/defaults.md and the other records. The
    applications (experiments, benchmarks, the command line, the fuzzers) report timings."""
    import re

    timing = re.compile(
        r"\d ?(ms|µs|us|s|seconds?|min|minutes)\b|\d(\.\d+)? ?[x×] (faster|slower)|\dx\b"
    )
    applications = ("ilplayer/cli/", "ilplayer/testing/fuzz.py", "ilplayer/testing/milp_fuzz.py")
    allowed = ("4x the cap", "4x the steps")  # sizes, not timings
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for folder in ("ilplayer", "plugins")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not str(path.relative_to(ROOT)).startswith(applications)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if timing.search(line)
        and not re.search(r"""f["']""", line)
        and not any(a in line for a in allowed)
    ]
    assert not found, (
        "timings in library lines (move them to docs/records/defaults.md):\n" + "\n".join(found)
    )
