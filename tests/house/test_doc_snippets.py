"""Every Python block of the user docs (docs/ without the records, README.md, CONTRIBUTING.md)
runs as written: a page's blocks in order, in one namespace (a reader pasting them one after
the other), in a fresh folder, in a fresh interpreter. A block that includes a script
(``--8<-- "examples/..."``) is run to the end by tests/house/test_scripts.py instead."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_scripts import INCLUDED_EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    path.relative_to(ROOT)
    for path in [*(ROOT / "docs").rglob("*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    if "records" not in path.parts and "```python" in path.read_text()
)
INCLUDE = re.compile(r'^--8<-- "(.*?)"\s*$')

# What a page's shell commands write before its next Python block reads it (run as the page
# shows, fewer epochs): learn.md's `ilplayer learn ... --out model.pt` after its first block.
SHELL_STEPS = {
    "docs/learn.md": (
        0,
        [
            "-m",
            "ilplayer",
            "learn",
            "train.npz",
            "--test",
            "test.npz",
            "--lb",
            "0",
            "--ub",
            "1",
            "--num-constraints",
            "2",
            "--method",
            "combopt",
            "--epochs",
            "2",
            "--out",
            "model.pt",
        ],
    )
}

# After the last block the runner leaves without the interpreter's teardown: a local Ray
# instance started by a page (parallel.md) crashed it at exit now and then (SIGSEGV, Ray's).
RUNNER = """
import os, subprocess, sys
blocks, step = eval(sys.argv[1]), eval(sys.argv[2])
namespace = {"__name__": "__main__"}
for index, (where, code) in enumerate(blocks):
    exec(compile(code, where, "exec"), namespace)
    if step is not None and step[0] == index:
        subprocess.run([sys.executable, *step[1]], check=True, capture_output=True)
sys.stdout.flush()
os._exit(0)
"""


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), flags=re.S)


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_every_python_block_of_the_page_runs_as_written(page, tmp_path):
    blocks = []
    for index, block in enumerate(python_blocks(page)):
        included = INCLUDE.match(block.strip())
        if included:
            assert included.group(1) in INCLUDED_EXAMPLES, (
                f"{page} includes {included.group(1)}: run it in test_scripts.py"
            )
            continue
        blocks.append((f"{page} (Python block {index + 1})", block))
    step = SHELL_STEPS.get(str(page))
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, repr(blocks), repr(step)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
