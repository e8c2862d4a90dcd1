"""Check the built wheels in a folder: ilplayer's holds the library only (no experiment, no
test, no benchmark), each plugin's its own package, and every version is ilplayer's.

    python scripts/check_wheel.py dist/
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

LIBRARY_ONLY = ("ilplayer/", "ilplayer-")  # the package and its .dist-info


def check(folder: Path) -> list[str]:
    problems = []
    wheels = sorted(folder.glob("*.whl"))
    library = [w for w in wheels if w.name.startswith("ilplayer-") and w.name.count("-") == 4]
    if not library:
        return [f"{folder}: no ilplayer wheel"]
    version = library[0].name.split("-")[1]
    problems += [
        f"{wheel.name}: version differs from ilplayer's {version}"
        for wheel in wheels
        if wheel.name.split("-")[1] != version
    ]
    names = zipfile.ZipFile(library[0]).namelist()
    strays = [name for name in names if not name.startswith(LIBRARY_ONLY)]
    problems += [f"{library[0].name} holds {name}" for name in strays]
    experiments = [name for name in names if "experiment" in name.lower()]
    problems += [f"{library[0].name} holds an experiment: {name}" for name in experiments]
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    problems = check(parser.parse_args().folder)
    for problem in problems:
        print(problem, file=sys.stderr)
    print("wheels: ok" if not problems else f"wheels: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
