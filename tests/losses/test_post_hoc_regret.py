"""The post-hoc regret (two-stage) against hand-solved cases and exhaustive enumeration of the
box: Stage 2's optimum over every integer point, its penalty and its allowed directions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer.metrics import post_hoc_regret


def test_a_knapsack_whose_items_only_drop_pays_for_the_item_it_gives_up():
    # max 5 y1 + 4 y2 + 3 y3; predicted sizes 2, 2, 2 (cap 4) pick items 1 and 2; the true sizes
    # 3, 3, 2 fit item 1 alone (5, the true optimum too): Stage 2 drops item 2 at 0.5.
    program = ilplayer.Program(lb=0, ub=1, sense="max")
    prices = torch.tensor([[5.0, 4.0, 3.0]])
    y1 = torch.tensor([[1.0, 1.0, 0.0]])
    result = post_hoc_regret(
        program,
        y1,
        prices,
        torch.tensor([[3.0, 3.0, 2.0]]),
        torch.tensor([4.0]),
        penalty=0.5,
        changes="drop",
        solver="highs",
    )
    assert result.stage2.tolist() == [[1.0, 0.0, 0.0]]
    assert result.value.tolist() == [4.5] and result.optimal.tolist() == [5.0]
    assert result.regret.tolist() == [0.5]
    assert result.infeasible.tolist() == [True] and result.infeasibility_rate == 1.0
    assert result.normalised == pytest.approx(0.5 / 5.0)


def test_a_feasible_stage1_decision_may_still_change_when_the_optimum_is_worth_the_penalty():
    program = ilplayer.Program(A=[[1.0, 1.0]], b=[1.0], lb=0, ub=1, sense="max")
    y1 = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    c = torch.tensor([[1.0, 3.0], [1.0, 1.5]])
    # moving the one unit from y1 to y2 costs 2 x 0.4 (any direction, both pay) and gains 2, or 0.5
    result = post_hoc_regret(program, y1, c, penalty=0.4, solver="highs")
    assert result.stage2.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert result.regret.tolist() == pytest.approx([0.8, 0.5])
    assert result.infeasible.tolist() == [False, False]
    # the nurse schedule's rule: a shift added pays, a shift given up does not
    result = post_hoc_regret(program, y1, c, penalty=0.4, drop_penalty=0.0, solver="highs")
    assert result.stage2.tolist() == [[0.0, 1.0], [0.0, 1.0]]
    assert result.regret.tolist() == pytest.approx([0.4, 0.4])


def test_a_minimisation_program_adds_the_penalty_to_its_cost():
    # cover: min 2 y1 + 3 y2 s.t. y1 + y2 >= 2 (true), y in {0..2}; Stage 1 bought one y2
    program = ilplayer.Program(A=[[-1.0, -1.0]], b=[-2.0], lb=0, ub=2, sense="min")
    result = post_hoc_regret(
        program,
        torch.tensor([[0.0, 1.0]]),
        torch.tensor([2.0, 3.0]),
        penalty=1.0,
        changes="add",
        solver="highs",
    )
    # add one y1 (2 + 1) on top of the y2 kept (3): 6 against the optimum 4 (two y1)
    assert result.stage2.tolist() == [[1.0, 1.0]]
    assert result.value.tolist() == [6.0] and result.regret.tolist() == [2.0]


def test_an_instance_that_stage2_cannot_repair_gets_a_status_and_no_score():
    program = ilplayer.Program(A=[[-1.0, -1.0]], b=[-1.0], lb=0, ub=1, sense="max")
    y1 = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    result = post_hoc_regret(
        program, y1, torch.tensor([-1.0, -2.0]), changes="drop", solver="highs"
    )
    assert result.status.tolist() == [int(ilplayer.Status.INFEASIBLE), int(ilplayer.Status.OPTIMAL)]
    assert torch.isnan(result.regret[0]) and result.regret[1].item() == 0.0
    assert result.mean == 0.0 and result.solved.tolist() == [False, True]


def _enumerated(c, A, b, A_eq, b_eq, y1, add, drop, box, sense, changes):
    """Stage 2 and the true optimum by enumerating every integer point of the box."""
    best_true, best_stage2 = None, None
    sign = 1.0 if sense == "max" else -1.0
    for point in itertools.product(range(box[0], box[1] + 1), repeat=len(c)):
        y = np.array(point, dtype=float)
        if (A @ y > b + 1e-9).any() or (A_eq.size and np.abs(A_eq @ y - b_eq).max() > 1e-9):
            continue
        value = c @ y
        if best_true is None or sign * value > sign * best_true:
            best_true = value
        if (changes == "drop" and (y > y1).any()) or (changes == "add" and (y < y1).any()):
            continue
        paid = add @ np.clip(y - y1, 0, None) + drop @ np.clip(y1 - y, 0, None)
        net = value - sign * paid
        if best_stage2 is None or sign * net > sign * best_stage2:
            best_stage2 = net
    return best_true, best_stage2


@pytest.mark.parametrize("solver", ["highs", "gurobi", "scip"])
def test_post_hoc_regret_matches_exhaustive_enumeration(solver):
    try:
        ilplayer.get_solver(solver).close()
    except (ilplayer.SolverNotInstalledError, ilplayer.UnknownSolverError) as exc:
        pytest.skip(f"backend {solver!r} is not installed: {exc}")
    rng = np.random.default_rng(7)
    checked = 0
    for trial in range(12):
        n, m, B = int(rng.integers(2, 5)), int(rng.integers(1, 3)), 16
        box = (0, int(rng.integers(1, 3)))
        sense, changes = rng.choice(["min", "max"]), rng.choice(["any", "add", "drop"])
        program = ilplayer.Program(lb=box[0], ub=box[1], sense=str(sense))
        c = rng.integers(-5, 6, (B, n)).astype(float)
        A = rng.integers(-3, 4, (B, m, n)).astype(float)
        b = rng.integers(0, 6, (B, m)).astype(float)
        with_eq = trial % 3 == 0
        A_eq = rng.integers(0, 2, (B, 1, n)).astype(float) if with_eq else None
        b_eq = np.ones((B, 1)) if with_eq else None
        y1 = rng.integers(box[0], box[1] + 1, (B, n)).astype(float)
        add = rng.uniform(0, 3, (B, n)).round(2)
        drop = rng.uniform(0, 3, (B, n)).round(2)
        result = post_hoc_regret(
            program,
            torch.from_numpy(y1),
            torch.from_numpy(c),
            torch.from_numpy(A),
            torch.from_numpy(b),
            None if A_eq is None else torch.from_numpy(A_eq),
            None if b_eq is None else torch.from_numpy(b_eq),
            penalty=torch.from_numpy(add),
            drop_penalty=torch.from_numpy(drop),
            changes=str(changes),
            solver=solver,
            executor="serial",
        )
        for i in range(B):
            eq = (A_eq[i], b_eq[i]) if with_eq else (np.zeros((0, n)), np.zeros(0))
            optimum, stage2 = _enumerated(
                c[i], A[i], b[i], *eq, y1[i], add[i], drop[i], box, sense, changes
            )
            infeasible = bool(
                (A[i] @ y1[i] > b[i]).any() or (with_eq and (A_eq[i] @ y1[i] != b_eq[i]).any())
            )
            assert result.infeasible[i].item() == infeasible
            if optimum is None or stage2 is None:
                assert torch.isnan(result.regret[i]), (trial, i)
                continue
            regret = optimum - stage2 if sense == "max" else stage2 - optimum
            assert result.regret[i].item() == pytest.approx(regret, abs=1e-6), (trial, i)
            assert result.regret[i].item() >= -1e-9
            checked += 1
    assert checked > 100


def test_bad_arguments_are_named():
    program = ilplayer.Program(lb=0, ub=1, sense="max")
    y1, c = torch.zeros(2, 3), torch.ones(3)
    with pytest.raises(ValueError, match="changes must be one of"):
        post_hoc_regret(program, y1, c, changes="remove")
    with pytest.raises(ValueError, match="penalty must be finite and non-negative"):
        post_hoc_regret(program, y1, c, penalty=-1.0)
    with pytest.raises(ValueError, match="drop_penalty must have shape"):
        post_hoc_regret(program, y1, c, drop_penalty=torch.ones(4))
    with pytest.raises(ValueError, match="y_stage1 must have shape"):
        post_hoc_regret(program, torch.zeros(3), c)
    with pytest.raises(ValueError, match="y_stage1 must be integral"):
        post_hoc_regret(program, torch.full((2, 3), 0.5), c)
    with pytest.raises(ValueError, match="c must have shape"):
        post_hoc_regret(program, y1, torch.ones(2, 4))
    with pytest.raises(ValueError, match="c: the true costs are needed"):
        post_hoc_regret(program, y1)
    with pytest.raises(ValueError, match="A and b must both be given"):
        post_hoc_regret(program, y1, c, A=torch.ones(1, 3))
    with pytest.raises(TypeError, match="program must be an ilplayer"):
        post_hoc_regret("knapsack", y1, c)


def test_two_stage_keeps_its_oracles_and_takes_known_optima():
    program = ilplayer.Program(A=[[1.0, 1.0, 1.0]], b=[2.0], lb=0, ub=1, sense="max")
    c = torch.tensor([[3.0, 2.0, 1.0], [1.0, 2.0, 5.0]])
    y1 = torch.tensor([[0.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    with ilplayer.metrics.two_stage.TwoStage(program, solver="highs", executor="serial") as stages:
        y_opt, status = stages.optimum(c)
        assert y_opt.tolist() == [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]] and status.tolist() == [0, 0]
        first = stages.score(y1, c, penalty=0.25)
        again = stages.score(y1, c, penalty=0.25, optimal=torch.tensor([5.0, 7.0]))
        assert (
            len(stages._oracles) == 2
        )  # the true optimum's and one Stage 2 (a 0-1 program keeps its size)
    assert torch.equal(first.regret, again.regret) and first.regret.tolist() == [0.5, 0.5]
    unsolved = post_hoc_regret(
        program, y1, c, optimal=torch.tensor([float("nan"), 7.0]), solver="highs"
    )
    assert unsolved.solved.tolist() == [False, True]
    assert unsolved.status.tolist() == [
        int(ilplayer.Status.INFEASIBLE),
        int(ilplayer.Status.OPTIMAL),
    ]


def test_a_mixed_integer_stage2_changes_a_continuous_variable_by_what_it_needs():
    # min 4 x + y (x continuous in [0, 10], y integer in [0, 10]) s.t. x + y >= 2.5; Stage 1
    # had x = 1.2, y = 1 (x inside its box: columns of its own for the units added)
    program = ilplayer.Program(
        A=[[-1.0, -1.0]], b=[-2.5], lb=0, ub=10, integrality=[0, 1], sense="min"
    )
    result = post_hoc_regret(
        program,
        torch.tensor([[1.2, 1.0]]),
        torch.tensor([4.0, 1.0]),
        penalty=0.5,
        changes="add",
        solver="highs",
    )
    # add 0.3 of x (x = 1.5: 6 + 1 + 0.15) rather than one y (4.8 + 2 + 0.5)
    assert result.stage2[0].tolist() == [pytest.approx(1.5), 1.0]
    assert result.value.item() == pytest.approx(7.15) and result.regret.item() == pytest.approx(
        4.15
    )
    assert result.optimal.item() == pytest.approx(3.0)  # y = 3, x = 0
