"""Predict-then-optimise on PyEPO's tasks: the data match PyEPO's generators, every method
learns, and the report shows ilplayer's runs beside PyEPO's."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

import ilplayer
from ilplayer.cli.main import main
from ilplayer_experiments import decision_focused as dfl
from ilplayer_experiments.pyepo_runs import run_pyepo
from ilplayer_experiments.report import build_report, load_records, write_report

PYEPO = importlib.util.find_spec("pyepo") is not None


@pytest.mark.skipif(not PYEPO, reason="PyEPO is not installed (pip install 'ilplayer[pyepo]')")
def test_the_data_are_pyepos_own():
    import pyepo

    x, c = pyepo.data.shortestpath.genData(20, 5, (5, 5), deg=4, noise_width=0.5, seed=3)
    ours = dfl.shortest_path_data(20, 5, (5, 5), deg=4, noise_width=0.5, seed=3)
    assert np.array_equal(x, ours[0]) and np.array_equal(c, ours[1])
    weights, x, c = pyepo.data.knapsack.genData(20, 5, 32, 2, deg=4, noise_width=0.5, seed=3)
    ours = dfl.knapsack_data(20, 5, 32, 2, deg=4, noise_width=0.5, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip((weights, x, c), ours))
    from pyepo.model.utils import _get_grid_arcs

    assert dfl.grid_arcs((5, 5)) == _get_grid_arcs((5, 5))


def test_shortest_paths_are_paths_from_corner_to_corner():
    if "highs" not in ilplayer.available_solvers():
        pytest.skip("40 binary edges need a MIP backend (ilplayer-highs)")
    task = dfl.make_task("shortest-path", train_size=6, test_size=2)
    y, status = ilplayer.solve(
        task.c_train, task.A, task.b, 0, 1, A_eq=task.A_eq, b_eq=task.b_eq, solver="highs"
    )
    assert (status == 0).all() and (y.sum(-1) == 8).all()  # 4 right + 4 down on a 5 x 5 grid


FRANK_WOLFE = ("rfwo", "rfy")  # many solves per call (PyEPO's tolerance 1e-6): on a smaller task


@pytest.mark.parametrize("method", FRANK_WOLFE)
def test_frank_wolfe_methods_train_on_a_small_shortest_path(method):
    if "highs" not in ilplayer.available_solvers():
        pytest.skip("needs a MIP backend (ilplayer-highs)")
    task = dfl.make_task("shortest-path", train_size=16, test_size=8)
    record = dfl.run_method(task, method, "highs", epochs=1, batch_size=8)
    assert len(record["history"]) == 2 and 0 <= record["regret"] < 2


@pytest.mark.parametrize("method", [m for m in dfl.METHODS if m not in FRANK_WOLFE])
def test_every_method_trains_on_a_small_knapsack(method):
    task = dfl.make_task("knapsack-regret", train_size=64, test_size=32)
    solver = "highs" if "highs" in ilplayer.available_solvers() else "bruteforce"
    if solver == "bruteforce":
        pytest.skip("32 binary items need a MIP backend (ilplayer-highs)")
    record = dfl.run_method(task, method, solver, epochs=2, batch_size=16)
    assert len(record["history"]) == 3 and 0 <= record["regret"] < 1
    if method in ("spo+", "2s"):  # these two reliably improve on the untrained model here
        assert record["regret"] < record["history"][0]["regret"]


def test_experiment_command_records_runs_and_the_report_has_a_regret_table(tmp_path):
    if "highs" not in ilplayer.available_solvers():
        pytest.skip("needs a MIP backend (ilplayer-highs)")
    assert (
        main(
            [
                "experiment",
                "shortest-path",
                "--methods",
                "spo+",
                "--solvers",
                "highs",
                "--epochs",
                "1",
                "--train-size",
                "32",
                "--test-size",
                "16",
                "--no-pyepo",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    record = json.loads((tmp_path / "shortest-path-ilplayer-spoplus-highs-seed0.json").read_text())
    assert record["method"] == "spo+" and record["library"] == "ilplayer" and "regret" in record
    report = build_report(load_records(tmp_path))
    assert "Learning costs: normalised regret" in report and "| spo+ | ilplayer | highs |" in report
    if importlib.util.find_spec("matplotlib") is not None:  # a plot beside the written report
        written = write_report(tmp_path, tmp_path / "docs" / "results.md").read_text()
        assert (
            "![normalised regret, shortest-path](results-shortest-path.png)" in written
        )  # one length: no suffix
        assert (tmp_path / "docs" / "results-shortest-path.png").stat().st_size > 0
    with pytest.raises(SystemExit, match="--methods: unknown"):
        main(["experiment", "shortest-path", "--methods", "spo", "--out", str(tmp_path)])


@pytest.mark.skipif(not PYEPO, reason="PyEPO is not installed (pip install 'ilplayer[pyepo]')")
def test_pyepo_solvers_choose_pyepos_models(tmp_path):
    pytest.importorskip("gurobipy", reason="PyEPO's Gurobi model needs gurobipy")
    if "highs" not in ilplayer.available_solvers():
        pytest.skip("needs a MIP backend (ilplayer-highs)")
    assert (
        main(
            [
                "experiment",
                "shortest-path",
                "--methods",
                "dbb",
                "--solvers",
                "highs",
                "--pyepo-solvers",
                "gurobi",
                "--epochs",
                "1",
                "--train-size",
                "32",
                "--test-size",
                "16",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    names = sorted(path.name for path in tmp_path.glob("*.json"))
    assert names == [
        "shortest-path-ilplayer-dbb-highs-seed0.json",
        "shortest-path-pyepo-dbb-gurobi-seed0.json",
    ]
    ours, theirs = (json.loads((tmp_path / name).read_text()) for name in names)
    assert ours["regret"] == pytest.approx(
        theirs["regret"], abs=1e-9
    )  # the same run, in two libraries


def test_records_of_other_kinds_in_a_results_folder_are_skipped(tmp_path):
    (tmp_path / "bench.json").write_text(json.dumps([{"benchmark": "solvers"}]))
    assert load_records(tmp_path) == []


@pytest.mark.skipif(not PYEPO, reason="PyEPO is not installed (pip install 'ilplayer[pyepo]')")
def test_pyepos_noise_stream_follows_noise_seed():
    pytest.importorskip(
        "gurobipy", reason="PyEPO's baselines here run on its Gurobi model (pip install gurobipy)"
    )
    task = dfl.make_task("shortest-path", train_size=64, test_size=32)
    run = lambda **kw: run_pyepo(task, "dpomul", epochs=1, seed=0, **kw)
    first, again, default = run(noise_seed=7), run(noise_seed=7), run()
    assert first["noise_seed"] == 7 and default["noise_seed"] == dfl.noise_seed_of("dpomul", 0)
    regrets = lambda record: [h["regret"] for h in record["history"]]
    assert regrets(first) == regrets(again) != regrets(default)


@pytest.mark.skipif(not PYEPO, reason="PyEPO is not installed (pip install 'ilplayer[pyepo]')")
@pytest.mark.parametrize(
    "method", ["spo+", "dbb", "pg", "pfyl", "pfymul", "dpomul", "nce", "cmap", "lsltr"]
)
def test_ilplayers_run_and_pyepos_are_the_same_run(method):
    """Same data (float64 on both sides), initial weights, batches and noise: the two libraries'
    runs of a method agree epoch by epoch, so a gap between them is the code's, not chance's.
    (The pool losses are left out: PyEPO draws which batches it solves from an unseeded stream.)"""
    pytest.importorskip(
        "gurobipy", reason="PyEPO's baselines here run on its Gurobi model (pip install gurobipy)"
    )
    task = dfl.make_task("shortest-path", train_size=96, test_size=64)
    ours = dfl.run_method(task, method, "gurobi", epochs=2, seed=3)
    theirs = run_pyepo(task, method, epochs=2, seed=3)
    regrets = lambda record: [h["regret"] for h in record["history"]]
    assert regrets(ours) == pytest.approx(regrets(theirs), abs=1e-9)
    assert len(set(regrets(ours))) == 3  # and the weights moved
