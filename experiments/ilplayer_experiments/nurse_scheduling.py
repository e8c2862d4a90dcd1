"""Nurse scheduling with unknown patient demand: the NSP of Hu, Lee & Lee's Two-Stage
Predict+Optimize (NeurIPS 2023), on their public data (``../shared/data/nsp-2s/``, its README).

15 nurses, 7 days, 3 shifts: ``x`` in {0, 1}^(15 x 21) maximises the nurses' preferences, each
nurse works exactly one shift a day and no night shift before the next morning's, and each shift
``j`` serves its demand, ``sum_i capacity_i x_ij >= demand_j``: the 21 unknown right-hand sides,
predicted from 8 features per shift. Stage 2, once the demand is known, may reassign shifts; a
shift added to nurse ``i`` costs ``gamma_i (5 - P_ij)^2``, ``gamma_i ~ U[f - 0.015, f + 0.015]``,
and one given up nothing (the authors' code).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ilplayer.program import Program

NURSES, DAYS, SHIFTS = 15, 7, 3
PERIODS = DAYS * SHIFTS  # the 21 day-shifts, each with an unknown demand
FEATURES = 8
FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
"""The penalty factors ``f`` of the paper's table."""
PUBLISHED = {
    "2S": (3.94, 6.92, 13.12, 25.04, 33.29, 46.72),
    "NN": (4.27, 8.20, 16.00, 31.51, 62.52, 124.54),
}
"""Post-hoc regret per factor (Hu et al., Table 5: the mean over their 10 settings): their 2S
method and their best classical two-stage model."""
DATA_VARIABLE = "ILPLAYER_NSP_DATA"


@dataclass(frozen=True)
class NurseData:
    """One setting: the split's features and demands, one setting's preferences and capacities."""

    x_train: np.ndarray  # (210, 21, 8)
    demand_train: np.ndarray  # (210, 21)
    x_test: np.ndarray  # (90, 21, 8)
    demand_test: np.ndarray  # (90, 21)
    preference: np.ndarray  # (15, 21), 1-4
    capacity: np.ndarray  # (15,), patients a nurse serves


def data_folder(folder: str | os.PathLike[str] | None = None) -> Path:
    """The NSP data: ``folder`` where given, else ``$ILPLAYER_NSP_DATA`` where set, else
    ``shared/data/nsp-2s`` beside the repository; a clear error where it does not hold it."""
    if folder is not None:
        candidates = [Path(folder)]
    elif os.environ.get(DATA_VARIABLE):
        candidates = [Path(os.environ[DATA_VARIABLE])]
    else:
        root = Path(__file__).resolve().parents[2]
        candidates = [
            root.parent / "shared" / "data" / "nsp-2s",
            root / "shared" / "data" / "nsp-2s",
        ]
    for candidate in candidates:
        if (candidate / "train-0.txt").is_file():
            return candidate
    raise FileNotFoundError(
        f"the NSP data (train-0.txt, test-0.txt, preference-K.txt, capacity-K.txt) is in none "
        f"of {[str(c) for c in candidates]}: pass its folder (--data) or set {DATA_VARIABLE}"
    )


def _shifts(path: Path) -> tuple[np.ndarray, np.ndarray]:
    rows = np.loadtxt(path)
    if rows.ndim != 2 or rows.shape[1] != 1 + FEATURES + 1 or len(rows) % PERIODS:
        raise ValueError(
            f"{path}: expected rows of an index, {FEATURES} features and a demand, {PERIODS} rows per "
            f"instance; got shape {rows.shape}"
        )
    instances = len(rows) // PERIODS
    return (
        rows[:, 1 : 1 + FEATURES].reshape(instances, PERIODS, FEATURES),
        rows[:, -1].reshape(instances, PERIODS),
    )


def load(folder: str | os.PathLike[str] | None = None, setting: int = 0) -> NurseData:
    """Split 0's shifts with setting ``setting``'s preferences and capacities (0-9)."""
    path = data_folder(folder)
    x_train, demand_train = _shifts(path / "train-0.txt")
    x_test, demand_test = _shifts(path / "test-0.txt")
    preference = np.loadtxt(path / f"preference-{setting}.txt")[:NURSES, :PERIODS]
    capacity = np.loadtxt(path / f"capacity-{setting}.txt")[:NURSES]
    return NurseData(x_train, demand_train, x_test, demand_test, preference, capacity)


def index(nurse: int, period: int) -> int:
    """The variable of ``nurse`` on day-shift ``period`` (day * 3 + shift)."""
    return nurse * PERIODS + period


def schedule_program(data: NurseData) -> Program:
    """The schedule's program (max preferences), with every row but the demands' right-hand
    sides: ``A`` is the 21 demand rows (``-capacity``) above the 90 night-then-morning rows; pass
    [rows_b][ilplayer_experiments.nurse_scheduling.rows_b] of a demand per call."""
    n = NURSES * PERIODS
    one_shift = np.zeros((NURSES * DAYS, n))
    for nurse in range(NURSES):
        for day in range(DAYS):
            one_shift[
                nurse * DAYS + day, index(nurse, SHIFTS * day) : index(nurse, SHIFTS * day) + SHIFTS
            ] = 1.0
    demand = np.zeros((PERIODS, n))
    for period in range(PERIODS):
        for nurse in range(NURSES):
            demand[period, index(nurse, period)] = -data.capacity[nurse]
    rest = np.zeros((NURSES * (DAYS - 1), n))
    for nurse in range(NURSES):
        for day in range(DAYS - 1):
            night, morning = index(nurse, SHIFTS * (day + 1) - 1), index(nurse, SHIFTS * (day + 1))
            rest[nurse * (DAYS - 1) + day, [night, morning]] = 1.0
    A = np.vstack([demand, rest])
    return Program(
        A=A,
        b=rows_b(data.demand_train[:1])[0].numpy(),
        A_eq=one_shift,
        b_eq=np.ones(NURSES * DAYS),
        lb=0,
        ub=1,
        sense="max",
        c=torch.from_numpy(data.preference.reshape(-1)),
    )


def rows_b(demand: np.ndarray | torch.Tensor) -> torch.Tensor:
    """The right-hand sides (B, 111) of a demand (B, 21): ``-demand`` above the rest rows' ones."""
    demand = torch.as_tensor(demand, dtype=torch.float64)
    return torch.cat([-demand, demand.new_ones(demand.shape[0], NURSES * (DAYS - 1))], dim=1)


def penalties(
    data: NurseData, factor: float, instances: int, rng: np.random.Generator
) -> torch.Tensor:
    """(instances, 315): the price of a shift added, ``gamma_i (5 - P_ij)^2``, one draw of
    ``gamma_i ~ U[f - 0.015, f + 0.015]`` per nurse and instance."""
    gamma = rng.uniform(factor - 0.015, factor + 0.015, (instances, NURSES))
    return torch.from_numpy(
        np.repeat(gamma, PERIODS, axis=1) * ((5.0 - data.preference.reshape(-1)) ** 2)
    )
