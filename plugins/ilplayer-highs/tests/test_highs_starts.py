"""HiGHS turns a pooled start into an objective cutoff, and into a MIP start only while recent
starts were optimal: both ways must give the cold solve's optimum."""

from __future__ import annotations

import numpy as np
import pytest

import ilplayer
from ilplayer import Status
from ilplayer_experiments.bench import family_batch

pytest.importorskip("highspy")
from ilplayer_highs import solver as highs_solver


def _without_search(solver):
    """The MIP for every instance: no reduced-cost search around the start first."""
    solver.relaxation_multipliers = lambda model, c: [None] * len(c)
    return solver


def _objectives(solver, batch):
    result = solver.solve(batch)
    assert (result.status == Status.OPTIMAL).all()
    return result.objective


@pytest.mark.parametrize("family", ["dense m=4", "binary m=8", "knapsack"])
def test_warm_solves_match_cold_ones_with_and_without_mip_starts(family, monkeypatch):
    batch = family_batch(family, 24, seed=3)
    rng = np.random.default_rng(0)
    revisit = batch.with_rows(c=batch.c * (1 + 0.01 * rng.standard_normal(batch.c.shape)))
    cold = ilplayer.get_solver("highs", warm_start=False)
    expected = [_objectives(cold, batch), _objectives(cold, revisit)]
    for hit_rate, search in ((0.0, False), (2.0, False), (0.0, True)):  # 2.0: only cutoffs
        monkeypatch.setattr(highs_solver, "START_HIT_RATE", hit_rate)
        warm = (
            ilplayer.get_solver("highs")
            if search
            else _without_search(ilplayer.get_solver("highs"))
        )
        for data, reference in zip((batch, revisit), expected):
            np.testing.assert_allclose(_objectives(warm, data), reference, atol=1e-7)


def test_a_start_nothing_beats_is_the_answer(monkeypatch):
    # A negative slack puts the cutoff just below the start: HiGHS finds nothing and reports
    # infeasible, which on a revisited instance means that its previous answer is optimal.
    batch = family_batch("dense m=4", 6, seed=1)
    solver = _without_search(ilplayer.get_solver("highs"))
    first = solver.solve(batch)
    monkeypatch.setattr(highs_solver, "CUTOFF_SLACK", -1e-6)
    again = solver.solve(batch)
    assert (again.status == Status.OPTIMAL).all()
    np.testing.assert_allclose(again.objective, first.objective, atol=1e-9)


def test_the_hit_rate_follows_whether_starts_were_optimal():
    batch = family_batch("dense m=8", 32, seed=0)
    solver = _without_search(ilplayer.get_solver("highs"))
    solver.solve(batch)  # fresh costs: the pooled points are rarely optimal for the next one
    model = solver.model_for(batch)
    assert model.hit_rate < highs_solver.START_HIT_RATE
    solver.solve(batch)  # the same costs again: every start is the answer
    assert model.hit_rate > 0.9


def test_the_search_with_equalities_in_blocks_matches_cold_solves():
    rng = np.random.default_rng(4)
    n = 14
    batch = ilplayer.core.records.ILPBatch(
        c=rng.normal(size=(40, n)),
        A=rng.uniform(0, 1, (3, n)),
        b=np.full(3, 2.5),
        lb=np.zeros(n),
        ub=np.full(n, 2),
        A_eq=np.ones((1, n)),
        b_eq=np.array([5.0]),
    )
    revisit = batch.with_rows(c=batch.c * (1 + 0.01 * rng.standard_normal(batch.c.shape)))
    cold, warm = ilplayer.get_solver("highs", warm_start=False), ilplayer.get_solver("highs")
    searched = []
    search = highs_solver.HighsSolver.relaxation_multipliers
    warm.relaxation_multipliers = lambda model, c: searched.append(len(c)) or search(warm, model, c)
    for data in (batch, revisit):
        np.testing.assert_allclose(_objectives(warm, data), _objectives(cold, data), atol=1e-7)
    assert max(searched) >= highs_solver.MIN_BLOCK  # the block LP's duals were used


def test_another_highs_user_with_more_threads_does_not_break_the_backend():
    """PyEPO's Pyomo model (appsi_highs) runs HiGHS with its default threads first: HiGHS 1.16's
    one scheduler per process then refused every model asking for 1 thread ("Not Set")."""
    import highspy

    highspy.Highs.resetGlobalScheduler(True)  # as in a fresh process: the other user comes first
    other = highspy.Highs()
    other.setOptionValue("output_flag", False)
    other.setOptionValue("threads", 2)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = 1, 0
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = np.array([1.0]), np.array([0.0]), np.array([1.0])
    other.passModel(lp)
    assert other.run() == highspy.HighsStatus.kOk
    y, status = ilplayer.solve(
        np.array([[-1.0, -1.0]]),
        np.array([[1.0, 1.0]]),
        np.array([1.0]),
        0,
        1,
        solver="highs",
        executor="serial",
    )
    assert status.tolist() == [0] and y.sum() == 1.0


def test_presolve_is_on_for_large_models_only_and_params_win():
    def presolve(solver, n):
        batch = ilplayer.core.records.ILPBatch(
            c=np.ones((1, n)), A=np.ones((1, n)), b=np.array([1.0]), lb=np.zeros(n), ub=np.ones(n)
        )
        return solver.model_for(batch).highs.getOptionValue("presolve")[1]

    solver = ilplayer.get_solver("highs")
    assert presolve(solver, 16) == "off" and presolve(solver, highs_solver.PRESOLVE_FROM) == "on"
    assert presolve(ilplayer.get_solver("highs", params={"presolve": "off"}), 200) == "off"


def test_large_mixed_programs_agree_with_gurobi():
    """PyEPO's TSP (10 nodes, 180 variables: presolve on) and 128-item knapsacks."""
    pytest.importorskip("gurobipy")
    from ilplayer_experiments.bench.scale import scale_problem

    for family, size in (("tsp", 10), ("knapsack", 128)):
        problem = scale_problem(family, size, 6, seed=3)
        c = problem.pop("c")
        y, status = ilplayer.solve(c, solver="highs", executor="serial", **problem)
        y_ref, status_ref = ilplayer.solve(c, solver="gurobi", executor="serial", **problem)
        assert (status == 0).all() and (status_ref == 0).all()
        assert np.allclose((c * y).sum(1), (c * y_ref).sum(1), rtol=1e-7, atol=1e-6), family


@pytest.mark.parametrize("user_off", [False, True], ids=["defaults", "params turn it off"])
def test_the_check_turns_the_feasibility_jump_off_and_back_unless_params_did(user_off):
    """Inside `node_limit` (the core's feasibility check) the jump is off and its models are
    the ones `_run` may run again with it; after, as before. A user's own setting is theirs:
    never turned on for a rerun."""
    from ilplayer.core.records import ILPBatch

    jump = highs_solver.FEASIBILITY_JUMP
    solver = ilplayer.get_solver("highs", params={jump: False} if user_off else None)
    batch = ILPBatch(
        c=np.ones((1, 2)),
        A=np.array([[1.0, 1.0]]),
        b=np.array([3.0]),
        lb=np.array([0.0, -np.inf]),
        ub=np.array([5.0, np.inf]),
    )
    model = solver.model_for(batch)
    forms = [model.highs, solver._exact_mip(model)] if model.exact_first else [model.highs]
    with solver.node_limit(model, 1):
        assert [form.getOptionValue(jump)[1] for form in forms] == [False] * len(forms)
        assert solver._jumps_off == (set() if user_off else {id(form) for form in forms})
    assert [form.getOptionValue(jump)[1] for form in forms] == [not user_off] * len(forms)
    assert solver._jumps_off == set()
    solver.close()
