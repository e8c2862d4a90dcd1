"""``ilplayer experiment nsp``: the nurse schedule's program read from the public data (each
schedule keeps its rules and serves its demand), and the command's smallest case end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer.cli.main import main
from ilplayer_experiments import nurse_scheduling as nsp

try:
    DATA = nsp.data_folder()
except FileNotFoundError as exc:  # the public split lives in ../shared/data beside the repository
    pytest.skip(f"the NSP data is not here: {exc}", allow_module_level=True)


def test_the_schedule_keeps_its_rules_and_serves_the_demand():
    data = nsp.load(DATA, setting=3)
    program = nsp.schedule_program(data)
    demand = data.demand_test[:4]
    with ilplayer.Oracle(program, solver="highs") as oracle:
        y, status = oracle(torch.as_tensor(program.c).expand(4, -1), program.A, nsp.rows_b(demand))
    y = y.numpy().reshape(4, nsp.NURSES, nsp.DAYS, nsp.SHIFTS)
    for i in np.flatnonzero(status.numpy() == int(ilplayer.Status.OPTIMAL)):
        assert (y[i].sum(-1) == 1).all()  # one shift a day
        assert (y[i, :, :-1, 2] + y[i, :, 1:, 0] <= 1).all()  # no night before a morning
        served = np.einsum("i,ips->ps", data.capacity, y[i]).reshape(-1)
        assert (served >= demand[i] - 1e-9).all()
    assert (status == int(ilplayer.Status.OPTIMAL)).sum() >= 2


def test_penalties_price_a_shift_by_the_nurses_dislike():
    data = nsp.load(DATA)
    price = (
        nsp.penalties(data, 2.0, 3, np.random.default_rng(0))
        .numpy()
        .reshape(3, nsp.NURSES, nsp.PERIODS)
    )
    gamma = price / (5.0 - data.preference) ** 2
    assert np.allclose(gamma, gamma[:, :, :1]) and ((gamma > 1.985) & (gamma < 2.015)).all()


def test_the_command_runs_every_method_on_a_small_case(tmp_path, capsys):
    code = main(
        [
            "experiment",
            "nsp",
            "--methods",
            "ridge",
            "mse",
            "combopt",
            "post-hoc",
            "odece",
            "--factors",
            "1",
            "--draws",
            "2",
            "--train",
            "4",
            "--test",
            "3",
            "--epochs",
            "combopt=1",
            "--epochs",
            "post-hoc=1",
            "--epochs",
            "odece=1",
            "--alphas",
            "0.1",
            "0.9",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    record = json.loads((tmp_path / "nsp-setting0.json").read_text())
    assert [row["method"] for row in record["rows"]] == [
        "ridge",
        "mse",
        "combopt",
        "post-hoc",
        "odece",
    ]
    assert record["rows"][-1]["alpha"] in (0.1, 0.9) and record["alphas"] == [0.1, 0.9]
    for row in record["rows"]:
        assert row["factor"] == 1.0 and len(row["per_draw"]) == 2
        assert row["post_hoc_regret"] >= -1e-9 and 0.0 <= row["infeasibility_rate"] <= 1.0
        assert (
            row["solved_mean"] >= row["post_hoc_regret"] - 1e-9
        )  # the zeros of unservable demands left out
    assert record["train"] == 4 and record["test"] == 3 and record["published"]["2S"][2] == 13.12
    assert (tmp_path / "nsp-setting0.png").is_file()
    assert "post-hoc f=1: post-hoc regret" in capsys.readouterr().out


def test_a_missing_data_folder_says_where_it_looked(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        nsp.data_folder(tmp_path / "nowhere")
    monkeypatch.setenv(nsp.DATA_VARIABLE, str(tmp_path))
    with pytest.raises(FileNotFoundError, match="ILPLAYER_NSP_DATA"):
        nsp.data_folder()
