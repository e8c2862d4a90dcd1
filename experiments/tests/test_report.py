"""The report builder: mean ± std per cell beside the paper's figure."""

from __future__ import annotations

import json

import pytest

from ilplayer.cli.main import main
from ilplayer_experiments.report import build_report, protocol_cells, write_report


def record(task="rc", box="binary", m=2, seed=0, accuracy=0.9, variant=None):
    return {
        "task": task,
        "box": box,
        "m": m,
        "seed": seed,
        "variant": variant or {},
        "hyperparameters": {"epochs": 100},
        "solver": "bruteforce",
        "accuracy": accuracy,
        "box_baseline_accuracy": 0.3,
        "paper_accuracy": 94.2 if task == "rc" else 100.0,
        "wall_time_s": 60.0,
    }


def test_cells_hold_mean_and_std_over_seeds_beside_the_paper():
    text = build_report(
        [
            record(seed=0, accuracy=0.90),
            record(seed=1, accuracy=0.96),
            record(seed=2, accuracy=0.93),
        ]
    )
    assert "## Random Constraints, binary box — CombOptNet, paper's settings" in text
    assert "| 2 | 93.0 ± 3.0 | 0,1,2 | 30.0 ± 0.0 | 94.2 | -1.2 | 60 s |" in text


def test_variants_and_tasks_get_their_own_tables():
    text = build_report([record(), record(variant={"basis": "canonical"}), record(task="wsc", m=4)])
    assert "— CombOptNet, basis=canonical" in text and "## Weighted set cover, binary box" in text
    assert text.count("| m | ilplayer |") == 3


def test_report_command_writes_markdown_and_refuses_an_empty_folder(tmp_path):
    (tmp_path / "runs").mkdir()
    with pytest.raises(ValueError, match="no JSON records"):
        main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "r.md")])
    (tmp_path / "runs" / "a.json").write_text(json.dumps(record()))
    sudoku = {"task": "sudoku", "size": 4, "board_accuracy": 1.0}  # has its own records page
    partial = {
        "task": "knapsack",
        "method": "ilploss",
        "n": 10,
        "epochs_done": 557,
    }  # stopped by hand
    (tmp_path / "runs" / "b.json").write_text(json.dumps(sudoku))
    (tmp_path / "runs" / "c.json").write_text(json.dumps(partial))
    assert main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "r.md")]) == 0
    assert "| 2 | 90.0 ± 0.0 | 0 |" in (tmp_path / "r.md").read_text()


def test_tasks_that_cannot_follow_the_paper_say_how_in_their_title():
    text = build_report([record(task="knapsack", m=1), record()])
    assert (
        "## Knapsack from text, binary box — CombOptNet, paper's settings except: sentences "
        "embedded by all-MiniLM-L6-v2"
    ) in text
    assert "## Random Constraints, binary box — CombOptNet, paper's settings\n" in text


def test_knapsack_rows_run_over_item_counts_and_each_sentence_model_has_its_own_table():
    runs = [
        dict(record(task="knapsack", m=1, accuracy=acc), n=n, sentence_model=model)
        for acc, n, model in (
            (0.6, 10, "all-minilm-l6-v2"),
            (0.4, 20, "all-minilm-l6-v2"),
            (0.7, 10, "all-minilm-l6-v2-layers"),
        )
    ]
    text = build_report(runs)
    assert "| items | ilplayer |" in text and text.count("## Knapsack from text") == 2
    assert (
        "| 10 items | 60.0 ± 0.0 | 0 | 30.0 ± 0.0 | 64.7 | -4.7 |" in text
    )  # not averaged with 20 items
    assert (
        "| 20 items | 40.0 ± 0.0 | 0 | 30.0 ± 0.0 | – | – |" in text
    )  # the paper has 10 items only
    assert "sentences embedded by all-MiniLM-L6-v2's seven hidden states" in text
    overview = text.split("## Overview")[1].split("\n## ")[0]
    assert (
        "| Knapsack from text, all-minilm-l6-v2-layers | binary | 10 items | 70.0 ± 0.0 | 1 |"
        in overview
    )
    assert [c["label"] for c in protocol_cells(runs)] == [
        "knapsack m=1, all-minilm-l6-v2",
        "knapsack m=1, all-minilm-l6-v2-layers",
    ]


def test_every_sentence_model_is_described_for_the_records():
    from ilplayer_experiments.sentences import SENTENCE_MODEL_TITLES, SENTENCE_MODELS

    assert set(SENTENCE_MODEL_TITLES) == set(SENTENCE_MODELS.values())


def test_runs_of_other_lengths_get_their_own_rows_and_the_overview_takes_the_longest():
    short, long = (dict(record(accuracy=acc), method="ilploss") for acc in (0.5, 0.8))
    short["hyperparameters"], long["hyperparameters"] = {"epochs": 100}, {"epochs": 400}
    text = build_report([record(), short, long])
    assert "| 2, 100 epochs | 50.0 ± 0.0 |" in text and "| 2, 400 epochs | 80.0 ± 0.0 |" in text
    overview = text.split("## Overview")[1].split("\n## ")[0]
    assert overview.rstrip().endswith("| 80.0 |")  # ILP-Loss' column: the 400-epoch run alone


def test_methods_are_reported_apart():
    mlp = record(accuracy=0.2)
    mlp["method"], mlp["solver"] = "mlp", None
    text = build_report([record(), mlp])
    assert "— CombOptNet, paper's settings" in text and "— MLP baseline, paper's settings" in text
    assert "solver: none." in text


def test_overview_puts_baselines_beside_combopt_and_matching_has_no_gap_to_spair():
    mlp = record(accuracy=0.2)
    mlp["method"] = "mlp"
    ablation = record(accuracy=0.5, variant={"tau": None})
    match = dict(record(task="matching", m=8, accuracy=0.8), p=4, box_baseline_accuracy=None)
    bbgm = dict(match, method="bbgm", accuracy=0.7)
    text = build_report([record(accuracy=0.9), mlp, ablation, match, bbgm])
    overview = text.split("## Overview")[1].split("\n## ")[0]
    assert (
        "| Random Constraints | binary | 2 | 90.0 ± 0.0 | 1 | 94.2 ± 10.1 | -4.2 | 30.0 | 20.0 | – | – |"
        in overview
    )
    assert (
        "| Keypoint matching stand-in | binary | p=4 | 80.0 ± 0.0 | 1 | 83.1 | – | – | – | – | 70.0 |"
        in overview
    )
    assert (
        "— CombOptNet, tau=hard" in text
        and "| 2 | 50.0 ± 0.0 | 0 | 30.0 ± 0.0 | 83.1 | -33.1 |" in text
    )


def test_restarts_count_as_runs_of_their_dataset():
    runs = [
        record(seed=0, accuracy=0.9),
        record(seed=1, accuracy=0.8),
        record(seed=0, accuracy=0.7),
    ]
    runs[2]["restart"] = 1
    assert "| 2 | 80.0 ± 10.0 | 0,1 (3 runs) |" in build_report(runs)


def test_protocol_cells_put_the_papers_mean_and_std_beside_ours_and_skip_variants(tmp_path):
    runs = [
        record(seed=0, accuracy=0.9),
        record(seed=1, accuracy=0.8),
        record(variant={"tau": None}),
        record(task="wsc", m=8, accuracy=0.7),
    ]
    cells = protocol_cells(runs)
    assert [c["label"] for c in cells] == ["rc binary m=2", "wsc m=8"]
    assert cells[0]["mean"] == pytest.approx(85.0) and cells[0]["std"] == pytest.approx(
        7.0711, abs=1e-3
    )
    assert (cells[0]["paper"], cells[0]["paper_std"]) == (94.2, 10.1)
    assert (cells[1]["paper"], cells[1]["paper_std"]) == (79.7, 12.1)
    pytest.importorskip("matplotlib", reason="the plot needs the [demo] extra")
    for i, run in enumerate(runs):
        (tmp_path / f"{i}.json").write_text(json.dumps(run))
    text = write_report(tmp_path, tmp_path / "out" / "results.md").read_text()
    assert "![ilplayer against the paper](results-protocol.png)" in text
    assert (tmp_path / "out" / "results-protocol.png").stat().st_size > 0


def dfl_record(seed=0, epochs=10, regret=0.1, method="spo+"):
    return {
        "task": "shortest-path",
        "label": "shortest-path",
        "method": method,
        "library": "ilplayer",
        "solver": "highs",
        "seed": seed,
        "epochs": epochs,
        "lr": 0.01,
        "batch_size": 32,
        "train_size": 1000,
        "test_size": 1000,
        "regret": regret,
        "seconds_per_epoch": 0.1,
        "history": [{"regret": 0.5}],
    }


def test_cost_learning_runs_of_other_lengths_get_their_own_tables_and_a_run_found_twice_counts_once():
    runs = [
        dfl_record(0, 10, 0.08),
        dfl_record(1, 10, 0.10),
        dfl_record(0, 10, 0.08),  # the same run, two folders
        dfl_record(0, 5, 0.20),
    ]
    report = build_report(runs)
    assert "### Shortest path, 5 x 5 grid (PyEPO data), 10 epochs" in report
    assert "### Shortest path, 5 x 5 grid (PyEPO data), 5 epochs" in report
    assert "| spo+ | ilplayer | highs | 9.0 ± 1.4 | 0,1 | 0.1 |" in report
    assert "| spo+ | ilplayer | highs | 20.0 ± 0.0 | 0 | 0.1 |" in report
    one = build_report([dfl_record(0, 1)])
    assert "(PyEPO data), 1 epoch\n" in one


def test_the_knapsacks_best_recipe_stands_beside_the_papers_cell_in_the_overview():
    best = dict(
        record(
            task="knapsack", m=1, accuracy=0.7, variant={"schedule": "cosine", "standardise": True}
        ),
        n=10,
        sentence_model="all-minilm-l6-v2-layers",
    )
    other = dict(
        record(task="knapsack", m=1, variant={"standardise": True}),
        n=10,
        sentence_model="all-minilm-l6-v2",
    )
    overview = build_report([best, other]).split("## Knapsack")[0]
    assert (
        "| Knapsack from text, all-minilm-l6-v2-layers, best recipe | binary | 10 items | 70.0 ± 0.0 | 1 "
        "| 64.7 ± 2.8 | +5.3 |"
    ) in overview
    assert "all-minilm-l6-v2 |" not in overview  # another variant: its own table only
