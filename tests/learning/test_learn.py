"""ilplayer learn: constraints from the user's own (cost, solution) pairs, with clear errors."""

from __future__ import annotations

import argparse
import itertools
import json
import warnings

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer.cli.main import main
from ilplayer.learning.defaults import LEARN_K, LearnConfig
from ilplayer.learning.learn import DataWarning, check_solutions, learn_constraints, load_solutions
from ilplayer.learning.settings import TrainingConfig


def observations(count: int, n: int = 6, seed: int = 0, lb=0, ub=1):
    """Costs and the solutions of a hidden budget row, solved exactly."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(0.2, 1.0, (1, n))
    b = np.array([0.4 * A.sum()])
    c = -rng.uniform(0.0, 1.0, (count, n))
    y, status = ilplayer.solve(c, A, b, lb=lb, ub=ub)
    assert (status == 0).all()
    return c, y


def test_learns_a_hidden_budget_from_observations_beyond_the_box_baseline():
    c, y = observations(400)
    box_optimum = (c < 0).astype(float)
    baseline = (box_optimum[300:] == y[300:]).all(1).mean()
    result = learn_constraints(
        c[:300],
        y[:300],
        0,
        1,
        1,
        c_test=c[300:],
        y_test=y[300:],
        method="combopt",
        config=TrainingConfig(epochs=15, lr=5e-3),
        progress=False,
    )
    assert result.test_accuracy > baseline + 0.3, (result.test_accuracy, baseline)
    assert [r["epoch"] for r in result.history] == list(range(16))  # the start, then 15 epochs
    assert result.settings["solver"] == "bruteforce" and result.record()["epochs"] == 15
    A, b = result.constraints()
    assert A.shape == (1, 6) and b.shape == (1,)


def test_per_variable_bounds_are_learned_on_their_own_box():
    lb, ub = np.array([0, 0, -1, 0]), np.array([1, 2, 1, 3])
    c, y = observations(120, n=4, lb=lb, ub=ub)
    result = learn_constraints(
        c, y, lb, ub, 1, method="combopt", config=TrainingConfig(epochs=2), progress=False
    )
    assert 0.0 <= result.test_accuracy <= 1.0 and result.settings["lb"] == [0, 0, -1, 0]


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"c": np.zeros((3, 2))}, r"missing array\(s\) \['y'\]"),
        (
            {"c": np.zeros((3, 2)), "y": np.zeros((3, 3))},
            r"c \(3, 2\) and y \(3, 3\) must have the same shape",
        ),
        ({"c": np.zeros(3), "y": np.zeros(3)}, r"c must have shape \(N, n\)"),
        (
            {"c": np.zeros((3, 2)), "y": np.full((3, 2), 0.5)},
            r"y must be integer; 6 entries are not, first y\[0, 0\] = 0\.5",
        ),
        ({"c": np.zeros((3, 2)), "y": np.full((3, 2), 2.0)}, r"3 solutions lie outside the box"),
        (
            {"c": np.full((3, 2), np.nan), "y": np.zeros((3, 2))},
            r"c must be finite; 6 entries are not, first c\[0, 0\] = nan",
        ),
        (
            {"c": np.zeros((3, 2)), "y": np.array([[0, 1], [1, np.nan], [0, 0]])},
            r"y must be finite; 1 entries are not, first y\[1, 1\] = nan",
        ),
        ({"c": np.zeros((1, 2)), "y": np.zeros((1, 2))}, r"at least 2 observations are needed"),
    ],
)
def test_malformed_files_are_refused_by_name(tmp_path, arrays, message):
    path = tmp_path / "data.npz"
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=message):
        load_solutions(path, 0, 1)


def test_the_box_comes_from_the_file_or_must_be_given(tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, c=np.zeros((2, 2)), y=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="the box is unknown; pass --lb and --ub"):
        load_solutions(path)
    np.savez(path, c=np.zeros((2, 2)), y=np.ones((2, 2)), lb=np.zeros(2), ub=np.array([1, 3]))
    _, _, lb, ub = load_solutions(path)
    assert lb.tolist() == [0, 0] and ub.tolist() == [1, 3]


def test_csv_with_c_and_y_columns(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("c0,c1,y0,y1\n-1.0,0.5,1,0\n0.2,-0.3,0,1\n")
    c, y, _, _ = load_solutions(path, 0, 1)
    assert c.tolist() == [[-1.0, 0.5], [0.2, -0.3]] and y.tolist() == [[1, 0], [0, 1]]
    path.write_text("a,b\n1,2\n3,4\n")
    with pytest.raises(ValueError, match="a CSV needs a header with columns c0"):
        load_solutions(path, 0, 1)


def test_observations_without_signal_or_with_contradictions_warn():
    c = np.array([[-1.0, 1.0], [1.0, -1.0]])
    with pytest.warns(DataWarning, match="every y is the box optimum"):
        check_solutions(c, np.array([[1.0, 0.0], [0.0, 1.0]]), 0, 1)
    # Zero costs leave the box's optimum a tie, which the constraints break (a sudoku's empty
    # cells): there is something to learn.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (
            check_solutions(
                np.array([[-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]),
                np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]),
                0,
                1,
            )
            == []
        )
    c = np.array([[-1.0, -1.0], [-1.0, -1.0], [0.5, -1.0]])
    y = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_solutions(c, y, 0, 1) == []  # one c, two solutions that tie: consistent
    c[
        1, 0
    ] = -1.5  # row 1's y = (0, 1) costs -1, row 0's y = (1, 0) only -1.5: row 1 is not optimal
    with pytest.warns(
        DataWarning,
        match=r"1 observations have a y that another observed y beats "
        r"under their own c \(first: row 1, beaten by row 0 by 0.5",
    ):
        check_solutions(c, y, 0, 1)


@pytest.mark.parametrize("seed", range(3))
def test_solutions_of_one_constraint_set_are_never_beaten_by_each_other(seed):
    """Exact optima of one constraint set (enumerated) pass; one observation replaced by a
    worse feasible point is caught, with its row."""
    rng = np.random.default_rng(seed)
    points = np.array(list(itertools.product(range(-2, 3), repeat=4)), dtype=float)
    A, b = rng.normal(size=(3, 4)), rng.uniform(1, 3, 3)
    feasible = points[(points @ A.T <= b).all(axis=1)]
    c = rng.normal(size=(200, 4))
    y = feasible[(c @ feasible.T).argmin(axis=1)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_solutions(c, y, -2, 2) == []
    costs = c[17] @ feasible.T
    y[17] = feasible[np.argsort(costs)[len(costs) // 2]]  # a feasible point, far from optimal
    assert (c[17] @ y.T < c[17] @ y[17] - 1e-6).any()  # another observation's optimum beats it
    with pytest.warns(
        DataWarning, match=r"1 observations have a y that another observed y beats.*first: row 17"
    ):
        check_solutions(c, y, -2, 2)


def test_many_observations_are_checked_on_a_fixed_sample(monkeypatch):
    import ilplayer.learning.observations

    c = np.full((10, 2), -1.0)
    y = np.zeros((10, 2))
    y[0] = [1.0, 1.0]  # the only optimum: it beats every other row
    monkeypatch.setattr(
        ilplayer.learning.observations, "CHECK_PRODUCTS", 10
    )  # 2 distinct y: 5 rows of 10
    rows = ilplayer.learning.observations._rows_to_check(10, 2)
    assert (
        len(rows) == 5 and (rows == ilplayer.learning.observations._rows_to_check(10, 2)).all()
    )  # fixed
    beaten = int((rows != 0).sum())
    with pytest.warns(DataWarning, match=rf"^{beaten} \(of 5 checked\) observations"):
        check_solutions(c, y, 0, 1)


def test_the_default_method_trains_both_and_keeps_the_better_on_the_validation_pairs(
    tmp_path, capsys
):
    c, y = observations(80)
    np.savez(tmp_path / "train.npz", c=c, y=y)
    record = tmp_path / "record.json"
    assert (
        main(
            [
                "learn",
                str(tmp_path / "train.npz"),
                "--lb",
                "0",
                "--ub",
                "1",
                "--num-constraints",
                "1",
                "--epochs",
                "3",
                "--json",
                str(record),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "4 constraints with ilploss and 2 with combopt" in out
        and "auto: validation accuracy" in out
    )
    saved = json.loads(record.read_text())
    auto = saved["auto"]
    assert auto["judged_on"] == "validation" and saved["method"] == auto["kept"]
    assert auto[f"{auto['kept']}_accuracy"] == saved["validation_accuracy"]
    other = "combopt" if auto["kept"] == "ilploss" else "ilploss"
    assert auto[f"{auto['kept']}_accuracy"] >= auto[f"{other}_accuracy"]
    assert saved["k"] == (4 if auto["kept"] == "ilploss" else 2)


def test_learn_command_writes_a_record_and_the_model(tmp_path, capsys):
    c, y = observations(60)
    np.savez(tmp_path / "train.npz", c=c[:40], y=y[:40])
    np.savez(tmp_path / "test.npz", c=c[40:], y=y[40:])
    record, model = tmp_path / "record.json", tmp_path / "model.pt"
    assert (
        main(
            [
                "learn",
                str(tmp_path / "train.npz"),
                "--test",
                str(tmp_path / "test.npz"),
                "--lb",
                "0",
                "--ub",
                "1",
                "--num-constraints",
                "1",
                "--epochs",
                "2",
                "--seed",
                "3",
                "--method",
                "combopt",
                "--json",
                str(record),
                "--out",
                str(model),
            ]
        )
        == 0
    )
    saved = json.loads(record.read_text())
    for key in ("test_accuracy", "train_accuracy", "epochs", "seed", "wall_time_s", "lr", "solver"):
        assert key in saved
    assert saved["epochs"] == 2 and saved["seed"] == 3 and saved["test_size"] == 20
    weights = torch.load(model, weights_only=True)
    polish = saved["polish"]  # 2 x --num-constraints trained, fewer if the polish dropped some
    assert polish["rows_before"] == 2
    assert weights["A"].shape == (polish["rows_after"] if polish["kept"] else 2, 6)
    assert "held out" in capsys.readouterr().out
    # without --test a share of the training file is held out
    assert (
        main(
            [
                "learn",
                str(tmp_path / "train.npz"),
                "--lb",
                "0",
                "--ub",
                "1",
                "--num-constraints",
                "1",
                "--epochs",
                "1",
                "--restarts",
                "2",
                "--json",
                str(record),
            ]
        )
        == 0
    )
    assert "holding out 8 of 40 observations" in capsys.readouterr().out
    assert len(json.loads(record.read_text())["restart_validation_accuracies"]) == 2


def test_the_library_and_the_command_learn_the_same_model_with_one_set_of_defaults(
    tmp_path, capsys
):
    c, y = observations(50, n=5, seed=4)
    np.savez(tmp_path / "data.npz", c=c, y=y)
    model = tmp_path / "model.pt"
    assert (
        main(
            [
                "learn",
                str(tmp_path / "data.npz"),
                "--lb",
                "0",
                "--ub",
                "1",
                "--num-constraints",
                "2",
                "--epochs",
                "2",
                "--seed",
                "5",
                "--restart-workers",
                "1",
                "--out",
                str(model),
            ]
        )
        == 0
    )
    saved = torch.load(model, weights_only=True)
    result = learn_constraints(
        c, y, 0, 1, 2, method="combopt", config=LearnConfig(epochs=2), seed=5, progress=False
    )
    A, b = result.constraints()
    assert torch.equal(A, saved["A"]) and torch.equal(b, saved["b"])
    assert result.settings["k"] == LEARN_K and result.settings["test_size"] == 10  # 0.2 held out
    assert result.settings["test_on"].startswith("10 pairs held out")
    # one field set keeps learn's other defaults; a plain TrainingConfig is the paper's
    assert LearnConfig(epochs=1).k == LEARN_K and LearnConfig(epochs=1).init == "auto"
    paper = learn_constraints(
        c,
        y,
        0,
        1,
        2,
        method="combopt",
        config=TrainingConfig(epochs=1),
        progress=False,
        polish=False,
    )
    assert paper.settings["k"] == 1 and paper.settings["init"] == "random"
    on_train = learn_constraints(
        c,
        y,
        0,
        1,
        1,
        method="combopt",
        config=LearnConfig(epochs=1),
        test_fraction=0,
        progress=False,
    )
    assert on_train.settings["test_on"].startswith("the training pairs")
    with pytest.raises(ValueError, match="test_fraction must be a number in"):
        learn_constraints(c, y, 0, 1, 1, test_fraction=1.5)


@pytest.mark.parametrize(
    "write, message",
    [
        (lambda path: np.savez(path, c=np.zeros((3, 2))), "missing array(s) ['y']"),
        (
            lambda path: np.savez(
                path, c=np.zeros((3, 2)), y=np.array([[0, 1], [1, np.nan], [0, 0]])
            ),
            "y must be finite; 1 entries are not, first y[1, 1] = nan",
        ),
        (lambda path: path.write_bytes(b"not a zip archive"), "cannot be read"),
        (lambda path: None, "no such file"),
    ],
)
def test_learn_command_reports_a_bad_file_in_one_line_with_exit_2(tmp_path, capsys, write, message):
    path = tmp_path / "bad.npz"
    write(path)
    assert main(["learn", str(path), "--lb", "0", "--ub", "1", "--num-constraints", "1"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_model_of_the_best_validation_epoch_is_returned():
    c, y = observations(240, seed=1)
    result = learn_constraints(
        c[:200],
        y[:200],
        0,
        1,
        1,
        c_test=c[200:],
        y_test=y[200:],
        method="combopt",
        config=TrainingConfig(epochs=6, lr=2e-2),
        progress=False,
        validation_fraction=0.25,
    )
    start, *epochs = result.history  # the start's record, then one per epoch
    assert start["epoch"] == 0 and [r["epoch"] for r in epochs] == list(range(1, 7))
    scores = [record["validation_accuracy"] for record in epochs]
    chosen = result.settings["selected_epoch"]  # a random start never competes: a trained epoch
    assert scores[chosen - 1] == max(scores) and scores.index(max(scores)) == chosen - 1
    assert result.settings["validation_size"] == 50 and result.settings["train_size"] == 150
    # the returned model is that epoch's: its held-out accuracy is the one recorded then
    assert result.test_accuracy == pytest.approx(
        result.history[chosen]["accuracy"]
    )  # history[0]: the start
    last = learn_constraints(
        c[:200],
        y[:200],
        0,
        1,
        1,
        c_test=c[200:],
        y_test=y[200:],
        method="combopt",
        config=TrainingConfig(epochs=6, lr=2e-2),
        progress=False,
        validation_fraction=0,
    )
    assert last.settings["selected_epoch"] == 6 and "validation_accuracy" not in last.history[0]


def test_restarts_keep_the_run_best_on_the_validation_split():
    c, y = observations(240, seed=2)
    kwargs = dict(
        c_test=c[200:],
        y_test=y[200:],
        method="combopt",
        config=TrainingConfig(epochs=3, lr=2e-2),
        progress=False,
        validation_fraction=0.25,
    )
    one = learn_constraints(c[:200], y[:200], 0, 1, 1, **kwargs)
    three = learn_constraints(c[:200], y[:200], 0, 1, 1, restarts=3, **kwargs)
    scores = three.settings["restart_validation_accuracies"]
    kept = three.settings["selected_restart"]
    assert len(scores) == 3 and scores[kept] == max(scores) and scores.index(max(scores)) == kept
    assert scores[0] == pytest.approx(
        max(r["validation_accuracy"] for r in one.history)
    )  # restart 0 = seed
    assert len(three.history) == 1 + 3 and three.settings["restarts"] == 3
    with pytest.raises(ValueError, match="restarts"):
        learn_constraints(c, y, 0, 1, 1, restarts=0, progress=False)
    with pytest.raises(ValueError, match="validation"):
        learn_constraints(c, y, 0, 1, 1, restarts=2, validation_fraction=0, progress=False)


def test_learn_command_names_the_file_and_row_of_a_beaten_observation(tmp_path, capsys):
    c, y = observations(40)
    c, y = c.copy(), np.asarray(y).copy()
    worse = int(np.argmax(c[30] @ y.T))  # the observed y that costs most under c[30]
    assert c[30] @ y[worse] > c[30] @ y[30] + 1e-3
    c[35], y[35] = c[30], y[worse]  # row 5 of the test file: row 30's costs, a worse answer
    np.savez(tmp_path / "train.npz", c=c[:30], y=y[:30])
    np.savez(tmp_path / "test.npz", c=c[30:], y=y[30:])
    assert (
        main(
            [
                "learn",
                str(tmp_path / "train.npz"),
                "--test",
                str(tmp_path / "test.npz"),
                "--lb",
                "0",
                "--ub",
                "1",
                "--num-constraints",
                "1",
                "--epochs",
                "1",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert (
        f"1 observations have a y that another observed y beats under their own c (first: "
        f"{tmp_path / 'test.npz'} row 5, beaten by {tmp_path}"
    ) in err  # a row of y[30]'s value


def test_a_sparser_held_out_curve_learns_the_same_model():
    c, y = observations(120, seed=3)
    kwargs = dict(
        c_test=c[100:],
        y_test=y[100:],
        method="combopt",
        config=TrainingConfig(epochs=7, lr=2e-2),
        progress=False,
    )
    every = learn_constraints(c[:100], y[:100], 0, 1, 1, **kwargs)
    sparse = learn_constraints(c[:100], y[:100], 0, 1, 1, test_every=3, **kwargs)
    assert [r["epoch"] for r in sparse.history if "accuracy" in r] == [
        0,
        3,
        6,
        7,
    ]  # the start, the last
    assert all("validation_accuracy" in r for r in sparse.history)
    for name in ("normals", "offsets", "origins"):
        assert torch.equal(getattr(every.model, name), getattr(sparse.model, name))
    assert (sparse.test_accuracy, sparse.train_accuracy) == (
        every.test_accuracy,
        every.train_accuracy,
    )
    assert sparse.settings["test_every"] == 3
    with pytest.raises(ValueError, match="test_every must be a positive integer, got 0"):
        learn_constraints(c, y, 0, 1, 1, test_every=0, progress=False)
    from ilplayer.learning.loop import train_static_constraints
    from ilplayer.learning.settings import SolutionData

    t = torch.as_tensor
    data = SolutionData(t(c), t(y, dtype=torch.float64), t(c), t(y, dtype=torch.float64), 0, 1)
    with pytest.raises(
        ValueError, match="target_accuracy stops on the held-out accuracy: it needs test_every=1"
    ):
        train_static_constraints(data, num_constraints=1, target_accuracy=0.9, test_every=2)


def test_restarts_in_worker_processes_give_the_same_result_as_one_after_the_other():
    c, y = observations(160, seed=4)
    kwargs = dict(
        c_test=c[120:],
        y_test=y[120:],
        method="combopt",
        config=TrainingConfig(epochs=3, lr=2e-2),
        progress=False,
        restarts=2,
    )
    epochs: list[int] = []
    serial = learn_constraints(c[:120], y[:120], 0, 1, 1, **kwargs)
    parallel = learn_constraints(
        c[:120],
        y[:120],
        0,
        1,
        1,
        restart_workers=2,
        on_epoch=lambda record: epochs.append(record["epoch"]),
        **kwargs,
    )
    assert sorted(epochs) == [1, 1, 2, 2, 3, 3]  # every epoch of both restarts reached the caller
    assert (
        parallel.settings["restart_validation_accuracies"]
        == serial.settings["restart_validation_accuracies"]
    )
    assert parallel.history == serial.history
    for key, value in serial.model.state_dict().items():
        assert torch.equal(parallel.model.state_dict()[key], value)
    with pytest.raises(ValueError, match="restart_workers must be a positive integer, got 0"):
        learn_constraints(c, y, 0, 1, 1, restart_workers=0, progress=False)


def test_restart_workers_from_an_unguarded_script_raise_naming_the_guard(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text(
        "import numpy as np\nfrom ilplayer.learning.learn import learn_constraints\n"
        "c = -np.random.default_rng(0).random((20, 3))\ny = np.ones((20, 3))\n"
        "learn_constraints(c, y, 0, 1, 1, restarts=2, restart_workers=2, progress=False,\n"
        "                  equalities=False)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0
    assert (
        'without an `if __name__ == "__main__":` guard' in done.stderr
        and "script.py (line 5)" in done.stderr
    )


def test_learn_trains_ilploss_on_its_longer_schedule_by_default(tmp_path):
    """learn's ILP-Loss (alone, under auto, from Python or the command line) is
    `ILPLossConfig` with LEARN_ILPLOSS: 4 x m rows, 600 epochs, a stop after 30 validations."""
    from ilplayer.cli.learn import _config
    from ilplayer.learning.defaults import LEARN_ILPLOSS, AutoConfig, checked_config
    from ilplayer.learning.settings import ILPLossConfig

    expected = ILPLossConfig(**LEARN_ILPLOSS)
    assert (expected.k, expected.epochs, expected.stop_patience) == (4, 600, 30)
    assert AutoConfig().ilploss == expected
    assert checked_config(None, "ilploss", 0, 1, 4) == expected

    def given(**options):
        defaults = dict(
            method="ilploss",
            epochs=None,
            lr=None,
            batch_size=None,
            k=None,
            tau=None,
            box_relative_steps=None,
            init=None,
            temperature=None,
        )
        return argparse.Namespace(**{**defaults, **options})

    assert _config(given()) == expected
    assert _config(given(epochs=50)) == expected.replace(epochs=50)
    assert _config(given(method="auto")).ilploss == expected


def test_a_config_changes_the_setting_it_names_and_no_other(monkeypatch):
    import dataclasses

    from ilplayer.learning import learn
    from ilplayer.learning.defaults import AutoConfig
    from ilplayer.learning.learn import ILPLossConfig

    seen = []
    monkeypatch.setattr(learn, "_learn_both", lambda config, arguments: seen.append(config))
    c, y = np.zeros((4, 3)), np.zeros((4, 3))
    for config in (
        None,
        LearnConfig(epochs=1),
        ILPLossConfig(**{**learn.LEARN_ILPLOSS, "epochs": 1}),
    ):
        learn_constraints(c, y, 0, 1, 1, config=config, progress=False)
    default, combopt, ilploss = seen  # each call still runs both methods (method="auto")
    assert combopt == dataclasses.replace(
        default, combopt=dataclasses.replace(default.combopt, epochs=1)
    )
    assert ilploss == dataclasses.replace(
        default, ilploss=dataclasses.replace(default.ilploss, epochs=1)
    )
    assert isinstance(default, AutoConfig)
