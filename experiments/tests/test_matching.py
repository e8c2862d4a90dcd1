"""The keypoint-matching stand-in: generator invariants, the metric, the blackbox gradient and
a short training run of each method."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

from ilplayer_experiments import matching
from ilplayer_experiments.cache import CACHE_ENV


def test_pairs_are_permutations_of_the_same_keypoints_and_deterministic_by_seed():
    data = matching.make_dataset(5, 50, seed=3)
    assert (
        data.source.shape
        == data.target.shape
        == (50, 5, matching.SIGNAL_DIM + matching.NUISANCE_DIM)
    )
    y = data.y.reshape(50, 5, 5)
    assert torch.equal(y.sum(dim=1), torch.ones(50, 5)) and torch.equal(
        y.sum(dim=2), torch.ones(50, 5)
    )
    again = matching.make_dataset(5, 50, seed=3)
    assert torch.equal(data.source, again.source) and torch.equal(data.y, again.y)
    other = matching.make_dataset(5, 50, seed=4)
    assert not torch.equal(data.source, other.source)
    assert not torch.equal(data.source, matching.make_dataset(5, 50, split="test", seed=3).source)


def test_the_signal_subspace_identifies_the_matches_and_raw_descriptors_do_not():
    # matching on the generator's signal coordinates recovers most true matches (what a learned
    # backbone can reach); a raw cosine of the descriptors is drowned by the nuisance features
    data = matching.make_dataset(4, 500, split="test", seed=0)
    _, rotation = matching.world(0)

    def assignment_accuracy(source: torch.Tensor, target: torch.Tensor) -> float:
        s = torch.nn.functional.normalize(source, dim=-1)
        t = torch.nn.functional.normalize(target, dim=-1)
        y = matching.assign(-(s @ t.transpose(-1, -2)).flatten(1))
        return matching.matching_accuracy(y, data.y)

    signal = slice(0, matching.SIGNAL_DIM)
    oracle = assignment_accuracy(
        (data.source.double() @ rotation)[..., signal],
        (data.target.double() @ rotation)[..., signal],
    )
    raw = assignment_accuracy(data.source.double(), data.target.double())
    assert oracle > 0.8 and raw < 0.6


@pytest.mark.parametrize(
    "bad",
    [dict(p=1, num_pairs=5), dict(p=4, num_pairs=0), dict(p=4, num_pairs=5, split="validation")],
)
def test_bad_arguments_are_named(bad):
    with pytest.raises(
        ValueError, match=next(k for k in ("p", "num_pairs", "split") if k in str(bad))
    ):
        matching.make_dataset(**bad)


def test_accuracy_counts_a_row_only_when_it_is_exactly_the_true_match():
    target = torch.eye(3).flatten()[None]
    assert matching.matching_accuracy(target, target) == 1.0
    everything = torch.ones(1, 9)  # all true matches present, all rows wrong
    assert matching.matching_accuracy(everything, target) == 0.0
    one_row_off = torch.tensor([[0, 1, 0, 1, 0, 0, 0, 0, 1.0]])
    assert matching.matching_accuracy(one_row_off, target) == pytest.approx(1 / 3)


def test_blackbox_assignment_solves_and_its_gradient_points_to_a_better_assignment():
    c = torch.tensor([[0.0, 1.0, 1.0, 0.0]], requires_grad=True)  # picks the diagonal
    y = matching.BlackboxAssignment.apply(c, 10.0)
    assert torch.equal(y.detach(), torch.tensor([[1.0, 0.0, 0.0, 1.0]]))
    target = torch.tensor([[0.0, 1.0, 1.0, 0.0]])
    matching.hamming_loss(y, target).backward()
    # descent raises the cost of the wrong (diagonal) matches and lowers that of the right ones,
    # by (y - y_perturbed) / lambda
    assert torch.allclose(c.grad, torch.tensor([[-0.1, 0.1, 0.1, -0.1]]))


@pytest.mark.parametrize("method", ["combopt", "bbgm"])
def test_a_short_training_run_of_each_method_writes_a_record(method, tmp_path, monkeypatch):
    from ilplayer_experiments.runner import run_matching

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    record = run_matching(
        3,
        0,
        tmp_path,
        method=method,
        epochs=2,
        iterations=5,
        train_size=40,
        val_size=20,
        test_size=20,
    )
    saved = json.loads(
        next(tmp_path.glob(f"matching*{method if method != 'combopt' else 'p3'}*.json")).read_text()
    )
    assert saved["task"] == "matching" and saved["n"] == 9 and saved["m"] == 6
    assert len(saved["history"]) == 2 and 0.0 <= record["accuracy"] <= 1.0
    assert saved["best_epoch"] in (1, 2) and saved["solver"] == (
        "bruteforce" if method == "combopt" else "linear_sum_assignment"
    )


def test_combopt_learns_to_match_on_an_easy_instance_set():
    # few keypoints and enough steps: accuracy must rise well above the untrained backbone's
    train = matching.make_dataset(3, 400, seed=1)
    val = matching.make_dataset(3, 100, split="val", seed=1)
    test = matching.make_dataset(3, 200, split="test", seed=1)
    summary, history = matching.train_matching(
        train,
        val,
        test,
        method="combopt",
        epochs=3,
        iterations=150,
        lr=5e-3,
        backbone_lr=3e-3,
        seed=0,
    )
    assert summary["accuracy"] > summary["untrained_assignment_accuracy"] + 0.15


def test_matching_command_takes_hyper_parameter_overrides(tmp_path, monkeypatch, capsys):
    from ilplayer.cli.main import main

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    assert (
        main(
            [
                "experiment",
                "matching",
                "--p",
                "3",
                "--seeds",
                "0",
                "--epochs",
                "1",
                "--method",
                "bbgm",
                "--ablation",
                "iterations=3",
                "--ablation",
                "backbone_lr=1e-2",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    (path,) = tmp_path.glob("matching-bbgm-p3-seed0-*.json")
    record = json.loads(path.read_text())
    assert record["variant"] == {"backbone_lr": 0.01, "epochs": 1, "iterations": 3}
    assert record["hyperparameters"]["iterations"] == 3
    assert "matching synthetic p=3 bbgm seed 0" in capsys.readouterr().out


def test_a_time_limit_reaches_the_training_solves_and_the_history_counts_them():
    # the history and summary say which share of the instances the limit stopped: all of them
    # at a nanosecond, none at 5 s (p = 4 closes at once); enumeration takes no limit
    train = matching.make_dataset(4, 40, seed=1)
    val = matching.make_dataset(4, 20, split="val", seed=1)
    test = matching.make_dataset(4, 20, split="test", seed=1)
    for solver, limit, share in (
        ("highs", 1e-9, 1.0),
        ("highs", 5.0, 0.0),
        ("bruteforce", 1e-9, 0.0),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no incumbent at 1e-9: no gradient signal
            summary, history = matching.train_matching(
                train, val, test, epochs=2, iterations=3, seed=0, solver=solver, time_limit=limit
            )
        stopped = [[row["timed_out"], row["val_timed_out"]] for row in history]
        assert stopped == [[share, share]] * 2 and summary["timed_out"] == share, (solver, limit)
        assert 0.0 <= summary["accuracy"] <= 1.0
    # the test pairs once more at a longer limit: none stopped there
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary, _ = matching.train_matching(
            train,
            val,
            test,
            epochs=1,
            iterations=2,
            solver="highs",
            time_limit=1e-9,
            test_time_limit=5.0,
        )
    assert summary["timed_out"] == 1.0 and summary["longer_limit"]["timed_out"] == 0.0
    assert summary["longer_limit"]["time_limit"] == 5.0


def test_lr_decay_lowers_every_rate_after_each_epoch_and_the_history_says_the_rate():
    train = matching.make_dataset(3, 20, seed=2)
    val = matching.make_dataset(3, 10, split="val", seed=2)
    test = matching.make_dataset(3, 10, split="test", seed=2)
    _, history = matching.train_matching(
        train, val, test, epochs=3, iterations=2, lr=1e-2, lr_decay=0.5, solver="bruteforce"
    )
    assert [row["lr"] for row in history] == pytest.approx([1e-2, 5e-3, 2.5e-3])
    _, constant = matching.train_matching(
        train, val, test, epochs=2, iterations=2, lr=1e-2, solver="bruteforce"
    )
    assert [row["lr"] for row in constant] == [1e-2, 1e-2]
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match="lr_decay"):
            matching.train_matching(train, val, test, epochs=1, iterations=1, lr_decay=bad)
