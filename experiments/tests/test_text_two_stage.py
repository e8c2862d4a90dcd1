"""``ilplayer experiment knapsack-2s`` and ``alloy``: their data (the knapsack from text, split
and reshaped), the scores of a perfect prediction, and each command's smallest case end to end
with every method."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from ilplayer.cli.main import main
from ilplayer.metrics.two_stage import TwoStage
from ilplayer_experiments import alloy
from ilplayer_experiments import knapsack_two_stage as ks

pytest.importorskip(
    "sentence_transformers", reason="the sentence model needs ilplayer-experiments[text]"
)
pytest.importorskip("sklearn", reason="the baselines need ilplayer-experiments[twostage]")


def test_the_true_numbers_score_zero_and_the_splits_part_the_instances():
    data = ks.load(30)
    train, test = ks.split(data, run=2, train=20, test=10)
    prices = torch.cat([train.prices, test.prices])
    assert sorted(map(tuple, prices.tolist())) == sorted(map(tuple, data.prices.tolist()))
    with TwoStage(ks.PROGRAM, "bruteforce") as stages:
        scores = ks.score(stages, torch.stack([test.prices, test.weights], -1), test, 100, 0.5)
        assert scores.mean == pytest.approx(0.0, abs=1e-9) and scores.infeasibility_rate == 0.0
        heavier = torch.stack(
            [test.prices, test.weights * 0.5], -1
        )  # halved sizes: packings too heavy
        assert ks.score(stages, heavier, test, 100, 0.5).infeasibility_rate > 0.5
    shapes = alloy.load(15)
    assert shapes.features.shape[:3] == (15, 2, 10) and shapes.prices.shape == (15, 10)
    assert ((shapes.concentration >= 0.15) & (shapes.concentration <= 0.35)).all()
    with TwoStage(alloy.program(), "highs") as stages:
        sigma = alloy.penalties(2.0, 15, np.random.default_rng(0))
        assert alloy.score(stages, shapes.concentration, shapes, sigma).mean == pytest.approx(
            0.0, abs=1e-6
        )
        assert alloy.score(stages, shapes.concentration * 1.2, shapes, sigma).mean > 0


def test_the_knapsack_command_scores_every_method(tmp_path):
    code = main(
        [
            "experiment",
            "knapsack-2s",
            "--runs",
            "1",
            "--train",
            "24",
            "--test",
            "12",
            "--capacities",
            "100",
            "--sigmas",
            "0.25",
            "--epochs",
            "1",
            "--out",
            str(tmp_path),
            "--methods",
            "ridge",
            "mse",
            "combopt",
            "post-hoc",
            "relaxed",
            "odece",
        ]
    )
    assert code == 0
    record = json.loads((tmp_path / "knapsack-2s.json").read_text())
    assert [row["method"] for row in record["summary"]] == [
        "ridge",
        "mse",
        "combopt",
        "post-hoc",
        "relaxed",
        "odece",
    ]
    for row in record["rows"]:
        assert row["post_hoc_regret"] >= -1e-9 and row["capacity"] == 100 and row["sigma"] == 0.25


def test_the_alloy_command_scores_every_method(tmp_path):
    code = main(
        [
            "experiment",
            "alloy",
            "--runs",
            "1",
            "--train",
            "12",
            "--test",
            "6",
            "--factors",
            "1",
            "--epochs",
            "1",
            "--out",
            str(tmp_path),
            "--methods",
            "ridge",
            "mse",
            "post-hoc",
            "relaxed",
            "odece",
        ]
    )
    assert code == 0
    record = json.loads((tmp_path / "alloy.json").read_text())
    assert [row["method"] for row in record["summary"]] == [
        "ridge",
        "mse",
        "post-hoc",
        "relaxed",
        "odece",
    ]
    assert all(row["post_hoc_regret"] >= -1e-6 for row in record["rows"])
    assert (tmp_path / "alloy.png").stat().st_size > 0  # the plot beside the record
    with pytest.raises(ValueError, match="needs whole units"):
        alloy.run_alloy(
            tmp_path, methods=("combopt",), runs=1, train=6, test=3, factors=(1.0,), epochs=1
        )


def test_a_benchmark_goes_on_from_the_runs_it_saved(tmp_path):
    from ilplayer_experiments.two_stage_models import resumed, save_runs

    path, settings = tmp_path / "record.json", {"task": "t", "capacities": (100, 150)}
    rows = [
        {
            "method": "ridge",
            "run": 0,
            "capacity": 100,
            "post_hoc_regret": 1.0,
            "infeasibility_rate": 0.5,
            "train_s": 2.0,
        }
    ]
    record = save_runs(path, settings, rows, ("capacity",))
    assert record["runs"] == 1 and record["summary"][0]["post_hoc_regret_mean"] == 1.0
    assert resumed(path, settings) == rows  # the tuple saved as a list still matches
    assert resumed(path, {**settings, "capacities": (100,)}) == []
    assert resumed(tmp_path / "none.json", settings) == []
