import pytest
import torch

import ilplayer
from ilplayer.testing.conformance import SolverConformance


class TestPyomoAppsiHighsConformance(SolverConformance):
    solver_name = "pyomo:appsi_highs"


class TestPyomoGurobiPersistentConformance(SolverConformance):
    solver_name = "pyomo:gurobi_persistent"


def test_unavailable_pyomo_solver_is_refused_with_its_name():
    pytest.importorskip("pyomo", reason="pyomo is not installed")
    with pytest.raises(
        ilplayer.SolverNotInstalledError, match="Pyomo solver 'no_such_solver' is not available"
    ):
        ilplayer.get_solver("pyomo:no_such_solver")


def test_the_family_name_is_listed_once():
    pytest.importorskip("pyomo", reason="pyomo is not installed")
    assert "pyomo" in ilplayer.list_solvers()


def test_available_solvers_lists_usable_members_only():
    pytest.importorskip("pyomo", reason="pyomo is not installed")
    available = ilplayer.available_solvers()
    assert "pyomo" not in available  # the bare family name is not a backend
    members = [name for name in available if name.startswith("pyomo:")]
    assert "pyomo:appsi_highs" in members  # highspy is a dependency of the suite
    c = torch.tensor([[-1.0, -2.0]], dtype=torch.float64)
    for name in members:
        y, status = ilplayer.solve(c, torch.ones(1, 2), torch.ones(1), lb=0, ub=1, solver=name)
        assert ilplayer.Status.names(status) == ["optimal"] and y.tolist() == [[0.0, 1.0]], name


class TestPyomoHighsConformance(SolverConformance):
    solver_name = "pyomo:highs"


@pytest.mark.parametrize("name", ["pyomo:appsi_highs", "pyomo:gurobi_persistent"])
def test_calls_from_a_user_thread_pool_do_not_deadlock(name):
    import concurrent.futures

    import torch

    pytest.importorskip("pyomo", reason="pyomo is not installed")
    try:
        solver = ilplayer.get_solver(name)
    except Exception as exc:
        pytest.skip(f"{name} is not usable here: {exc}")
    generator = torch.Generator().manual_seed(0)
    c = torch.randn(4, 6, generator=generator, dtype=torch.float64)
    A = torch.rand(2, 6, generator=generator, dtype=torch.float64)
    expected, _ = ilplayer.solve(c, A, torch.ones(2), solver="bruteforce")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = [
            pool.submit(ilplayer.solve, c, A, torch.ones(2), solver=solver, executor="serial")
            for _ in range(4)
        ]
        for future in futures:
            y, status = future.result(timeout=120)
            assert torch.equal(y, expected)
    solver.close()


def test_a_load_failure_is_an_error_with_its_reason_never_optimal(monkeypatch):
    import torch

    pytest.importorskip("pyomo", reason="pyomo is not installed")
    solver = ilplayer.get_solver("pyomo:appsi_highs")
    # two rows: the core answers a one-row program from its relaxation's closed form itself
    c, A = torch.tensor([[-1.0, -1.0]]), torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    b = torch.tensor([1.0, 1.0])
    ilplayer.solve(c, A, b, solver=solver)  # builds the model and leaves a point in it

    def broken(*args, **kwargs):
        raise RuntimeError("no solution to load")

    model = next(iter(solver._models.values()))
    monkeypatch.setattr(model.solver, "load_vars", broken)
    with pytest.warns(
        ilplayer.errors.SolverFailureWarning, match="could not be loaded.*no solution to load"
    ):
        y, status = ilplayer.solve(c, A, b, solver=solver)
    assert ilplayer.Status.names(status) == ["error"]
    solver.close()


def test_unknown_options_are_refused_by_the_solver_library():
    pytest.importorskip("pyomo", reason="pyomo is not installed")
    with pytest.raises(ValueError, match="params: HiGHS rejected option foo=1"):
        ilplayer.get_solver("pyomo:appsi_highs", params={"foo": 1})


def test_option_values_are_checked_against_the_option_type_and_passed_converted():
    pytest.importorskip("pyomo", reason="pyomo is not installed")
    pytest.importorskip("highspy", reason="highspy is not installed")
    with pytest.raises(
        ValueError, match=r"params: HiGHS rejected threads=1.5: expected an integer"
    ):
        ilplayer.get_solver("pyomo:appsi_highs", params={"threads": 1.5})
    assert (
        ilplayer.get_solver("pyomo:appsi_highs", params={"mip_rel_gap": 0}).options["mip_rel_gap"]
        == 0.0
    )


def test_a_family_name_without_member_says_how_to_name_one():
    pytest.importorskip("pyomo", reason="pyomo is not installed")
    with pytest.raises(ilplayer.UnknownSolverError, match="add the member after a colon"):
        ilplayer.get_solver("pyomo:")
    with pytest.raises(ValueError, match="needs a Pyomo solver name after the colon"):
        ilplayer.get_solver("pyomo")
