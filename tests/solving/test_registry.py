"""The solver registry: names, errors, in-process registration, entry-point plugins."""

from __future__ import annotations

import importlib.metadata
import re

import numpy as np
import pytest
import torch
from host_solvers import EnumerationSolver, FlakySolver, LyingSolver

import ilplayer
from ilplayer import Status
from ilplayer.solvers import registry as plugins


def test_builtin_bruteforce_is_registered_and_available():
    assert "bruteforce" in ilplayer.list_solvers()
    assert "bruteforce" in ilplayer.available_solvers()
    assert isinstance(ilplayer.get_solver("bruteforce"), ilplayer.solvers.contract.Solver)


def test_unknown_solver_lists_registered_ones_and_suggests_the_closest(builtin_registry):
    with pytest.raises(
        ilplayer.UnknownSolverError,
        match=r"unknown solver 'bruteforse'\. Registered solvers: bruteforce, knapsack\."
        r" Did you mean 'bruteforce'\?",
    ):
        ilplayer.get_solver("bruteforse")


@pytest.mark.parametrize(
    "name, hint",
    [
        ("cbc", "solver='pyomo:cbc'"),
        ("glpk", "solver='pyomo:glpk'"),
        ("cplex", "solver='pyomo:cplex'"),
        ("appsi_highs", "solver='pyomo:appsi_highs'"),
        ("ortools", "Did you mean 'cpsat'"),
        ("OR-Tools", "Did you mean 'cpsat'"),
    ],
)
def test_unknown_names_users_try_point_at_the_backend_they_mean(name, hint):
    with pytest.raises(ilplayer.UnknownSolverError, match=re.escape(hint)):
        ilplayer.get_solver(name)


def test_unknown_first_party_backend_says_which_distribution_provides_it(builtin_registry):
    with pytest.raises(
        ilplayer.UnknownSolverError,
        match=r"'gurobi' is provided by the distribution ilplayer-gurobi: "
        r"pip install -e plugins/ilplayer-gurobi from the repository",
    ):
        ilplayer.solve(torch.zeros(1, 2), torch.ones(1, 2), torch.ones(1), solver="gurobi")


@pytest.fixture
def registered():
    names = []

    def register(name, cls, **kwargs):
        names.append(name)
        return ilplayer.register_solver(name, cls, **kwargs)

    yield register
    for name in names:
        ilplayer.solvers.registry.unregister_solver(name)


def random_problem(seed, B=10, m=2, n=5, shared=True):
    g = torch.Generator().manual_seed(seed)
    c = torch.randn(B, n, generator=g, dtype=torch.float64)
    A = torch.randn(*((m, n) if shared else (B, m, n)), generator=g, dtype=torch.float64)
    b = torch.randn(*((m,) if shared else (B, m)), generator=g, dtype=torch.float64)
    return c, A, b


def same_objective(y1, y2, c):
    torch.testing.assert_close((c * y1).sum(-1), (c * y2).sum(-1))


@pytest.mark.parametrize("shared", [True, False])
def test_in_process_backend_agrees_with_bruteforce(registered, shared):
    registered("enumeration", EnumerationSolver)
    c, A, b = random_problem(0, shared=shared)
    y1, s1 = ilplayer.solve(c, A, b, lb=-1, ub=1, solver="enumeration")
    y2, s2 = ilplayer.solve(c, A, b, lb=-1, ub=1, solver="bruteforce")
    assert s1.tolist() == s2.tolist()
    same_objective(y1, y2, c)


def test_instances_sharing_constraint_rows_are_solved_as_one_group():
    c, A, b = random_problem(1, B=9, shared=False)
    A[3:] = A[0]
    b[3:] = b[0]
    c = c.abs() + 0.1  # the box optimum 0 violates sum(y) >= 1: every instance reaches the backend
    A = torch.cat([A, -torch.ones(9, 1, 5, dtype=A.dtype)], dim=1)
    b = torch.cat([b, -torch.ones(9, 1, dtype=b.dtype)], dim=1)
    solver = EnumerationSolver()
    ilplayer.solve(c, A, b, lb=0, ub=1, solver=solver)
    assert solver.groups_seen == 3  # rows 0, 3..8 share (A, b); rows 1 and 2 are alone


def test_instances_decided_by_the_box_never_reach_the_backend():
    A = torch.tensor([[1.0, 1.0, 1.0]])
    b = torch.tensor([2.0])
    c = torch.tensor(
        [
            [1.0, -1.0, 2.0],  # box optimum (0, 1, 0) meets y1 + y2 + y3 <= 2
            [-1.0, -1.0, -1.0],  # (1, 1, 1) does not: the backend decides
            [0.0, 3.0, -2.0],
        ]
    )  # (0, 0, 1): decided
    solver = EnumerationSolver()
    y, status = ilplayer.solve(c, A, b, lb=0, ub=1, solver=solver)
    assert solver.instances_seen == 1
    assert status.tolist() == [0, 0, 0]
    assert y[0].tolist() == [0.0, 1.0, 0.0] and y[2].tolist() == [0.0, 0.0, 1.0]
    assert (c[1] * y[1]).sum().item() == -2.0  # any two of the three


def test_register_refuses_a_taken_name_unless_replace(registered):
    registered("enumeration", EnumerationSolver)
    with pytest.raises(ValueError, match="already registered; pass replace=True"):
        ilplayer.register_solver("enumeration", FlakySolver)
    ilplayer.register_solver("enumeration", FlakySolver, replace=True)
    assert isinstance(ilplayer.get_solver("enumeration"), FlakySolver)
    with pytest.raises(TypeError, match=r"subclass of ilplayer\.plugin_api\.Solver"):
        ilplayer.register_solver("nope", object)


def test_a_failing_group_becomes_error_rows_without_sinking_the_batch():
    c, A, b = random_problem(2, B=6, shared=False)
    c[:, 0] = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, 1.0])
    # y_0 must differ from its box optimum, so that every instance reaches the backend
    row = torch.zeros(6, 1, 5, dtype=A.dtype)
    row[:, 0, 0] = torch.where(c[:, 0] < 0, 1.0, -1.0)
    A, b = torch.cat([A, row], dim=1), torch.cat([b, torch.where(c[:, :1] < 0, 0.0, -1.0)], dim=1)
    with pytest.warns(
        ilplayer.errors.SolverFailureWarning,
        match=r"failed on instances \[1, 3\].*first error: RuntimeError: native library crashed",
    ):
        y, status = ilplayer.solve(c, A, b, lb=0, ub=1, solver=FlakySolver())
    assert status[1] == Status.ERROR and status[3] == Status.ERROR
    expected = ilplayer.solve(c, A, b, lb=0, ub=1)[1]
    keep = [0, 2, 4, 5]
    assert status[keep].tolist() == expected[keep].tolist()


def test_an_invalid_solution_is_demoted_to_error_never_returned_as_optimal():
    A = torch.tensor([[1.0, 1.0, 1.0]])
    b = torch.tensor([1.0])
    with pytest.warns(ilplayer.errors.SolverFailureWarning, match="returned an invalid solution"):
        y, status = ilplayer.solve(-torch.ones(2, 3), A, b, lb=0, ub=1, solver=LyingSolver())
    assert Status.names(status) == ["error", "error"]
    assert y.tolist() == [[0.0, 0.0, 0.0]] * 2  # the placeholder, not the lie


def _fresh_registry(monkeypatch, entry_points):
    monkeypatch.delenv(plugins.AUTOLOAD_ENV, raising=False)
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda group=None: [ep for ep in entry_points if ep.group == group],
    )
    registry = plugins._Registry()
    monkeypatch.setattr(plugins, "_registry", registry)
    return registry


def test_entry_point_plugins_are_loaded_once_and_broken_ones_warn(monkeypatch):
    EntryPoint = importlib.metadata.EntryPoint
    _fresh_registry(
        monkeypatch,
        [
            EntryPoint(name="fixture", value="fixture_plugin", group="ilplayer"),
            EntryPoint(name="broken", value="module_that_does_not_exist", group="ilplayer"),
            EntryPoint(name="misspelt", value="misspelt_plugin", group="ilplayer"),
            EntryPoint(name="other", value="fixture_plugin", group="not-ilplayer"),
        ],
    )
    with pytest.warns(ilplayer.errors.PluginLoadWarning) as record:
        names = ilplayer.list_solvers()
    messages = " ".join(str(w.message) for w in record)
    assert "'broken'" in messages and "ModuleNotFoundError" in messages
    assert "'misspelt'" in messages and "ilplayer_register_solver" in messages
    assert names == ["bruteforce", "fixture-enum", "fixture-missing", "knapsack"]
    assert ilplayer.available_solvers() == ["bruteforce", "fixture-enum", "knapsack"]
    c, A, b = random_problem(3)
    y, status = ilplayer.solve(c, A, b, lb=0, ub=1, solver="fixture-enum")
    same_objective(y, ilplayer.solve(c, A, b, lb=0, ub=1)[0], c)
    with pytest.raises(
        ilplayer.SolverNotInstalledError,
        match=r"needs the Python package\(s\) surely_not_installed_lib.*"
        r"pip install surely-not-installed-lib",
    ):
        ilplayer.get_solver("fixture-missing")


def test_autoload_can_be_disabled(monkeypatch):
    EntryPoint = importlib.metadata.EntryPoint
    _fresh_registry(
        monkeypatch, [EntryPoint(name="fixture", value="fixture_plugin", group="ilplayer")]
    )
    monkeypatch.setenv(plugins.AUTOLOAD_ENV, "1")
    assert ilplayer.list_solvers() == ["bruteforce", "knapsack"]


def test_solve_result_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="SolveResult shapes do not agree"):
        ilplayer.core.records.SolveResult(
            y=np.zeros((2, 3)), status=np.zeros(3), objective=np.zeros(2)
        )
