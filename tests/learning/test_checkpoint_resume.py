"""A training run stopped after some epochs and started again with the same EpochCheckpoint
ends with the numbers of the run that was never stopped (fit_epochs, through a real layer)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import ilplayer
import ilplayer.learning.learn
from ilplayer.learning.checkpoint import EpochCheckpoint
from ilplayer.learning.loop import fit_epochs

N, M = 6, 2


def data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    c = torch.randn(24, N, generator=g, dtype=torch.float64)
    A_true = torch.rand(M, N, generator=g, dtype=torch.float64)
    y = ilplayer.solve(
        c, A_true, torch.full((M,), 1.5, dtype=torch.float64), lb=0, ub=1, solver="bruteforce"
    )[0]
    return c, y


def train(
    epochs: int, checkpoint: EpochCheckpoint | None
) -> tuple[list[dict[str, float]], list[torch.Tensor]]:
    c, y = data()
    torch.manual_seed(1)
    constraints = ilplayer.StaticConstraints(
        num_constraints=M, num_variables=N, lb=0, ub=1, seed=1, dtype=torch.float64
    )
    layer = ilplayer.ILPLayer(0, 1, solver="bruteforce", tau=0.5)
    optimizer = torch.optim.Adam(constraints.parameters(), lr=0.05)

    def batch_loss(rows: torch.Tensor) -> tuple[torch.Tensor, dict[str, int]]:
        jitter = 0.5 * torch.randn(
            len(rows), N, dtype=torch.float64
        )  # draws on torch's global stream
        prediction = layer(c[rows] + jitter, *constraints())
        return ((prediction - y[rows]) ** 2).mean(), {}

    def evaluate() -> dict[str, float]:
        return {"accuracy": float((layer(c, *constraints()) == y).all(-1).double().mean())}

    history = fit_epochs(
        len(c),
        epochs=epochs,
        batch_size=8,
        seed=3,
        optimizer=optimizer,
        batch_loss=batch_loss,
        evaluate=evaluate,
        checkpoint=checkpoint,
    )
    return history, [p.detach().clone() for p in constraints.parameters()]


def test_a_resumed_run_ends_as_the_uninterrupted_one(tmp_path):
    straight_history, straight_parameters = train(4, None)
    checkpoint = EpochCheckpoint(tmp_path / "run.pt")
    first, _ = train(2, checkpoint)  # "stopped" after two epochs
    assert checkpoint.epochs_done() == 2 and len(first) == 2
    history, parameters = train(4, checkpoint)  # started again: epochs 3 and 4 only
    assert history == straight_history
    for got, expected in zip(parameters, straight_parameters):
        assert torch.equal(got, expected)
    assert checkpoint.epochs_done() == 4 and not (tmp_path / "run.pt.partial").exists()
    checkpoint.remove()
    assert not checkpoint.path.exists() and checkpoint.epochs_done() == 0


def test_a_checkpoint_of_another_model_is_refused_by_name(tmp_path):
    checkpoint = EpochCheckpoint(tmp_path / "other.pt")
    model = torch.nn.Linear(3, 2)
    checkpoint.save(
        torch.optim.SGD(model.parameters(), lr=0.1), torch.Generator(), [{"epoch": 1, "loss": 0.0}]
    )
    with pytest.raises(ValueError, match=r"other\.pt: its parameters do not match"):
        train(2, checkpoint)


class Stopped(Exception):
    """A crash, a time limit: what ends a run part-way."""


def stop_after(epochs: int):
    def on_epoch(record: dict[str, float]) -> None:
        if record["epoch"] >= epochs:
            raise Stopped

    return on_epoch


@pytest.mark.parametrize(
    "method, config",
    [
        ("combopt", ilplayer.learning.defaults.LearnConfig(epochs=5, batch_size=8)),
        (
            "ilploss",
            ilplayer.learning.learn.ILPLossConfig(
                epochs=6, batch_size=8, validate_every=2, stop_patience=10
            ),
        ),
    ],
)
def test_learn_constraints_resumed_from_its_checkpoint_returns_the_uninterrupted_result(
    tmp_path, method, config
):
    from tests.learning.test_learn import observations

    c, y = observations(150, n=6, seed=4)
    run = lambda **kw: ilplayer.learning.learn.learn_constraints(
        c, y, 0, 1, 1, config=config, method=method, seed=2, progress=False, polish=False, **kw
    )
    straight = run()
    with pytest.raises(Stopped):
        run(checkpoint=tmp_path / "run", on_epoch=stop_after(3))  # stopped in its third epoch
    saved = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert saved == [
        f"{method}-seed{ilplayer.learning.settings.restart_seed(2, 0)}.pt",
        f"run-{method}.json",
    ]
    held = EpochCheckpoint(tmp_path / "run" / saved[0]).epochs_done()
    assert held in (2, 3)  # ILP-Loss saves after its callback, fit_epochs before
    resumed = run(checkpoint=tmp_path / "run")
    assert (
        resumed.settings.pop("resumed_at_epoch") == held
        and straight.settings.pop("resumed_at_epoch") == 0
    )
    assert resumed.history == straight.history and resumed.settings == straight.settings
    for got, expected in zip(resumed.constraints(), straight.constraints()):
        assert torch.equal(got, expected)
    again = run(
        checkpoint=tmp_path / "run", on_epoch=stop_after(0)
    )  # all saved: not one epoch trained
    assert again.history == straight.history
    with pytest.raises(
        ValueError, match=r"checkpoint: .* holds the epochs of another run \(data: "
    ):
        ilplayer.learning.learn.learn_constraints(
            c[:80],
            y[:80],
            0,
            1,
            1,
            config=config,
            method=method,
            seed=2,
            progress=False,
            polish=False,
            checkpoint=tmp_path / "run",
        )


def test_ilploss_stopped_early_is_not_trained_past_its_stop_on_resume(tmp_path):
    from tests.learning.test_learn import observations

    c, y = observations(60, n=5, seed=1)
    config = ilplayer.learning.learn.ILPLossConfig(
        epochs=40, batch_size=8, validate_every=1, stop_patience=1
    )
    run = lambda: ilplayer.learning.learn.learn_constraints(
        c,
        y,
        0,
        1,
        1,
        config=config,
        method="ilploss",
        progress=False,
        polish=False,
        checkpoint=tmp_path,
    )
    first = run()
    assert first.history[-1]["epoch"] < 40  # stopped by its patience (or at 100 %)
    assert run().history == first.history


def test_learn_command_resumes_from_its_checkpoint_folder(tmp_path, capsys):
    from ilplayer.cli.main import main
    from tests.learning.test_learn import observations

    c, y = observations(80, seed=3)
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
        "3",
        "--checkpoint",
        str(tmp_path / "ck"),
    ]
    assert main([*command, "--json", str(tmp_path / "a.json")]) == 0
    assert (
        main([*command, "--json", str(tmp_path / "b.json")]) == 0
    )  # every epoch found: nothing trained
    first, second = (json.loads((tmp_path / name).read_text()) for name in ("a.json", "b.json"))
    assert (
        first["history"] == second["history"] and first["test_accuracy"] == second["test_accuracy"]
    )
    assert main([*command[:-4], "--epochs", "2", "--checkpoint", str(tmp_path / "ck")]) == 2
    assert (
        "holds a run of epochs 3, more than 2 here: a run can be extended, not shortened"
        in capsys.readouterr().err
    )
    # A larger --epochs extends the run: the bar starts at the saved epochs, a line says so, the record too.
    assert (
        main(
            [
                *command[:-4],
                "--epochs",
                "5",
                "--checkpoint",
                str(tmp_path / "ck"),
                "--json",
                str(tmp_path / "c.json"),
            ]
        )
        == 0
    )
    out, err = capsys.readouterr()
    assert "resumed from" in out and "3 of 5 epochs (combopt) done before" in out
    assert " 3/5 " in err.replace("|", " ")  # tqdm's first draw, before the new epochs
    extended = json.loads((tmp_path / "c.json").read_text())
    assert (
        extended["resumed_at_epoch"] == 3 and len(extended["history"]) == len(first["history"]) + 2
    )
    assert (
        extended["history"][:3] == first["history"][:3]
    )  # the saved epochs (the start's record aside)


def test_the_progress_bar_of_a_resumed_run_starts_at_its_saved_epochs(tmp_path, capsys):
    from tests.learning.test_learn import observations

    c, y = observations(60, n=5, seed=1)
    config = ilplayer.learning.defaults.LearnConfig(epochs=4, batch_size=8)
    run = lambda **kw: ilplayer.learning.learn.learn_constraints(
        c, y, 0, 1, 1, config=config, method="combopt", polish=False, checkpoint=tmp_path, **kw
    )
    with pytest.raises(Stopped):
        run(progress=False, on_epoch=stop_after(1))
    result = run(progress=True)
    out, err = capsys.readouterr()
    assert f"resumed from {tmp_path}: 1 of 4 epochs (combopt) done before" in out
    assert " 1/4 " in err.replace("|", " ") and " 0/4 " not in err.replace("|", " ")
    assert result.settings["resumed_at_epoch"] == 1
