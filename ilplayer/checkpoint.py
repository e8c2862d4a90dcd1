"""A training loop's state on disk after every epoch, so that a run stopped by a crash, a
time limit or a reboot goes on from its last finished epoch instead of from the start."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

__all__ = ["EpochCheckpoint"]


class EpochCheckpoint:
    """The state of a loop over epochs kept in the file ``path``: the optimizer's parameters
    and state, the shuffling stream, torch's global random stream, and the records so far.

    What the loop does not own (a solver's decision pool, a callback's own memory) is not
    saved: a resumed run repeats the finished epochs' numbers exactly when those hold none.
    Each save replaces the file whole (written beside it, then renamed), so a run killed while
    saving keeps the previous epoch's state.

    Example:
        >>> checkpoint = EpochCheckpoint("runs/knapsack-seed0.pt")  # doctest: +SKIP
        >>> fit_epochs(..., checkpoint=checkpoint)                   # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def save(self, optimizer: torch.optim.Optimizer, shuffle: torch.Generator,
             history: list[dict[str, float]]) -> None:
        """Write the state after the epochs in ``history``."""
        state = {"epochs_done": len(history), "history": history, "optimizer": optimizer.state_dict(),
                 "parameters": [p.detach().clone() for p in _parameters(optimizer)],
                 "shuffle": shuffle.get_state(), "torch_rng": torch.get_rng_state()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        torch.save(state, partial)
        os.replace(partial, self.path)

    def restore(self, optimizer: torch.optim.Optimizer, shuffle: torch.Generator) -> list[dict[str, float]]:
        """Put the saved state back into ``optimizer``'s parameters, ``optimizer`` and ``shuffle``;
        the records of the finished epochs (none when there is no file yet)."""
        if not self.path.exists():
            return []
        state: dict[str, Any] = torch.load(self.path, weights_only=False)
        parameters = _parameters(optimizer)
        saved = state["parameters"]
        if len(saved) != len(parameters) or any(s.shape != p.shape for s, p in zip(saved, parameters)):
            raise ValueError(f"checkpoint {self.path}: its parameters do not match this run's model "
                             f"(shapes {[tuple(s.shape) for s in saved]} against "
                             f"{[tuple(p.shape) for p in parameters]}); delete it or use another file")
        with torch.no_grad():
            for value, parameter in zip(saved, parameters):
                parameter.copy_(value)
        optimizer.load_state_dict(state["optimizer"])
        shuffle.set_state(state["shuffle"])
        torch.set_rng_state(state["torch_rng"])
        return list(state["history"])

    def epochs_done(self) -> int:
        """How many epochs the file holds (0 without one)."""
        return int(torch.load(self.path, weights_only=False)["epochs_done"]) if self.path.exists() else 0

    def remove(self) -> None:
        """Delete the file (a finished run's record holds what it had)."""
        self.path.unlink(missing_ok=True)


def _parameters(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"]]
