"""Mixed-integer programs: continuous variables, infinite bounds, UNBOUNDED, refusals, and the
core's guarantees (answer check, LP first, no search around a start, warm starts, gradients)."""

from __future__ import annotations

import contextlib
import time
import warnings

import numpy as np
import pytest
import torch
from scipy.optimize import linprog

import ilplayer
from ilplayer import Status
from ilplayer.core.records import ILPBatch
from ilplayer.losses import FenchelYoung, SPOPlus
from ilplayer.solvers.block_lps import integral_answer, integral_answers
from ilplayer.testing.milp_cases import (
    MilpCase,
    lattice_case,
    milp_case,
    milp_cases_for,
    slab_case,
    tie_knapsack_case,
)
from ilplayer.testing.milp_fuzz import fuzz_milp_backend, judge_milp, milp_oracle
from tests.host_solvers import MILP_BACKENDS, require

# x integer in [0, 4], z continuous >= 0: max x + 2 z s.t. x + z <= 3.5, z <= 1.25 + 0.5 x
A = torch.tensor([[1.0, 1.0], [-0.5, 1.0]])
B = torch.tensor([3.5, 1.25])
MIXED = [1, 0]


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_agrees_with_scipy_milp_on_fuzzed_cases(backend):
    solver = require(backend)
    report = fuzz_milp_backend(solver, milp_cases_for(160, start=7000))
    solver.close()
    wrong = {k: v for k, v in report.counts.items() if k not in ("ok", "skipped")}
    assert not wrong, (wrong, [(case.seed, verdicts) for case, verdicts, *_ in report.failures])
    assert report.count("ok") >= 150


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_unbounded_milps_that_hung_branch_and_bound(backend):
    # Fuzz seeds 200579 (cost row 1: an integer variable free above with a negative cost) and
    # 200115 (row 0): HiGHS' and SCIP's branch and bound ran for minutes on them; the LP
    # relaxation, asked first, settles them as unbounded. 300188 (row 3, an unbounded LP after
    # an unbounded one): appsi_highs ended "unknown" re-solving from the old basis.
    solver = require(backend)
    report = fuzz_milp_backend(solver, [milp_case(200579), milp_case(200115), milp_case(300188)])
    solver.close()
    assert report.count("ok") == 10, report.counts


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_milps_the_fuzz_once_answered_wrong(backend):
    # `ilplayer fuzz --milp` seeds 960450 and 961132: Gurobi 13 on its own settings (the
    # backend's for unbounded integers) answered "optimal" at a finite objective where the
    # programs are unbounded; the LP relaxation, asked first, settles them. Seeds 970368 and
    # 970910 (free integers, equalities of sides up to 6.6): SCIP's exact rows, at its relative
    # tolerance 1e-6, were met within 6.6e-6 and gave objectives better than the rows relaxed
    # by 1e-6 allow.
    solver = require(backend)
    cases = [milp_case(seed) for seed in (960450, 961132, 970368, 970910)]
    report = fuzz_milp_backend(solver, cases)
    solver.close()
    assert report.count("ok") == sum(len(case.c) for case in cases), report.counts


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_small_mixed_program(backend):
    require(backend)
    c = torch.tensor([[1.0, 2.0], [1.0, 0.0]])
    y, status = ilplayer.solve(
        c, A, B, lb=[0, 0], ub=[4, np.inf], solver=backend, sense="max", integrality=MIXED
    )
    assert Status.names(status) == ["optimal", "optimal"]
    # x = 1: z = min(2.5, 1.75) = 1.75 -> 4.5; x = 2: z = 1.5 -> 5.0; x = 3: z = 0.5 -> 4.0
    assert y[0].tolist() == pytest.approx([2.0, 1.5], abs=1e-6)
    assert y[1, 0].item() == 3.0  # x <= 3.5 and integer
    assert y.dtype == torch.float32


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_unbounded_and_infeasible_reported(backend):
    require(backend)
    c = torch.tensor([[-1.0, 0.0], [1.0, 1.0]])
    A1 = torch.tensor([[0.0, 1.0]])
    y, status = ilplayer.solve(
        c,
        A1,
        torch.tensor([2.0]),
        lb=[0, -np.inf],
        ub=[np.inf, np.inf],
        solver=backend,
        integrality=MIXED,
    )
    # first: x -> inf (unbounded); second: z -> -inf (unbounded, z free below)
    assert Status.names(status) == ["unbounded", "unbounded"]
    assert torch.isfinite(y).all()  # the placeholder, a point of the box
    _, status = ilplayer.solve(
        c,
        torch.tensor([[1.0, 1.0], [-1.0, -1.0]]),
        torch.tensor([1.0, -1.5]),
        lb=[0, 0],
        ub=[np.inf, 0.25],
        solver=backend,
        integrality=MIXED,
    )
    assert Status.names(status) == ["infeasible", "infeasible"]


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_all_continuous_is_the_lp_relaxation(backend):
    require(backend)
    rng = np.random.default_rng(3)
    A2, b2 = rng.uniform(0, 1, (4, 7)), rng.uniform(1, 2, 4)
    c = -rng.uniform(0, 1, (5, 7))
    y, status = ilplayer.solve(c, A2, b2, lb=0, ub=1, solver=backend, integrality=np.zeros(7))
    assert (status == Status.OPTIMAL).all()
    for i in range(5):
        reference = linprog(c[i], A_ub=A2, b_ub=b2, bounds=(0, 1))
        assert c[i] @ y[i] == pytest.approx(reference.fun, abs=1e-5)
    assert not np.allclose(y, np.round(y))  # fractional somewhere: really the LP


@pytest.mark.parametrize("backend", ["cpsat", "bruteforce"])
def test_pure_integer_backends_refuse_clearly(backend):
    require(backend)
    c = torch.ones(1, 2)
    with pytest.raises(ValueError, match=r"integrality: variable 1 is continuous.*pure-integer"):
        ilplayer.solve(c, A, B, lb=0, ub=4, solver=backend, integrality=MIXED)
    with pytest.raises(ValueError, match=r"lb/ub: variable 1 has an infinite bound.*finite box"):
        ilplayer.solve(c, A, B, lb=0, ub=[4, np.inf], solver=backend)
    with pytest.raises(ValueError, match="integrality"):
        ilplayer.ILPLayer(lb=0, ub=4, solver=backend, integrality=MIXED, method="identity")(c, A, B)


def test_capabilities_are_listed():
    from ilplayer.cli.solvers import solvers_table

    rows = {row[0]: row[4] for row in solvers_table()[1:]}
    assert "continuous-variables" in rows["highs"] and "infinite-bounds" in rows["highs"]
    assert "continuous-variables" not in rows["bruteforce"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"integrality": [1, 2]}, "integrality must hold 0"),
        ({"integrality": [1, 0, 1]}, r"integrality must have shape \(2,\)"),
        ({"integrality": "ab"}, "integrality must be 0/1"),
        ({"lb": [0, 0.5]}, r"lb must hold integers on the integer variables; lb\[1\] = 0.5"),
        ({"lb": [np.inf, 0]}, r"lb\[0\] = inf"),
        ({"ub": [4, -np.inf], "integrality": MIXED}, r"ub\[1\] = -inf"),
        ({"lb": [0, np.nan]}, "lb must not hold NaN"),
    ],
)
def test_bad_mixed_input_is_named(kwargs, message):
    args = {"lb": 0, "ub": 4, **kwargs}
    with pytest.raises((ValueError, TypeError), match=message):
        ilplayer.solve(torch.ones(1, 2), A, B, solver="highs", **args)


def test_fractional_bounds_on_continuous_variables():
    require("highs")
    y, status = ilplayer.solve(
        torch.tensor([[-1.0, -1.0]]),
        None,
        None,
        lb=[0, 0.25],
        ub=[3, 2.75],
        solver="highs",
        integrality=MIXED,
    )
    assert y.tolist() == [[3.0, 2.75]] and status.tolist() == [0]


def test_per_instance_integrality_groups_rows():
    require("highs")
    c = torch.tensor([[-1.0, -2.0], [-1.0, -2.0]])
    mask = torch.tensor([[1, 1], [1, 0]])
    y, status = ilplayer.solve(c, A, B, lb=0, ub=[4, np.inf], solver="highs", integrality=mask)
    assert (status == Status.OPTIMAL).all()
    assert y[0].tolist() == [2.0, 1.0]  # integer z: x + z <= 3.5, z <= 1.25 + x/2 -> (2, 1)
    assert y[1].tolist() == pytest.approx([2.0, 1.5])  # -6 at (1, 1.75) is -4.5: (2, 1.5) wins


def test_integral_answer_rounds_integer_variables_only():
    mask = np.array([True, False])
    assert integral_answer(np.array([2.0000000001, 0.3]), mask, 1e-9).tolist() == [2.0, 0.3]
    assert integral_answer(np.array([1.5, 0.3]), mask, 1e-9) is None
    assert integral_answer(np.array([1.5, 0.3]), np.zeros(2, bool), 1e-9).tolist() == [1.5, 0.3]
    rows = integral_answers(np.array([[2.0000000001, 0.3], [1.5, 0.3], [-1e-12, 0.5]]), mask, 1e-9)
    assert rows[0].tolist() == [2.0, 0.3] and rows[1] is None and rows[2].tolist() == [0.0, 0.5]
    assert str(rows[2][0]) == "0.0"  # not -0.0


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_no_search_around_a_start_on_mixed_programs_and_warm_starts_keep_continuous_values(backend):
    solver = require(backend)
    rng = np.random.default_rng(0)
    n = 10
    mixed = ILPBatch(
        c=-rng.uniform(0.1, 1, (40, n)),
        A=rng.uniform(0, 1, (3, n)),
        b=np.full(3, 2.5),
        lb=np.zeros(n),
        ub=np.ones(n),
        integrality=np.arange(n) % 2 == 0,
    )
    pure = mixed.with_rows()
    pure = ILPBatch(c=pure.c, A=pure.A, b=pure.b, lb=pure.lb, ub=pure.ub)
    first, again = solver.solve(mixed), solver.solve(mixed)
    assert np.array_equal(first.status, again.status) and np.allclose(
        first.objective, again.objective
    )
    if isinstance(solver, ilplayer.solvers.persistent.PersistentModelSolver):
        key = solver.model_key(mixed)
        assert key not in solver._search_gates  # the search enumerates integer boxes only
        pool = solver._warm_starts.get(key)
        if pool is not None and pool.size:
            points = pool.points[: pool.size]
            assert not np.allclose(points[:, 1::2], np.round(points[:, 1::2]))  # not rounded
        solver.solve(pure)
        if solver.uses_starts() and solver.gives_multipliers:
            assert solver.model_key(pure) in solver._search_gates
    solver.close()


def _knapsack_milp(B_=6, n=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    weights = torch.rand(2, n, generator=g, dtype=torch.float64) + 0.2
    c_true = torch.rand(B_, n, generator=g, dtype=torch.float64)
    return weights, torch.tensor([2.0, 2.5], dtype=torch.float64), c_true


@pytest.mark.parametrize("gradient", ["combopt", "blackbox", "identity", "perturbed"])
def test_cost_gradients_on_mixed_programs(gradient):
    require("highs")
    weights, capacity, c_true = _knapsack_milp()
    layer = ilplayer.ILPLayer(
        lb=0, ub=1, solver="highs", sense="max", method=gradient, integrality=[1, 0] * 4
    )
    c = c_true.clone().requires_grad_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ilplayer.errors.NoSignalWarning)
        y = layer(c, weights, capacity)
        (y * torch.randn_like(y)).sum().backward()
    assert (layer.last_status == Status.OPTIMAL).all()
    assert c.grad is not None and torch.isfinite(c.grad).all()
    if gradient != "perturbed":
        assert not torch.allclose(y[:, 1::2], y[:, 1::2].round())  # continuous halves


def test_combopt_refuses_constraint_gradients_with_continuous_variables():
    weights, capacity, c_true = _knapsack_milp()
    layer = ilplayer.ILPLayer(lb=0, ub=1, solver="highs", integrality=[1, 0] * 4)
    with pytest.raises(
        ValueError, match=r"integrality: method='combopt' gives gradients for A and b"
    ):
        layer(c_true, weights.requires_grad_(True), capacity)


@pytest.mark.parametrize("loss", ["spo+", "fy"])
def test_losses_on_mixed_programs(loss):
    require("highs")
    weights, capacity, c_true = _knapsack_milp()
    layer = ilplayer.ILPLayer(
        lb=0, ub=1, solver="highs", sense="max", method="identity", integrality=[1, 0] * 4
    )
    c_pred = torch.zeros_like(c_true, requires_grad=True)
    if loss == "spo+":
        value = SPOPlus(layer)(c_pred, c_true, weights, capacity)
    else:
        y_true, _ = layer.oracle.solve_batch(c_true, weights, capacity)
        value = FenchelYoung(layer, samples=4)(c_pred, y_true, weights, capacity)
    value.backward()
    assert torch.isfinite(c_pred.grad).all() and c_pred.grad.abs().sum() > 0


def test_judge_counts_a_false_unbounded_as_wrong():
    case = milp_case(5, batch=1)
    reference = milp_oracle(case)
    if reference.status[0] != "optimal":
        pytest.skip("the seed's instance is not feasible")
    verdicts = judge_milp(
        case, reference, np.zeros_like(case.c), np.array([Status.UNBOUNDED], np.int8)
    )
    assert verdicts == ["false-unbounded"]


def test_a_checked_point_better_than_the_oracle_is_not_a_wrong_answer():
    """Case 991008's third instance: scipy's HiGHS answered -44.57 where Gurobi and ilplayer's
    HiGHS (from a pooled start) found -52.07 with a point that meets the rows. Here: max y,
    y <= 5 in [0, 10], an oracle that says -3."""
    from ilplayer.testing.milp_fuzz import MilpOracle

    case = MilpCase(
        seed=0,
        c=np.array([[-1.0]]),
        A=np.array([[1.0]]),
        b=np.array([5.0]),
        lb=np.array([0.0]),
        ub=np.array([10.0]),
        integrality=np.array([True]),
        A_eq=np.zeros((0, 1)),
        b_eq=np.zeros(0),
    )
    optimal = np.array([Status.OPTIMAL], np.int8)
    short = MilpOracle(["optimal"], np.array([-3.0]), np.array([-3.0]), ["optimal"])
    assert judge_milp(case, short, np.array([[5.0]]), optimal) == ["beats-oracle"]
    assert judge_milp(case, short, np.array([[7.0]]), optimal) == ["wrong-optimal"]  # off the row
    assert judge_milp(case, short, np.array([[4.5]]), optimal) == ["wrong-optimal"]  # not integer
    right = MilpOracle(["optimal"], np.array([-5.0]), np.array([-5.0]), ["optimal"])
    assert judge_milp(case, right, np.array([[5.0]]), optimal) == ["ok"]


def _scipy_defaults(case):
    """scipy's MILP (HiGHS with its own defaults, presolve on): status name and optimum."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    result = milp(
        case.c[0],
        constraints=[LinearConstraint(case.A, -np.inf, case.b)],
        integrality=case.integrality.astype(int),
        bounds=Bounds(case.lb, case.ub),
    )
    return {0: "optimal", 2: "infeasible"}[result.status], result.fun


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_speed_settings_never_hang_where_the_solvers_defaults_answer(backend):
    # Integer variables with infinite bounds in a slab of fractional rows: with the settings tuned
    # for small boxes (no presolve, no cuts) HiGHS' and SCIP's branch and bound ran into every
    # time limit and Gurobi took 4-40x its defaults' time; their own defaults settle each in
    # milliseconds. Those models now get the solver's defaults (ILPBatch.unbounded_integers).
    require(backend)
    cases = [(seed, feasible) for seed in range(8) for feasible in (True, False)]
    if backend == "scip":
        # SCIP's search on parity-infeasible slabs is erratic: its defaults (exact rows) run into
        # any time limit on 0, 5 and 6, and on 6 its search on the core's banded rows answers at
        # once; on 3 and 4 the other way round: the plugin tries both in turn. On 0 and 5 both hang.
        cases = [(seed, feasible) for seed, feasible in cases if feasible or seed not in (0, 5)]
    # A hang runs into any limit; 30 s leaves room for SCIP's slab 3, which took 17-18 s beside two
    # training runs on this 2-core machine (10 s failed there).
    for seed, feasible in cases:
        case = slab_case(seed, feasible)
        expected, optimum = _scipy_defaults(case)
        y, status = ilplayer.solve(
            case.c,
            case.A,
            case.b,
            case.lb,
            case.ub,
            solver=backend,
            solver_options={"time_limit": 30.0},
            integrality=case.integrality,
        )
        assert Status.names(status) == [expected], (seed, feasible)
        if expected == "optimal":
            assert float(case.c[0] @ y[0]) == pytest.approx(optimum, abs=1e-6), (seed, feasible)


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_speed_settings_give_way_to_the_solvers_defaults_on_bounded_binaries_too(backend):
    # Near-alike knapsack items (an untrained learner's): with the tuned settings Gurobi ran into a
    # 3 s limit on 5 of these 6 and SCIP on 5 (about 10^5 nodes a second), where their defaults
    # answer in 0.01-0.3 s. An instance past ESCALATE_NODES is finished on their own settings.
    require(backend)
    for seed in range(6):
        case = tie_knapsack_case(seed)
        y, status = ilplayer.solve(
            case.c,
            case.A,
            case.b,
            case.lb,
            case.ub,
            solver=backend,
            executor="serial",
            solver_options={"time_limit": 3.0},
        )
        # optimal between the exact rows' optimum and the core's band's (ties differ by 1e-6)
        assert judge_milp(case, milp_oracle(case), y, status) == ["ok"], seed


def test_a_node_limit_in_params_keeps_the_speed_settings_and_turns_the_switch_off():
    batch = ILPBatch(
        c=np.ones((1, 3)), A=np.ones((1, 3)), b=np.ones(1), lb=np.zeros(3), ub=np.ones(3)
    )
    require("scip")
    from ilplayer_scip.solver import ScipSolver

    model = ScipSolver(params={"limits/nodes": 1000}).build_model(batch)
    assert not model.tuned and model.scip.getParam("presolving/maxrounds") == 0
    assert model.scip.getParam("limits/nodes") == 1000
    assert ScipSolver().build_model(batch).tuned
    require("gurobi")
    from ilplayer_gurobi.solver import GurobiSolver

    solver = GurobiSolver(params={"NodeLimit": 1000})
    model = solver.build_model(batch)
    assert not model.tuned and solver.mip_of(model).getParamInfo("Cuts")[2] == 0
    assert GurobiSolver().build_model(batch).tuned


def test_scips_turns_on_banded_and_exact_rows_keep_to_the_time_limit(monkeypatch):
    """Neither form settles this slab (SCIP's own defaults ran 8 s into their limit): the turns
    end at the time limit, each form's search begun once and resumed turn after turn."""
    require("scip")
    from ilplayer_scip.solver import ScipSolver

    begun, runs = [], []
    begin, run = ScipSolver._begin, ScipSolver._run
    monkeypatch.setattr(
        ScipSolver, "_begin", lambda self, m, *a: (begun.append(id(m)), begin(self, m, *a))[1]
    )
    monkeypatch.setattr(ScipSolver, "_run", lambda self, *a: (runs.append(1), run(self, *a))[1])
    case = slab_case(0, False)
    began = time.perf_counter()
    _, status = ilplayer.solve(
        case.c,
        case.A,
        case.b,
        case.lb,
        case.ub,
        solver="scip",
        executor="serial",
        solver_options={"time_limit": 1.0},
        integrality=case.integrality,
    )
    assert Status.names(status) == ["time_limit_no_solution"]
    assert time.perf_counter() - began < 3.0
    assert len(begun) == len(set(begun)) == 2 and len(runs) >= 4  # two forms, several turns


def test_unbounded_integers_marks_the_models_that_keep_the_solvers_defaults():
    batch = lambda lb, ub, integrality: ILPBatch(
        c=np.ones((1, 2)),
        A=np.ones((1, 2)),
        b=np.ones(1),
        lb=np.array(lb, float),
        ub=np.array(ub, float),
        integrality=np.array(integrality, bool),
    )
    assert batch([0, -np.inf], [1, 1], [True, True]).unbounded_integers
    assert not batch([0, -np.inf], [1, 1], [True, False]).unbounded_integers  # a continuous one
    assert not batch([0, 0], [1, 5], [True, True]).unbounded_integers


# How each backend with the per-instance switch says that a model is on its speed settings, with
# the node budget set again for the next instance.
ON_SPEED_SETTINGS = {
    "gurobi": lambda model, budget: (
        model.mip.getParamInfo("Cuts")[2] == 0
        and model.mip.getParamInfo("Presolve")[2] == 0
        and model.mip.getParamInfo("NodeLimit")[2] == budget
    ),
    "highs": lambda model, budget: (
        model.highs.getOptionValue("presolve")[1] == "off"
        and model.highs.getOptionValue("mip_max_nodes")[1] == budget
    ),
    "scip": lambda model, budget: (
        model.scip.getParam("presolving/maxrounds") == 0
        and model.scip.getParam("limits/nodes") == budget
    ),
}


@pytest.mark.parametrize("backend", sorted(ON_SPEED_SETTINGS))
def test_an_instance_past_the_node_budget_is_finished_on_the_solvers_own_and_the_next_starts_tuned(
    backend, monkeypatch
):
    # The switch once kept the solver's own settings for good after a model's first hard
    # instance: a dense [-5, 5] model then paid them on every later instance (3-4x on Gurobi).
    # With a budget of 2 nodes most instances here run past it (more than one: the old switch
    # fired once a model), each is finished on the solver's own settings, and the model is back
    # on the speed settings before the next one.
    import importlib

    from ilplayer.testing.instances import family_batch

    solver = require(backend)
    module = importlib.import_module(f"ilplayer_{backend}.solver")
    monkeypatch.setattr(module, "ESCALATE_NODES", 2)
    finished = []
    escalate = type(solver)._escalate
    monkeypatch.setattr(
        type(solver),
        "_escalate",
        lambda self, model, *args: (finished.append(1), escalate(self, model, *args))[1],
    )
    batch = family_batch("dense m=8", 6, seed=3)
    switch_off = {"gurobi": "NodeLimit", "highs": "mip_max_nodes", "scip": "limits/nodes"}[backend]
    plain = ilplayer.get_solver(backend, params={switch_off: 10**9})
    model, plain_model = solver.build_model(batch), plain.build_model(batch)
    for c in batch.c:
        status, y = solver.solve_instance(model, c)
        plain_status, plain_y = plain.solve_instance(plain_model, c)
        assert status == plain_status == Status.OPTIMAL
        assert float(c @ y) == pytest.approx(float(c @ plain_y), abs=1e-6)
        assert ON_SPEED_SETTINGS[backend](model, 2)
    assert len(finished) >= 2
    solver.close()
    plain.close()


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_programs_whose_feasibility_is_a_lattice_search_get_an_answer_not_a_hang(backend):
    # Two fractional equalities over unbounded integers (milp_cases.lattice_case): the LP
    # relaxation is unbounded under most costs, and telling an unbounded program from an
    # infeasible one means finding a lattice point on the equalities, which ran into every time
    # limit on HiGHS and Gurobi (status ERROR) where their defaults answer "infeasible or
    # unbounded" in milliseconds. The check now stops after CHECK_NODES nodes, and every program
    # here is feasible by construction: no INFEASIBLE, no ERROR, well within the limit.
    require(backend)
    for seed in (11, 25, 41):
        case = lattice_case(seed)
        began = time.perf_counter()
        _, status = ilplayer.solve(
            case.c,
            case.A,
            case.b,
            case.lb,
            case.ub,
            solver=backend,
            executor="serial",
            solver_options={"time_limit": 20.0},
            A_eq=case.A_eq,
            b_eq=case.b_eq,
            integrality=case.integrality,
        )
        assert Status.names(status)[0] in ("optimal", "unbounded", "infeasible_or_unbounded"), seed
        assert time.perf_counter() - began < 10.0, seed


def test_in_turns_gives_each_try_a_doubling_slice_until_one_answers():
    from ilplayer.solvers.escalation import in_turns

    slices = []

    def attempt(name, answers_at):
        def run(limit):
            slices.append((name, limit))
            return limit >= answers_at, name

        return run

    assert in_turns([attempt("exact", 1.0), attempt("band", 0.3)], None, 0.05) == "band"
    assert slices == [("exact", 0.05), ("band", 0.1), ("exact", 0.2), ("band", 0.4)]
    slices.clear()
    began = time.perf_counter()
    assert in_turns([attempt("exact", 99.0)], 0.0, 0.05) == "exact"  # no time: one try, its result
    assert time.perf_counter() - began < 1.0 and len(slices) == 1


def test_a_feasibility_check_cut_short_leaves_the_status_open():
    from ilplayer.solvers.escalation import infeasible_or_unbounded

    class Hooks:
        name = "stub-check"

        def __init__(self, code):
            self.code, self.limits = code, []

        @contextlib.contextmanager
        def node_limit(self, model, nodes):
            self.limits.append(nodes)
            yield

        def solve_instance(self, model, c, start=None):
            assert not c.any()  # the check: zero costs
            return self.code, None

    from ilplayer.solvers.escalation import CHECK_NODES

    for code, expected in (
        (Status.OPTIMAL, Status.UNBOUNDED),
        (Status.TIME_LIMIT, Status.UNBOUNDED),
        (Status.INFEASIBLE, Status.INFEASIBLE),
        (Status.TIME_LIMIT_NO_SOLUTION, Status.INFEASIBLE_OR_UNBOUNDED),
    ):
        hooks = Hooks(code)
        assert infeasible_or_unbounded(hooks, None, 3) == expected
        assert hooks.limits == [CHECK_NODES]


def test_the_feasibility_check_gets_a_time_limit_from_the_solve_before_it():
    from ilplayer.solvers.escalation import (
        CHECK_MIN_SECONDS,
        check_seconds,
        infeasible_or_unbounded,
    )

    class Hooks:
        name = "stub-timed-check"

        def __init__(self):
            self.limits = []

        @contextlib.contextmanager
        def node_limit(self, model, nodes, seconds=None):
            self.limits.append((nodes, seconds))
            yield

        def solve_instance(self, model, c, start=None):
            return Status.TIME_LIMIT_NO_SOLUTION, None

    hooks = Hooks()
    assert infeasible_or_unbounded(hooks, None, 3, spent=0.5) == Status.INFEASIBLE_OR_UNBOUNDED
    assert infeasible_or_unbounded(hooks, None, 3) == Status.INFEASIBLE_OR_UNBOUNDED
    assert hooks.limits == [(1, check_seconds(0.5)), (1, None)]
    assert check_seconds(0.5) == 2.0 and check_seconds(0.0) == CHECK_MIN_SECONDS
    hooks.check_min_seconds = 0.02  # a backend whose every solve costs more sets its own floor
    hooks.limits.clear()
    infeasible_or_unbounded(hooks, None, 3, spent=0.0)
    assert hooks.limits == [(1, 0.02)]


def test_a_check_cut_short_by_the_machines_load_runs_again_on_the_node_limit():
    from ilplayer.solvers.escalation import infeasible_or_unbounded

    class Hooks:
        """A check that needs longer than its time limit, asleep as a process the machine
        does not run."""

        name = "stub-loaded-check"

        def __init__(self):
            self.limits, self.seconds = [], None

        @contextlib.contextmanager
        def node_limit(self, model, nodes, seconds=None):
            self.limits.append((nodes, seconds))
            self.seconds = seconds
            try:
                yield
            finally:
                self.seconds = None

        def solve_instance(self, model, c, start=None):
            if self.seconds is None:
                return Status.OPTIMAL, np.zeros(len(c))  # no time limit: the point is found
            time.sleep(2 * self.seconds)
            return Status.TIME_LIMIT_NO_SOLUTION, None

    asleep = Hooks()
    assert infeasible_or_unbounded(asleep, None, 3, spent=0.01) == Status.UNBOUNDED
    assert [seconds is None for _, seconds in asleep.limits] == [False, True]
    # (A check whose own work runs out the clock keeps the solver's own answer: the time
    # limit's test above; a busy stub here would depend on this machine's load.)


def test_the_feasibility_verdict_is_kept_per_model():
    from ilplayer.solvers.escalation import infeasible_or_unbounded

    class Model:  # a native model (any object that takes a weak reference)
        pass

    class Hooks:
        name = "stub-counting-check"
        checks = 0

        def solve_instance(self, model, c, start=None):
            self.checks += 1
            return Status.OPTIMAL, np.zeros(len(c))

    hooks, first, second = Hooks(), Model(), Model()
    assert [infeasible_or_unbounded(hooks, first, 2) for _ in range(3)] == [Status.UNBOUNDED] * 3
    assert hooks.checks == 1  # the zero-cost question does not depend on the costs
    assert infeasible_or_unbounded(hooks, second, 2) == Status.UNBOUNDED and hooks.checks == 2


def test_an_integral_zero_cost_relaxation_answers_the_check_without_its_mip():
    from ilplayer.solvers.escalation import infeasible_or_unbounded

    class Model:
        pass

    class Hooks:
        name = "stub-relaxing-check"
        solves_relaxations = True

        def __init__(self, relaxed):
            self.relaxed, self.mips = relaxed, 0

        def solve_relaxations(self, model, c):
            assert not c.any()  # the zero-cost question
            return [self.relaxed]

        def solve_instance(self, model, c, start=None):
            self.mips += 1
            return Status.INFEASIBLE, None

    integral = Hooks(np.zeros(2))
    assert infeasible_or_unbounded(integral, Model(), 2) == Status.UNBOUNDED and not integral.mips
    fractional = Hooks(None)  # no integral optimum: the MIP decides
    assert infeasible_or_unbounded(fractional, Model(), 2) == Status.INFEASIBLE
    assert fractional.mips == 1


# Each backend's native time limit, read from the model(s) node_limit caps.
NATIVE_TIME_LIMIT = {
    "gurobi": lambda solver, model: [solver.mip_of(model).getParamInfo("TimeLimit")[2]],
    "highs": lambda solver, model: [model.highs.getOptionValue("time_limit")[1]],
    "scip": lambda solver, model: [model.scip.getParam("limits/time")],
}


@pytest.mark.parametrize("backend", sorted(NATIVE_TIME_LIMIT))
def test_node_limit_caps_the_native_time_limit_inside_and_restores_it(backend):
    require(backend)
    case = lattice_case(11)
    solver = ilplayer.get_solver(backend, time_limit=20.0)
    batch = ILPBatch(
        c=case.c,
        A=case.A,
        b=case.b,
        lb=case.lb,
        ub=case.ub,
        A_eq=case.A_eq,
        b_eq=case.b_eq,
        integrality=case.integrality,
    )
    model = solver.build_model(batch)
    read = NATIVE_TIME_LIMIT[backend]
    assert read(solver, model) == [20.0]
    with solver.node_limit(model, 1, seconds=0.25):
        assert read(solver, model) == [0.25] and not model.tuned
    assert read(solver, model) == [20.0]
    solver.close()


def test_the_switch_sends_a_streak_of_instances_to_the_solvers_own_settings_doubling_with_each_hard_one():
    from ilplayer.solvers.escalation import Switch

    switch, starts = Switch(max_streak=4), []
    hard = iter([True, True, True, True, False, True])  # the tuned starts' outcomes, in turn
    for _ in range(16):
        tuned = switch.start_tuned()
        starts.append(tuned)
        if tuned:
            switch.record(next(hard, False))
    # hard: 1 on own; hard: 2; hard: 4; hard: 4 (the cap); easy: none; hard: 1
    assert starts == [
        True,
        False,
        True,
        False,
        False,
        True,
        False,
        False,
        False,
        False,
        True,
        False,
        False,
        False,
        False,
        True,
    ]
    assert Switch(max_streak=0).start_tuned() and not Switch().own_left


@pytest.mark.parametrize("backend", ["gurobi", "scip"])
def test_a_model_of_hard_instances_pays_the_node_budget_ever_more_rarely(backend, monkeypatch):
    # Near-tie knapsacks on one model: each instance started tuned once ran its 500 nodes before
    # the switch (SCIP: 2.3x the time of the switch kept for good). Past the budget, the next
    # instances go straight to the solver's own settings, a doubling streak.
    import importlib

    solver = require(backend)
    module = importlib.import_module(f"ilplayer_{backend}.solver")
    monkeypatch.setattr(module, "ESCALATE_NODES", 1)
    case = tie_knapsack_case(0)
    batch = ILPBatch(c=case.c, A=case.A, b=case.b, lb=case.lb, ub=case.ub)
    model = solver.build_model(batch)
    tuned_starts = []
    start_tuned = model.switch.start_tuned
    model.switch.start_tuned = lambda: (tuned_starts.append(start_tuned()), tuned_starts[-1])[1]
    rng = np.random.default_rng(0)
    for _ in range(7):
        status, _ = solver.solve_instance(
            model, case.c[0] + 1e-4 * rng.standard_normal(case.c.shape[1])
        )
        assert status == Status.OPTIMAL
    assert tuned_starts == [True, False, True, False, False, True, False]
    solver.close()
