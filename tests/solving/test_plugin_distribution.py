"""A real distribution, installed with pip, is found through its ``ilplayer`` entry point;
native libraries that clash are reported clearly; ``import ilplayer`` loads none of them."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ilplayer
from ilplayer.solvers.registry import import_solver_library

HERE = Path(__file__).resolve().parents[1]
SOLVER_LIBRARIES = {"gurobipy", "highspy", "ortools", "pyscipopt", "pyomo"}


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


def test_an_installed_distribution_is_found_through_its_entry_point(tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(HERE / "fixture_dist"),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    out = run_python(
        """
        import torch, ilplayer
        print(ilplayer.list_solvers())
        y, status = ilplayer.solve(torch.tensor([[1.0, -1.0]]), torch.ones(1, 2), torch.ones(1),
                                   solver="fixture-dist")
        print(y.tolist(), ilplayer.Status.names(status))
    """,
        PYTHONPATH=str(target),
        ILPLAYER_DISABLE_PLUGIN_AUTOLOAD="",
    )
    assert out.returncode == 0, out.stderr
    names, result = out.stdout.strip().splitlines()
    assert "'fixture-dist'" in names and "'bruteforce'" in names
    assert result == "[[0.0, 1.0]] ['optimal']"


def test_import_ilplayer_and_listing_backends_load_no_solver_library():
    out = run_python(
        f"""
        import sys, ilplayer
        ilplayer.list_solvers(); ilplayer.available_solvers()
        print(sorted({SOLVER_LIBRARIES!r} & {{m.split('.')[0] for m in sys.modules}}))
    """,
        ILPLAYER_DISABLE_PLUGIN_AUTOLOAD="",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


@pytest.mark.parametrize("first, second", [("highs", "cpsat"), ("cpsat", "highs")])
def test_highs_and_cpsat_work_in_one_process_in_either_order(first, second):
    highspy, ortools = _version("highspy"), _version("ortools")
    if not (highspy and ortools and {"highs", "cpsat"} <= set(ilplayer.list_solvers())):
        pytest.skip("needs highspy, ortools and both plugins installed")
    out = run_python(
        f"""
        import torch, ilplayer
        c = torch.tensor([[-1.0, -2.0, 0.5]]); A = torch.ones(1, 3); b = torch.tensor([1.0])
        for name in ({first!r}, {second!r}):
            y, status = ilplayer.solve(c, A, b, solver=name)
            print(name, y.tolist(), ilplayer.Status.names(status))
    """,
        ILPLAYER_DISABLE_PLUGIN_AUTOLOAD="",
    )
    minor = tuple(int(part) for part in highspy.split(".")[:2])
    # highspy >= 1.16 links HiGHS into its module; 1.12 bundles the HiGHS of ortools 9.15
    compatible = minor >= (1, 16) or (minor == (1, 12) and ortools.startswith("9.15."))
    if compatible:  # what `pip install ilplayer[all]` installs
        assert out.returncode == 0, out.stderr
        assert out.stdout.split("\n")[:2] == [
            f"{first} [[0.0, 1.0, 0.0]] ['optimal']",
            f"{second} [[0.0, 1.0, 0.0]] ['optimal']",
        ]
    else:  # any other pair must fail with the clear message, not a bare undefined symbol
        assert out.returncode == 0 or "only one can be loaded per process" in out.stderr, out.stderr


def test_library_clash_becomes_a_clear_import_error(tmp_path, monkeypatch):
    (tmp_path / "clashing_native_lib.py").write_text(
        "raise ImportError('libfoo.so.1: undefined symbol: _ZN3Foo3barEv')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ImportError,
        match=r"clashing_native_lib could not be loaded next to "
        r"otherlib .*only one can be loaded per process\. "
        r"pip install the-fix",
    ):
        import_solver_library(
            "clashing_native_lib", clashes_with=("otherlib",), fix="pip install the-fix"
        )


def test_the_plugin_in_writing_a_plugin_md_works_as_written():
    import re

    text = (HERE.parent / "docs" / "writing-a-plugin.md").read_text()
    plugin, solver = re.findall(r"```python\n(.*?)```", text, re.S)[:2]
    namespace: dict = {}
    exec(solver, namespace)
    ilplayer.register_solver("doc-enum", namespace["EnumSolver"], replace=True)
    try:
        from ilplayer.testing import make_instances
        from ilplayer.testing.conformance import assert_agrees_with_bruteforce

        for family in ("binary-m4", "negative-bounds", "infeasible"):
            assert_agrees_with_bruteforce(make_instances(family), "doc-enum")
    finally:
        ilplayer.solvers.registry.unregister_solver("doc-enum")
    assert "@hookimpl" in plugin and "ilplayer_register_solvers" in plugin


def test_the_library_and_its_commands_do_not_need_pytest():
    out = run_python("""
        import sys
        sys.modules["pytest"] = None  # any import of pytest now fails
        import ilplayer, ilplayer.cli.main, ilplayer_experiments.bench, ilplayer.parallel.executors
        import ilplayer_experiments.runner, ilplayer_experiments.report
        print("ok")
    """)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_highs_prints_nothing_to_stdout():
    # HiGHS 1.16 prints a banner on its first object, before any option can silence it.
    if "highs" not in ilplayer.available_solvers():
        pytest.skip("needs ilplayer-highs")
    out = run_python("""
        import torch, ilplayer
        c = torch.tensor([[-1.0, -2.0, 0.5], [1.0, 0.5, -3.0]]); A = torch.ones(1, 3) * 0.7
        y, status = ilplayer.solve(c, A, torch.tensor([1.0]), solver="highs")
        layer = ilplayer.ILPLayer(-5, 5, solver="highs")
        layer(torch.randn(4, 6), torch.randn(3, 6), torch.ones(3))
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
