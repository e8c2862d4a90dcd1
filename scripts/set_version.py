"""Set one version on every distribution of the repository: ilplayer (``ilplayer/__init__.py``,
the one source), the five plugins and the experiments, each pinned to ilplayer's minor.

    python scripts/set_version.py 0.2.0    # then: CHANGELOG.md, commit, git tag v0.2.0

setuptools reads no file outside a project's own folder (a plugin's sdist could not be built
from one), so the plugins' pyproject.toml files carry the number, written here and checked by
tests/house/test_versions.py.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ilplayer" / "__init__.py"
DISTRIBUTIONS = [
    *sorted((ROOT / "plugins").glob("*/pyproject.toml")),
    ROOT / "experiments" / "pyproject.toml",
]


def pin(version: str) -> str:
    """The requirement every other distribution has on ilplayer: the same minor."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return f"ilplayer>={major}.{minor},<{major}.{minor + 1}"


def set_version(version: str) -> list[Path]:
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise SystemExit(f"version must be MAJOR.MINOR.PATCH, got {version!r}")
    text = PACKAGE.read_text()
    PACKAGE.write_text(re.sub(r'__version__ = "[^"]+"', f'__version__ = "{version}"', text))
    for path in DISTRIBUTIONS:
        text = re.sub(r'(?m)^version = "[^"]+"', f'version = "{version}"', path.read_text())
        path.write_text(re.sub(r'"ilplayer(>=[^"]*)?"', f'"{pin(version)}"', text, count=1))
    return [PACKAGE, *DISTRIBUTIONS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version")
    for path in set_version(parser.parse_args().version):
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
