"""A training loop's state on disk after every epoch, so that a run stopped by a crash, a
time limit or a reboot goes on from its last finished epoch instead of from the start."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = ["EpochCheckpoint", "fingerprint_tensors", "run_folder"]


class EpochCheckpoint:
    """The state of a loop over epochs kept in the file ``path``: the optimizer's parameters
    and state, the shuffling stream, torch's global random stream, the records so far, and
    whatever else the loop keeps (``loop``: its best model so far, a learning-rate schedule, a
    temperature).

    What the loop does not own (a solver's decision pool, a callback's own memory) is not
    saved: a resumed run repeats the finished epochs' numbers exactly when those hold none.
    Each save replaces the file whole (written beside it, then renamed), so a run killed while
    saving keeps the previous epoch's state. A loop that stopped early saves that it did
    (``finished``), so that a resumed run does not train past its stop.

    Example:
        >>> checkpoint = EpochCheckpoint("runs/knapsack-seed0.pt")  # doctest: +SKIP
        >>> fit_epochs(..., checkpoint=checkpoint)                   # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.finished = False  # after restore: whether the saved loop had stopped

    def save(
        self,
        optimizer: torch.optim.Optimizer,
        shuffle: torch.Generator,
        history: list[dict[str, float]],
        loop: dict[str, Any] | None = None,
        finished: bool = False,
    ) -> None:
        """Write the state after the epochs in ``history``; ``loop``: the loop's own state."""
        state = {
            "history": history,
            "optimizer": optimizer.state_dict(),
            "parameters": [p.detach().clone() for p in _parameters(optimizer)],
            "shuffle": shuffle.get_state(),
            "torch_rng": torch.get_rng_state(),
            "loop": dict(loop or {}),
            "finished": finished,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        torch.save(state, partial)
        os.replace(partial, self.path)

    def restore(
        self,
        optimizer: torch.optim.Optimizer,
        shuffle: torch.Generator,
        loop: dict[str, Any] | None = None,
    ) -> list[dict[str, float]]:
        """Put the saved state back into ``optimizer``'s parameters, ``optimizer``, ``shuffle`` and
        ``loop`` (updated in place); the records of the finished epochs (none when there is no
        file yet). ``finished`` then says whether the saved loop had stopped."""
        self.finished = False
        if not self.path.exists():
            return []
        state: dict[str, Any] = torch.load(self.path, weights_only=False)
        parameters = _parameters(optimizer)
        saved = state["parameters"]
        if len(saved) != len(parameters) or any(
            s.shape != p.shape for s, p in zip(saved, parameters)
        ):
            raise ValueError(
                f"checkpoint {self.path}: its parameters do not match this run's model "
                f"(shapes {[tuple(s.shape) for s in saved]} against "
                f"{[tuple(p.shape) for p in parameters]}); delete it or use another file"
            )
        with torch.no_grad():
            for value, parameter in zip(saved, parameters):
                parameter.copy_(value)
        optimizer.load_state_dict(state["optimizer"])
        shuffle.set_state(state["shuffle"])
        torch.set_rng_state(state["torch_rng"])
        if loop is not None:
            loop.update(state.get("loop", {}))
        self.finished = bool(state.get("finished", False))
        return list(state["history"])

    def epochs_done(self) -> int:
        """The last epoch the file holds (0 without one)."""
        if not self.path.exists():
            return 0
        history = torch.load(self.path, weights_only=False)["history"]
        return int(history[-1]["epoch"]) if history else 0

    def remove(self) -> None:
        """Delete the file (a finished run's record holds what it had)."""
        self.path.unlink(missing_ok=True)


def fingerprint_tensors(*tensors: Any) -> str:
    """A digest of the values, dtypes and shapes of ``tensors`` (None counts as an empty one)."""
    digest = hashlib.sha256()
    for tensor in tensors:
        array = (
            np.zeros(0)
            if tensor is None
            else np.ascontiguousarray(torch.as_tensor(tensor).cpu().numpy())
        )
        digest.update(repr((array.dtype.str, array.shape)).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def run_folder(
    folder: str | os.PathLike[str],
    name: str,
    settings: dict[str, Any],
    extendable: tuple[str, ...] = (),
) -> Path:
    """``folder``, made if needed, for one run's checkpoint files, after checking that it holds
    this run's: the JSON file ``name`` in it records ``settings`` on first use and is compared
    with them on every later one, so that a stale folder is never mixed into another run. A
    setting in ``extendable`` (the number of epochs) may grow: the run goes on past its old end,
    and the record takes the new value."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    settings = json.loads(json.dumps(settings))  # as it reads back: tuples become lists
    record = path / name
    if record.exists():
        saved = json.loads(record.read_text())
        differs = sorted(key for key in {*saved, *settings} if saved.get(key) != settings.get(key))
        shorter = [
            key for key in differs if key in extendable and settings.get(key) < saved.get(key, 0)
        ]
        if shorter:
            key = shorter[0]
            raise ValueError(
                f"checkpoint: {path} holds a run of {key} {saved[key]}, more than {settings[key]} "
                f"here: a run can be extended, not shortened; give {key} >= {saved[key]}, another "
                "folder, or delete this one to start over"
            )
        differs = [key for key in differs if key not in extendable]
        if differs:
            shown = ", ".join(
                f"{key}: {saved.get(key)!r} there, {settings.get(key)!r} here" for key in differs
            )
            raise ValueError(
                f"checkpoint: {path} holds the epochs of another run ({shown}); give another "
                "folder, or delete this one to start over"
            )
        if saved != settings:
            record.write_text(json.dumps(settings, indent=1))
    else:
        record.write_text(json.dumps(settings, indent=1))
    return path


def _parameters(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"]]
