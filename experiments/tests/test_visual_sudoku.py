"""Visual sudoku: the givens as handwritten digits, a CNN that learns through the layer only."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pytest.importorskip(
    "mlxtend",
    reason="visual sudoku needs the vision extra: pip install 'ilplayer-experiments[vision]'",
)

from ilplayer.learning.equalities import data_equalities
from ilplayer_experiments import visual_sudoku as visual
from ilplayer_experiments.sudoku import make_puzzles, sudoku_rules
from ilplayer_experiments.sudoku_runs import run_visual_sudoku


@pytest.fixture(scope="module")
def pools():
    return visual.digit_pools(0, size=4)


def test_test_images_are_never_training_images(pools):
    train = pools.train_images.reshape(len(pools.train_images), -1)
    test = pools.test_images.reshape(len(pools.test_images), -1)
    assert len(pools.test_labels) == 4 * 100 and len(pools.train_labels) == 4 * 400
    assert set(np.unique(pools.train_labels)) == set(np.unique(pools.test_labels)) == {1, 2, 3, 4}
    shared = (train[:, None, :] == test[None, :, :]).all(-1)
    assert not shared.any()


def test_every_given_shows_an_image_of_its_digit(pools):
    puzzles = make_puzzles(4, 30, seed=1)
    shown = visual.attach_images(puzzles, pools.test_labels, seed=0)
    given = puzzles.givens > 0
    assert ((shown.image_index >= 0) == given).all()
    assert (pools.test_labels[shown.image_index[given]] == puzzles.givens[given]).all()


def test_costs_are_minus_log_probabilities_on_the_givens_only(pools):
    puzzles = make_puzzles(4, 5, seed=2)
    shown = visual.attach_images(puzzles, pools.train_labels, seed=0)
    torch.manual_seed(0)
    net = visual.DigitNet(4)
    costs, read = visual.image_costs(net, shown, pools.train_images)
    cells = costs.reshape(5, 16, 4)
    given = torch.as_tensor(puzzles.givens.reshape(5, 16) > 0)
    assert (cells[~given] == 0).all()
    assert torch.allclose(
        torch.exp(-cells[given]).sum(-1), torch.ones(int(given.sum()), dtype=torch.float64)
    )
    assert read.shape == (int(given.sum()),) and set(read.tolist()) <= {1, 2, 3, 4}


@pytest.mark.parametrize("method", visual.METHODS)
def test_the_cnn_learns_the_digits_through_the_layer_alone(pools, method):
    """No digit label reaches the CNN: only the solved grid, through the layer. After one pass
    over 240 puzzles it reads held-out images far above chance (1/4) and the rules solve most
    held-out boards."""
    puzzles = make_puzzles(4, 300, seed=3)
    A_eq, b_eq = data_equalities(puzzles.targets()[:260])
    train = visual.attach_images(puzzles[:240], pools.train_labels, seed=1)
    validation = visual.attach_images(puzzles[240:260], pools.train_labels, seed=2)
    test = visual.attach_images(puzzles[260:], pools.test_labels, seed=3)
    config = visual.VisualConfig(epochs=1, batch_size=8, validate_every=10)
    untrained = visual.evaluate_visual(visual.DigitNet(4), test, pools.test_images, A_eq, b_eq)
    net, history = visual.train_visual(
        train, validation, pools, A_eq, b_eq, method=method, config=config, progress=False
    )
    assert [h["step"] for h in history] == [10, 20, 30]
    scores = visual.evaluate_visual(net, test, pools.test_images, A_eq, b_eq)
    assert scores["digit_accuracy"] > 0.8 > untrained["digit_accuracy"] + 0.2
    assert scores["board_accuracy"] >= scores["classifier_ceiling"] - 0.05
    assert scores["statuses"] == {"OPTIMAL": 40}


def test_ilploss_is_refused_by_name_for_visual_sudoku(tmp_path):
    with pytest.raises(ValueError, match=r"method must be one of .*got 'ilploss'"):
        run_visual_sudoku(4, 0, tmp_path, method="ilploss")


def test_the_visual_record_separates_the_classifier_from_the_boards(tmp_path, monkeypatch, capsys):
    from ilplayer.cli.main import main

    monkeypatch.setenv("ILPLAYER_CACHE", str(tmp_path / "cache"))
    assert (
        main(
            [
                "experiment",
                "sudoku",
                "--size",
                "4",
                "--visual",
                "--train",
                "80",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    assert "visual sudoku 4x4 combopt seed 0: boards" in capsys.readouterr().out
    record = json.loads((tmp_path / "sudoku-4x4-visual-combopt-seed0-train80.json").read_text())
    for key in (
        "board_accuracy",
        "cell_accuracy",
        "digit_accuracy",
        "classifier_ceiling",
        "givens_kept",
    ):
        assert 0.0 <= record[key] <= 1.0
    assert record["rules"]["rules_implied"] == len(sudoku_rules(4)[0])
    assert record["data"]["test_images"] == 400 and record["method"] == "combopt"


def test_the_docs_example_runs_as_written(capsys):
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "sudoku.md").read_text()
    section = page.split("## Visual sudoku", 1)[1]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(snippet, "docs/sudoku.md", "exec"), {})
    assert capsys.readouterr().out.startswith("boards ")
