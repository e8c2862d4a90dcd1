import pytest

import ilplayer
from ilplayer.testing import SolverConformance


class TestScipConformance(SolverConformance):
    solver_name = "scip"


def test_unknown_parameter_is_refused_with_its_name():
    pytest.importorskip("pyscipopt", reason="pyscipopt is not installed")
    with pytest.raises(ValueError, match="params: SCIP rejected no/such/param"):
        ilplayer.get_solver("scip", params={"no/such/param": 1})
