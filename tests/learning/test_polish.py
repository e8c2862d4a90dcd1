"""Polishing learned constraints with the observations' certificates (ilplayer.learning.polish)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_separation import hidden_dense

import ilplayer
from ilplayer.learning.constraints import StaticConstraints
from ilplayer.learning.learn import learn_constraints
from ilplayer.learning.polish import infeasible_neighbours, polish_constraints
from ilplayer.learning.settings import TrainingConfig

LB, UB = np.full(6, -3.0), np.full(6, 3.0)


def test_every_certificate_is_in_the_box_cheaper_than_its_observation_and_infeasible():
    A, b, c, y = hidden_dense(seed=1)
    points = infeasible_neighbours(c, y, LB, UB)
    assert len(points) > 0
    assert ((points >= LB) & (points <= UB)).all()
    assert (points @ A.T > b + 1e-9).any(axis=1).all()  # each violates a hidden constraint
    observed = {row.tobytes() for row in y}
    assert not any(row.tobytes() in observed for row in points)


def accuracy_on(c, y):
    def accuracy(A, b):
        found, status = ilplayer.solve(c, A, b, lb=-3, ub=3)
        return float(((found == y).all(axis=1) & (status == 0)).mean())

    return accuracy


def test_polish_pins_down_perturbed_hidden_rows_and_drops_a_spare_one():
    A, b, c, y = hidden_dense(seed=0, count=400)
    unit = A / np.linalg.norm(A, axis=1, keepdims=True)
    rng = np.random.default_rng(0)
    rough = unit + rng.normal(scale=0.02, size=unit.shape)  # what training leaves: close, not exact
    rough_b = b / np.linalg.norm(A, axis=1) + 0.15
    spare = rng.normal(size=(1, 6))
    spare_b = (spare @ y.T).max(axis=1) - 0.5  # a spare row that cuts off a few observations
    A0, b0 = np.vstack([rough, spare]), np.r_[rough_b, spare_b]
    accuracy = accuracy_on(c, y)
    A1, b1, summary = polish_constraints(A0, b0, c, y, -3, 3, accuracy)
    assert (
        summary["rows_before"] == 3 and summary["rows_after"] == 2 and summary["rows_refitted"] >= 1
    )
    assert summary["train_accuracy"] == accuracy(A1, b1) > accuracy(A0, b0)
    assert summary["train_accuracy"] > 0.95
    np.testing.assert_allclose(np.linalg.norm(A1, axis=1), 1.0)
    assert (np.abs(unit @ A1.T).max(axis=1) > 0.999).all()


def test_rows_survive_unchanged_when_refitting_does_not_help():
    A, b, c, y = hidden_dense(seed=0)
    accuracy = accuracy_on(c, y)
    A1, b1, summary = polish_constraints(A, b, c, y, -3, 3, accuracy)
    assert summary["train_accuracy"] == 1.0 == accuracy(A, b)
    assert summary["rows_after"] == len(A)


def test_learn_reports_the_polish_and_can_skip_it():
    A, b, c, y = hidden_dense(seed=0, count=200)
    config = TrainingConfig(epochs=2, k=2)
    polished = learn_constraints(c, y, -3, 3, 2, method="combopt", config=config, progress=False)
    summary = polished.settings["polish"]
    assert summary["judged_on"] == "validation" and summary["rows_before"] == 4
    assert summary["accuracy_after"] >= summary["accuracy_before"] or not summary["kept"]
    assert polished.constraints()[0].shape[0] == (summary["rows_after"] if summary["kept"] else 4)
    plain = learn_constraints(
        c, y, -3, 3, 2, method="combopt", config=config, progress=False, polish=False
    )
    assert plain.settings["polish"] is None and plain.constraints()[0].shape == (4, 6)


@pytest.mark.parametrize("origin", ["learnable", "corner", "center"])
def test_constraints_from_rows_give_the_rows_back(origin):
    A = torch.tensor([[3.0, 4.0], [0.0, -2.0]])
    b = torch.tensor([5.0, 1.0])
    got_A, got_b = StaticConstraints.from_rows(A, b, lb=-2, ub=3, origin=origin)()
    torch.testing.assert_close(got_A, A / torch.tensor([[5.0], [2.0]]).to(got_A))
    torch.testing.assert_close(got_b, torch.tensor([1.0, 0.5], dtype=got_b.dtype))
