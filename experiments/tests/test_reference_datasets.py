"""scripts/reference_datasets.py: data made the CombOptNet reference code's way, for `ilplayer
learn` to meet data that ilplayer's own generators did not make."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import ilplayer

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "reference_datasets.py"


def make(tmp_path: Path, *args: str) -> dict[str, dict[str, np.ndarray]]:
    out = tmp_path / "data"
    subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return {name: dict(np.load(out / f"{name}.npz")) for name in ("train", "test", "hidden")}


@pytest.mark.parametrize(
    "args, lb, ub",
    [
        (("rc", "--box", "binary", "--m", "2", "--seed", "3"), 0, 1),
        (("wsc", "--m", "4", "--seed", "1"), 0, 1),
    ],
)
def test_labels_are_the_optima_of_the_hidden_constraints(tmp_path, args, lb, ub):
    data = make(tmp_path, *args)
    train, test, hidden = data["train"], data["test"], data["hidden"]
    assert len(train["c"]) == 1600 and len(test["c"]) == 1000
    assert int(train["lb"]) == lb and int(train["ub"]) == ub
    c = torch.from_numpy(np.concatenate([train["c"], test["c"]]))
    y, status = ilplayer.solve(
        c, torch.from_numpy(hidden["A"]), torch.from_numpy(hidden["b"]), lb, ub, solver="bruteforce"
    )
    assert bool((status == ilplayer.Status.OPTIMAL).all())
    labels = np.concatenate([train["y"], test["y"]])
    assert np.array_equal(y.numpy(), labels)  # every label is the (unique) optimum


def test_set_cover_families_follow_the_reference_rule_and_costs_are_positive(tmp_path):
    data = make(tmp_path, "wsc", "--m", "6", "--seed", "0")
    incidence = -data["hidden"]["A"]
    assert incidence.shape == (6, 12) and incidence.sum(axis=0).max() <= 3
    assert incidence.sum(axis=1).min() >= 2  # every element in two subsets or more
    assert len({tuple(column) for column in incidence.T}) == 12
    assert (data["train"]["c"] > 0).all()


def test_random_constraint_costs_are_signed_unless_asked_positive(tmp_path):
    signed = make(tmp_path, "rc", "--box", "binary", "--m", "1", "--seed", "0")
    assert (signed["train"]["c"] < 0).any() and np.abs(signed["train"]["c"]).max() <= 1.0
    positive = make(
        tmp_path, "rc", "--box", "binary", "--m", "1", "--seed", "0", "--positive-costs"
    )
    assert np.array_equal(positive["train"]["c"], np.abs(signed["train"]["c"]))
