"""Starting constraints read off the data (ilplayer.learning.separation, TrainingConfig(init="separating"))."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer.learning.loop import initial_constraints
from ilplayer.learning.separation import box_optima, separating_hyperplanes
from ilplayer.learning.settings import TrainingConfig
from ilplayer.testing.instances import sample_random_constraints


def hidden_dense(seed: int, n: int = 6, m: int = 2, count: int = 300):
    """Two random constraints through the centre of [-3, 3]^n and their solved instances."""
    normals, offsets, origins = sample_random_constraints(
        m, n, -3, 3, generator=torch.Generator().manual_seed(seed), feasible_point=torch.zeros(n)
    )
    A, b = normals.numpy(), (offsets + (normals * origins).sum(-1)).numpy()
    c = np.random.default_rng(seed).normal(size=(count, n))
    y, status = ilplayer.solve(c, A, b, lb=-3, ub=3)
    assert (status == 0).all()
    return A, b, c, y


def test_separators_keep_every_observation_and_each_cuts_new_box_optima():
    A, b, c, y = hidden_dense(seed=0)
    normals, offsets = separating_hyperplanes(c, y, -3, 3, 4)
    assert 1 <= len(normals) <= 4
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0)
    reach = normals @ y.T
    assert (reach <= offsets[:, None] + 1e-9).all()  # no observed solution is cut off
    np.testing.assert_allclose(reach.max(axis=1), offsets)  # tight: some observation on each
    cut = normals @ box_optima(c, np.full(6, -3.0), np.full(6, 3.0)).T > offsets[:, None] + 1e-9
    for row in range(1, len(normals)):  # the greedy cover adds only rows that cut something new
        assert (cut[row] & ~cut[:row].any(axis=0)).any()
    # where many observations lie on a hidden facet, the separator is that facet
    cosines = (A / np.linalg.norm(A, axis=1, keepdims=True)) @ normals.T
    assert (cosines.max(axis=1) > 0.99).all(), cosines


def test_no_rows_when_every_observation_is_its_box_optimum():
    c = np.random.default_rng(1).normal(size=(20, 3))
    y = box_optima(c, np.zeros(3), np.ones(3))
    normals, offsets = separating_hyperplanes(c, y, 0, 1, 3)
    assert normals.shape == (0, 3) and offsets.shape == (0,)


@pytest.mark.parametrize("origin", ["learnable", "corner"])
def test_a_separating_start_keeps_every_training_solution_feasible(origin):
    A, b, c, y = hidden_dense(seed=0)
    config = TrainingConfig(init="separating", origin=origin)
    model = initial_constraints(
        config, 5, torch.as_tensor(c), torch.as_tensor(y, dtype=torch.float64), -3, 3, seed=0
    )
    learned_A, learned_b = model()
    assert learned_A.shape == (5, 6)
    slack = learned_b[:, None] - learned_A @ torch.as_tensor(y, dtype=torch.float64).T
    assert (slack >= -1e-9).all()
    np.testing.assert_allclose(
        slack.min(dim=1).values.detach().numpy(), 0.0, atol=1e-9
    )  # every row touches the data
    normals, _ = separating_hyperplanes(
        c, y, -3, 3, 5, seed=ilplayer.core.seeding.derive_seed(0, 2)
    )
    np.testing.assert_allclose(learned_A[: len(normals)].detach().numpy(), normals, atol=1e-12)


def test_an_unknown_init_is_refused_by_name():
    with pytest.raises(
        ValueError, match=r"init must be one of \['random', 'separating'\], got 'data'"
    ):
        TrainingConfig(init="data")


def test_the_default_start_is_separating_only_where_a_variable_takes_more_than_two_values(tmp_path):
    import json

    from ilplayer.cli.main import main
    from ilplayer.learning.defaults import default_init

    assert default_init(0, 1, 4) == "random"
    assert default_init(-5, 5, 4) == "separating"
    assert default_init([0, 0], [1, 2], 2) == "separating"
    A, b, c, y = hidden_dense(seed=0, count=120)
    np.savez(tmp_path / "train.npz", c=c, y=y)
    record = tmp_path / "record.json"
    for init, expected in (("auto", "separating"), ("random", "random")):
        assert (
            main(
                [
                    "learn",
                    str(tmp_path / "train.npz"),
                    "--lb",
                    "-3",
                    "--ub",
                    "3",
                    "--num-constraints",
                    "2",
                    "--epochs",
                    "1",
                    "--no-polish",
                    "--init",
                    init,
                    "--json",
                    str(record),
                ]
            )
            == 0
        )
        assert json.loads(record.read_text())["init"] == expected


def test_a_start_no_epoch_beats_on_the_validation_pairs_is_returned_untrained():
    from ilplayer.learning.learn import learn_constraints

    A, b, c, y = hidden_dense(seed=0, count=400)
    # steps far too large for a [-3, 3] box: every epoch lands worse than the separating start
    result = learn_constraints(
        c[:300],
        y[:300],
        -3,
        3,
        2,
        c_test=c[300:],
        y_test=y[300:],
        method="combopt",
        config=TrainingConfig(k=2, init="separating", epochs=2, lr=0.5),
        validation_fraction=0.25,
        polish=False,
        progress=False,
    )
    start, *epochs = result.history
    assert start["epoch"] == 0 and "loss" not in start and [r["epoch"] for r in epochs] == [1, 2]
    assert start["validation_accuracy"] > max(r["validation_accuracy"] for r in epochs)
    assert result.settings["selected_epoch"] == 0 and result.record()["epochs"] == 2
    assert result.test_accuracy == pytest.approx(start["accuracy"])  # the start's own constraints


def test_polish_also_polishes_the_separating_start_and_keeps_the_better_on_validation():
    from ilplayer.learning.learn import learn_constraints

    A, b, c, y = hidden_dense(seed=0, count=400)
    kwargs = dict(c_test=c[300:], y_test=y[300:], validation_fraction=0.25, progress=False)
    config = TrainingConfig(k=2, init="separating", epochs=2, lr=0.002)
    result = learn_constraints(
        c[:300], y[:300], -3, 3, 2, method="combopt", config=config, **kwargs
    )
    trained = max(result.history[1:], key=lambda r: (r["validation_accuracy"], -r["epoch"]))
    polished, other = result.settings["polish"], result.settings["polish"]["other"]
    assert {polished["epoch"], other["epoch"]} == {0, trained["epoch"]}
    assert result.settings["selected_epoch"] == polished["epoch"]
    score = lambda summary: summary["accuracy_after" if summary["kept"] else "accuracy_before"]
    assert score(polished) >= score(other)
    # the paper's random start is not a candidate
    random = learn_constraints(
        c[:300], y[:300], -3, 3, 2, method="combopt", config=config.replace(init="random"), **kwargs
    )
    assert "other" not in random.settings["polish"]


@pytest.mark.parametrize("start_score, kept_epoch", [(0.9, 0), (0.8, 5), (0.7, 5)])
def test_the_polished_start_replaces_the_polished_epoch_only_when_strictly_better(
    monkeypatch, start_score, kept_epoch
):
    import ilplayer.learning.selection as selection

    trained, start = object(), object()
    scores = {id(trained): 0.8, id(start): start_score}

    def polish_model(model, *args, **kwargs):
        return model, {
            "accuracy_before": 0.1,
            "accuracy_after": scores[id(model)],
            "kept": True,
            "rows_after": 2,
            "seconds": 0.0,
        }

    monkeypatch.setattr(selection, "polish_model", polish_model)
    model, summary = selection.polish_with_start(
        trained, 5, start, None, None, None, "learnable", False
    )
    assert summary["epoch"] == kept_epoch and model is (start if kept_epoch == 0 else trained)
    assert summary["other"]["epoch"] == 5 - kept_epoch
