"""Sudoku: the puzzle generator (unique solutions, proved by a MIP backend), the equalities found
in solved grids, and the rules learned from puzzles solving held-out ones on every backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from ilplayer import solve
from ilplayer.core.records import Status
from ilplayer.learning.defaults import LearnConfig
from ilplayer.learning.equalities import data_equalities, satisfied
from ilplayer.learning.ilploss_terms import ilp_loss_terms
from ilplayer.learning.learn import ILPLossConfig, learn_constraints
from ilplayer.solvers.registry import available_solvers
from ilplayer_experiments.sudoku import (
    count_solutions,
    decode,
    encode,
    make_puzzles,
    prove_unique,
    sudoku_rules,
)
from ilplayer_experiments.sudoku_runs import compare_rules, run_sudoku

MIP_BACKENDS = [
    name for name in ("highs", "gurobi", "scip", "cpsat") if name in available_solvers()
]


def same_row_space(A: np.ndarray, b: np.ndarray, R: np.ndarray, r: np.ndarray) -> bool:
    M, N = np.hstack([A, b[:, None]]), np.hstack([R, r[:, None]])
    rank = np.linalg.matrix_rank
    return rank(M) == rank(N) == rank(np.vstack([M, N]))


def test_the_search_finds_every_4x4_grid():
    # 288 solved 4x4 grids exist; the search that makes and checks the puzzles must find them all
    assert count_solutions(np.zeros((4, 4), dtype=int), limit=1000) == 288


@pytest.mark.parametrize("size", [4, 6, 9])
def test_puzzles_have_one_solution_and_keep_the_rules(size):
    puzzles = make_puzzles(size, 12, seed=3)
    rules, ones = sudoku_rules(size)
    assert rules.shape == (4 * size * size, size**3)
    y = puzzles.targets()
    assert np.allclose(y @ rules.T, ones)
    assert (decode(y, size) == puzzles.solutions).all()
    assert ((puzzles.givens == 0) | (puzzles.givens == puzzles.solutions)).all()
    for givens in puzzles.givens:
        assert count_solutions(givens) == 1
    assert prove_unique(puzzles).all()
    assert (make_puzzles(size, 12, seed=3).givens == puzzles.givens).all()  # seeded


def test_a_puzzle_with_two_solutions_is_not_proved_unique():
    puzzles = make_puzzles(4, 20, seed=1)
    givens = puzzles.givens.copy()
    for row in givens:  # drop one given from each: most then have several completions
        row.reshape(-1)[np.flatnonzero(row.reshape(-1))[0]] = 0
    several = np.array([count_solutions(g) > 1 for g in givens])
    assert several.any()
    proved = prove_unique(type(puzzles)(givens, puzzles.solutions))
    assert (proved == ~several).all()


def test_costs_are_minus_the_givens_one_hot():
    puzzles = make_puzzles(4, 3, seed=0)
    c = puzzles.costs()
    assert c.shape == (3, 64) and set(np.unique(c)) <= {-1.0, 0.0}
    assert (-c.sum(1) == puzzles.num_givens()).all()
    assert (encode(puzzles.solutions) == puzzles.targets()).all()


@pytest.mark.parametrize("size", [4, 6, 9])
def test_the_equalities_of_solved_grids_are_the_rules(size):
    puzzles = make_puzzles(size, {4: 200, 6: 600, 9: 1500}[size], seed=5)
    A, b = data_equalities(puzzles.targets())
    rules, ones = sudoku_rules(size)
    assert same_row_space(A, b, rules, ones)
    assert set(np.unique(A)) <= {
        -1.0,
        0.0,
        1.0,
    }  # snapped: integer rows a MIP backend takes as they are
    assert satisfied(A, b, puzzles.targets()).all()


def test_equalities_of_data_that_span_everything_are_none():
    y = np.random.default_rng(0).integers(0, 2, (100, 6)).astype(float)
    A, b = data_equalities(y)
    assert A.shape == (0, 6) and b.shape == (0,)
    y[:, 0] = 1.0  # a constant variable, and two that always sum to 1
    y[:, 2] = 1.0 - y[:, 1]
    A, b = data_equalities(y)
    assert same_row_space(
        A, b, np.array([[1.0, 0, 0, 0, 0, 0], [0, 1.0, 1.0, 0, 0, 0]]), np.array([1.0, 1.0])
    )
    with pytest.raises(ValueError, match="y must be a non-empty"):
        data_equalities(np.zeros(5))


@pytest.mark.parametrize("method", ["ilploss", "combopt"])
def test_learn_constraints_finds_the_rules_and_trains_nothing_more(method):
    train, test = make_puzzles(4, 300, seed=1), make_puzzles(4, 100, seed=2)
    result = learn_constraints(
        train.costs(),
        train.targets(),
        0,
        1,
        64,
        c_test=test.costs(),
        y_test=test.targets(),
        method=method,
        progress=False,
    )
    assert result.test_accuracy == 1.0
    assert result.settings["equalities"] == {
        "rows": 40,
        "found_on": "training pairs",
        "accuracy_alone": 1.0,
    }
    assert result.constraints()[0].shape == (0, 64)
    A_eq, b_eq = (t.numpy() for t in result.equalities())
    assert (
        compare_rules(4, A_eq, b_eq, *(t.numpy() for t in result.constraints()))["rules_implied"]
        == 64
    )
    assert "A_eq" in result.record()


@pytest.mark.parametrize("solver", MIP_BACKENDS)
def test_learned_rules_solve_held_out_puzzles_on_every_backend(solver):
    train, test = make_puzzles(6, 400, seed=1), make_puzzles(6, 30, seed=2)
    A_eq, b_eq = data_equalities(train.targets())
    y, status = solve(
        torch.as_tensor(test.costs()),
        None,
        None,
        0,
        1,
        solver=solver,
        A_eq=torch.as_tensor(A_eq),
        b_eq=torch.as_tensor(b_eq),
    )
    assert (status == Status.OPTIMAL).all()
    assert (decode(y.numpy(), 6) == test.solutions).all()


def test_a_coincidence_of_too_few_training_pairs_is_found_again_with_the_validation_pairs():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, (60, 5)).astype(float)
    y[:, 4] = 1.0 - y[:, 3]  # a rule
    c = -rng.random((60, 5))
    result = learn_constraints(
        c,
        y,
        0,
        1,
        1,
        method="combopt",
        config=LearnConfig(epochs=1),
        progress=False,
        test_fraction=0,
        validation_fraction=0.5,
        seed=0,
    )
    assert result.settings["equalities"]["rows"] == 1
    y[:, 0] = 0.0  # a variable held at 0 in the training half only: a coincidence, not a rule
    y[rng.permutation(60)[:30], 0] = 1.0
    kept = learn_constraints(
        c,
        y,
        0,
        1,
        1,
        method="combopt",
        config=LearnConfig(epochs=1),
        progress=False,
        test_fraction=0,
        validation_fraction=0.5,
        seed=0,
    )
    A_eq, b_eq = (t.numpy() for t in kept.equalities())
    assert satisfied(A_eq, b_eq, y).all()


def test_equalities_off_is_the_method_alone():
    train = make_puzzles(4, 100, seed=1)
    result = learn_constraints(
        train.costs(),
        train.targets(),
        0,
        1,
        8,
        method="ilploss",
        equalities=False,
        config=ILPLossConfig(epochs=1),
        progress=False,
    )
    assert result.equalities() is None and result.settings["equalities"] is None
    assert result.constraints()[0].shape[0] > 0


def test_known_equalities_take_candidates_out_of_play():
    y = torch.tensor([[1.0, 0.0, 0.0]])
    negatives = torch.tensor([[[0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]])
    c = torch.zeros(1, 3)
    A, b = torch.tensor([[0.0, 0.0, 1.0]]), torch.tensor([0.5])
    args = (A, b, c, y, negatives, torch.zeros(3), torch.ones(3), 0.1, 0.01, 0.01)
    assert ilp_loss_terms(*args)["in_play"] == 3
    one_hot = (torch.ones(1, 3), torch.ones(1))  # x0 + x1 + x2 = 1 keeps the first candidate only
    assert ilp_loss_terms(*args, A_eq=one_hot[0], b_eq=one_hot[1])["in_play"] == 1


def test_the_experiment_records_boards_cells_givens_and_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("ILPLAYER_CACHE", str(tmp_path / "cache"))
    record = run_sudoku(4, 0, tmp_path, sizes=(200, 20, 100), progress=False)
    assert record["board_accuracy"] == record["cell_accuracy"] == record["givens_kept"] == 1.0
    assert record["rules"]["rules_implied"] == record["rules"]["true_rules"] == 64
    assert record["data"]["unique_proved_by"] == "highs" and record["data"]["sizes"] == [
        200,
        20,
        100,
    ]
    assert (tmp_path / "sudoku-4x4-ilploss-equalities-seed0-train200.json").exists()


def test_the_command_writes_the_puzzles_for_ilplayer_learn(tmp_path, monkeypatch, capsys):
    from ilplayer.cli.main import main
    from ilplayer.learning.observations import load_solutions

    monkeypatch.setenv("ILPLAYER_CACHE", str(tmp_path / "cache"))
    assert (
        main(
            ["experiment", "sudoku", "--size", "4", "--train", "150", "--write-data", str(tmp_path)]
        )
        == 0
    )
    made = capsys.readouterr().err  # a bar while the puzzles are made and proved unique
    assert "4x4 puzzles" in made and "1250/1250" in made and "uniqueness (highs)" in made
    c, y, lb, ub = load_solutions(tmp_path / "sudoku-4x4-seed0-train.npz")
    assert c.shape == y.shape == (250, 64) and (lb, ub) == (
        0.0,
        1.0,
    )  # 150 training and 100 validation puzzles
    assert (
        main(["experiment", "sudoku", "--size", "4", "--train", "150", "--out", str(tmp_path)]) == 0
    )
    assert "sudoku 4x4 ilploss seed 0: boards" in capsys.readouterr().out


def test_ilplayer_learn_writes_the_equalities(tmp_path):
    puzzles = make_puzzles(4, 200, seed=4)
    np.savez(tmp_path / "sudoku.npz", c=puzzles.costs(), y=puzzles.targets())
    out = tmp_path / "rules.pt"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ilplayer",
            "learn",
            str(tmp_path / "sudoku.npz"),
            "--lb",
            "0",
            "--ub",
            "1",
            "--num-constraints",
            "64",
            "--method",
            "ilploss",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "equalities: 40 found on the training pairs, enough alone: nothing trained" in done.stdout
    )
    saved = torch.load(out, weights_only=False)
    assert saved["A"].shape == (0, 64) and saved["A_eq"].shape == (40, 64)


def test_the_committed_9x9_rules_solve_new_puzzles():
    done = subprocess.run(
        [sys.executable, "examples/solve_sudoku.py", "--puzzles", "3"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "3 of 3 boards right" in done.stdout
