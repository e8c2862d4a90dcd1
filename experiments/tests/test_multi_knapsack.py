"""``ilplayer experiment mkp``: the generated multidimensional knapsack (seeded, positive sizes)
and the command's smallest case end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ilplayer.cli.main import main
from ilplayer_experiments import multi_knapsack as mkp


def test_the_multidimensional_knapsack_is_seeded_and_its_command_scores_every_method(tmp_path):
    first, again = mkp.generate(20, 10, seed=3), mkp.generate(20, 10, seed=3)
    assert np.array_equal(first.sizes_test, again.sizes_test) and first.sizes_train.shape == (
        20,
        3,
        50,
    )
    assert (first.sizes_train >= 1.0).all() and first.capacity.shape == (3,)
    code = main(
        [
            "experiment",
            "mkp",
            "--methods",
            "ridge",
            "combopt",
            "post-hoc",
            "relaxed",
            "odece",
            "--train",
            "12",
            "--test",
            "6",
            "--out",
            str(tmp_path),
        ]
        + [
            arg
            for name in ("combopt", "post-hoc", "relaxed", "odece")
            for arg in ("--epochs", f"{name}=1")
        ]
    )
    assert code == 0
    record = json.loads((tmp_path / "mkp-seed0.json").read_text())
    assert [row["method"] for row in record["rows"]] == [
        "ridge",
        "combopt",
        "post-hoc",
        "relaxed",
        "odece",
    ]
    for row in record["rows"]:
        assert row["post_hoc_regret"] >= -1e-9 and 0.0 <= row["infeasibility_rate"] <= 1.0


def test_runs_over_seeds_keep_what_a_record_holds_and_summarise(tmp_path, monkeypatch):
    small = dict(methods=("ridge", "knn"), train=12, test=6, report=lambda line: None)
    mkp.run_mkp(tmp_path, seed=1, **{**small, "methods": ("ridge",)})
    asked = []
    predict = mkp._predict
    monkeypatch.setattr(
        mkp, "_predict", lambda method, *a: (asked.append((method, a[-1])), predict(method, *a))[1]
    )
    record = mkp.run_mkp_seeds(tmp_path, runs=2, first_seed=1, **small)
    assert asked == [("knn", 1), ("ridge", 2), ("knn", 2)]  # seed 1's ridge was kept
    assert record["seeds"] == [1, 2] and [row["method"] for row in record["summary"]] == [
        "ridge",
        "knn",
    ]
    saved = json.loads((tmp_path / "mkp-seeds.json").read_text())
    ridge = [
        row["post_hoc_regret"]
        for seed in (1, 2)
        for row in json.loads((tmp_path / f"mkp-seed{seed}.json").read_text())["rows"]
        if row["method"] == "ridge"
    ]
    assert saved["summary"][0]["runs"] == 2
    assert saved["summary"][0]["post_hoc_regret_mean"] == pytest.approx(np.mean(ridge))


def test_the_capacity_variant_is_seeded_and_its_command_scores_every_method(tmp_path):
    from ilplayer_experiments import knapsack_capacities as caps

    first, again = caps.generate(30, seed=2), caps.generate(30, seed=2)
    assert np.array_equal(first.capacity, again.capacity) and first.capacity.shape == (30, 3)
    assert (first.capacity > 0).all() and (first.capacity <= caps.ITEMS / 2).all()
    code = main(
        [
            "experiment",
            "mkp",
            "--predict",
            "capacities",
            "--methods",
            "ridge",
            "combopt",
            "relaxed",
            "odece",
            "--train",
            "12",
            "--test",
            "6",
            "--out",
            str(tmp_path),
        ]
        + [arg for name in ("combopt", "relaxed", "odece") for arg in ("--epochs", f"{name}=1")]
    )
    assert code == 0
    record = json.loads((tmp_path / "mkp-capacities-seed0.json").read_text())
    assert [row["method"] for row in record["rows"]] == ["ridge", "combopt", "relaxed", "odece"]
    assert all(row["post_hoc_regret"] >= -1e-9 for row in record["rows"])
