import pytest

import ilplayer
from ilplayer.testing.conformance import SolverConformance


class TestScipConformance(SolverConformance):
    solver_name = "scip"


def test_unknown_parameter_is_refused_with_its_name():
    pytest.importorskip("pyscipopt", reason="pyscipopt is not installed")
    with pytest.raises(ValueError, match="params: SCIP rejected no/such/param"):
        ilplayer.get_solver("scip", params={"no/such/param": 1})


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("lp/threads", 1.5, "an integer"),
        ("lp/presolving", "no", "a bool"),
        ("limits/gap", [0.1], "a real number"),
    ],
)
def test_a_value_scip_would_convert_silently_is_refused(key, value, expected):
    # PySCIPOpt stored lp/threads=1.5 as 1 and any string in a bool parameter as true.
    pytest.importorskip("pyscipopt", reason="pyscipopt is not installed")
    with pytest.raises(ValueError, match=rf"params: SCIP rejected {key}=.*: expected {expected}"):
        ilplayer.get_solver("scip", params={key: value})


def test_a_solver_alive_at_exit_frees_its_models_without_noise():
    # PySCIPOpt's LP, freed after its module was torn down, printed an ignored TypeError at
    # the exit of every script that kept a SCIP solver (its LP relaxations) to the end.
    pytest.importorskip("pyscipopt", reason="pyscipopt is not installed")
    import subprocess
    import sys

    script = (
        "import ilplayer\n"
        "from ilplayer_experiments.bench import family_batch\n"
        "solver = ilplayer.get_solver('scip')\n"
        "assert (solver.solve(family_batch('binary m=4', 8)).status == 0).all()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
