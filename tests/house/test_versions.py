"""One version across the repository's distributions: ilplayer's, and every plugin and the
experiments pinned to its minor (scripts/set_version.py writes them)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import ilplayer

tomllib = pytest.importorskip(
    "tomllib", reason="tomllib is in the standard library from Python 3.11"
)

ROOT = Path(__file__).resolve().parents[2]
OTHERS = [
    *sorted((ROOT / "plugins").glob("*/pyproject.toml")),
    ROOT / "experiments" / "pyproject.toml",
]


def test_the_library_reads_its_version_from_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "ilplayer.__version__"}


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: p.parent.name)
def test_every_distribution_has_ilplayers_version_and_pins_its_minor(path):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from set_version import pin
    finally:
        sys.path.pop(0)
    project = tomllib.loads(path.read_text())["project"]
    assert project["version"] == ilplayer.__version__
    assert pin(ilplayer.__version__) in project["dependencies"]


def test_a_tag_names_the_release_that_the_changelog_describes():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{ilplayer.__version__}]" in changelog


@pytest.mark.skipif(
    importlib.util.find_spec("nox") is None, reason="nox comes with the [test] extra"
)
def test_the_task_runner_lists_its_sessions():
    out = subprocess.run(
        [sys.executable, "-m", "nox", "-l"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    for session in ("lint", "types", "core", "tests", "docs", "build"):
        assert f"* {session} ->" in out, out
