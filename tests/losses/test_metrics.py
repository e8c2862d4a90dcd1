"""Metrics: exact match, objective values and PyEPO's normalised regret, by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ilplayer.metrics import exact_match, objective, regret
from ilplayer.solvers import registry as plugins


def test_exact_match_counts_whole_rows():
    y = torch.tensor([[0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    assert exact_match(y, torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]])) == pytest.approx(
        2 / 3
    )


def test_objective_is_per_instance_and_takes_numpy():
    c = np.array([[1.0, -2.0], [3.0, 0.5]])
    assert objective(c, np.array([[1.0, 1.0], [0.0, 2.0]])).tolist() == [-1.0, 1.0]


def test_regret_min_and_max_normalised_as_pyepo():
    c = torch.tensor([[1.0, 2.0], [-3.0, 1.0]])
    y_opt = torch.tensor([[0.0, 0.0], [1.0, 0.0]])  # objectives 0 and -3
    y_pred = torch.tensor([[1.0, 0.0], [1.0, 0.0]])  # objectives 1 and -3: regrets 1 and 0
    assert regret(c, y_pred, y_opt) == pytest.approx(1 / (3 + 1e-7))
    assert regret(c, y_pred, y_opt, normalized=False) == pytest.approx(0.5)
    # maximising: the optimum has the larger objective, regret = optimum - predicted
    assert regret(c, y_opt, y_pred, sense="max", normalized=False) == pytest.approx(0.5)
    assert regret(c, y_opt, y_opt) == 0.0


def test_regret_refuses_bad_arguments_by_name():
    c = torch.ones(2, 3)
    with pytest.raises(ValueError, match="sense must be one of"):
        regret(c, c, c, sense="minimise")
    with pytest.raises(ValueError, match=r"c and y must have the same shape"):
        regret(c, torch.ones(2, 2), c)
    with pytest.raises(TypeError, match=r"y must be a torch\.Tensor or a numpy array"):
        objective(c, [[1, 2, 3]])


def test_preferred_backend_ranks_in_one_place(monkeypatch):
    assert plugins.preferred_backend(2**10) == "bruteforce"
    monkeypatch.setattr(plugins, "available_solvers", lambda: ["bruteforce", "scip", "highs"])
    assert plugins.preferred_backend(2**20) == "highs"  # the ranking, not the listing order
    assert plugins.preferred_backend() == "highs"
    monkeypatch.setattr(plugins, "available_solvers", lambda: ["bruteforce"])
    assert plugins.preferred_backend(2**4) == "bruteforce"
    with pytest.raises(RuntimeError, match="no MIP backend is installed"):
        plugins.preferred_backend(2**20)


def test_regret_takes_the_programs_sense_and_refuses_a_negative_regret():
    # A PyEPO knapsack (maximisation) scored with the default sense="min" gave -0.335, silently.
    import pytest

    import ilplayer
    from ilplayer.metrics import regret

    c = torch.tensor([[3.0, 1.0, 2.0]])
    y_opt, y_pred = (
        torch.tensor([[1.0, 0.0, 1.0]]),
        torch.tensor([[1.0, 1.0, 0.0]]),
    )  # max: 5 against 4
    program = ilplayer.Program(lb=0, ub=1, sense="max")
    assert regret(c, y_pred, y_opt, sense=program) == pytest.approx(1 / 5, abs=1e-6)
    assert regret(c, y_pred, y_opt, sense="max", normalized=False) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="pass sense='max'"):
        regret(c, y_pred, y_opt)
    assert regret(c, y_opt, y_opt) == 0.0
