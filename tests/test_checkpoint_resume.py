"""A training run stopped after some epochs and started again with the same EpochCheckpoint
ends with the numbers of the run that was never stopped (fit_epochs, through a real layer)."""

from __future__ import annotations

import pytest
import torch

import ilplayer
from ilplayer.checkpoint import EpochCheckpoint
from ilplayer.training import fit_epochs

N, M = 6, 2


def data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    c = torch.randn(24, N, generator=g, dtype=torch.float64)
    A_true = torch.rand(M, N, generator=g, dtype=torch.float64)
    y = ilplayer.solve(c, A_true, torch.full((M,), 1.5, dtype=torch.float64), lb=0, ub=1, solver="bruteforce")[0]
    return c, y


def train(epochs: int, checkpoint: EpochCheckpoint | None) -> tuple[list[dict[str, float]], list[torch.Tensor]]:
    c, y = data()
    torch.manual_seed(1)
    constraints = ilplayer.StaticConstraints(num_constraints=M, num_variables=N, lb=0, ub=1, seed=1,
                                             dtype=torch.float64)
    layer = ilplayer.ILPLayer(0, 1, solver="bruteforce", tau=0.5)
    optimizer = torch.optim.Adam(constraints.parameters(), lr=0.05)

    def batch_loss(rows: torch.Tensor) -> tuple[torch.Tensor, dict[str, int]]:
        jitter = 0.5 * torch.randn(len(rows), N, dtype=torch.float64)  # draws on torch's global stream
        prediction = layer(c[rows] + jitter, *constraints())
        return ((prediction - y[rows]) ** 2).mean(), {}

    def evaluate() -> dict[str, float]:
        return {"accuracy": float((layer(c, *constraints()) == y).all(-1).double().mean())}

    history = fit_epochs(len(c), epochs=epochs, batch_size=8, seed=3, optimizer=optimizer,
                         batch_loss=batch_loss, evaluate=evaluate, checkpoint=checkpoint)
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
    checkpoint.save(torch.optim.SGD(model.parameters(), lr=0.1), torch.Generator(), [{"epoch": 1, "loss": 0.0}])
    with pytest.raises(ValueError, match=r"other\.pt: its parameters do not match"):
        train(2, checkpoint)
