"""Predicting the constraints of the nurse schedule, scored by the post-hoc regret: the
two-stage baselines (scikit-learn regressors on the demands' squared error), CombOptNet's
gradient for ``b`` through the layer, and the post-hoc regret's own perturbed gradient
([PostHocRegretLoss][ilplayer.losses.PostHocRegretLoss]); ``ilplayer experiment nsp``."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ilplayer.core.records import Status
from ilplayer.gradients import CombOptNet
from ilplayer.layer import ILPLayer
from ilplayer.losses import FeasibilityLoss, PostHocRegretLoss
from ilplayer.metrics.two_stage import TwoStage
from ilplayer.oracle import Oracle
from ilplayer.program import Program
from ilplayer_experiments import nurse_scheduling as nsp

BASELINES = ("ridge", "knn", "cart", "rf", "mlp")
METHODS = (*BASELINES, "mse", "combopt", "post-hoc", "odece")
"""The baselines (scikit-learn, ``ilplayer-experiments[twostage]``); the torch network on the squared error
alone (where the next two start); CombOptNet's gradient; the post-hoc regret's perturbed
gradient (trained once per penalty factor); and Odece's losses (one training per trade-off
weight, the weight chosen per factor)."""
ODECE_ALPHAS = (0.1, 0.3, 0.5, 0.7, 0.9)


def regressor(name: str, seed: int) -> Any:
    try:
        from sklearn.ensemble import RandomForestRegressor
        from sklearn.linear_model import Ridge
        from sklearn.neighbors import KNeighborsRegressor
        from sklearn.neural_network import MLPRegressor
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.tree import DecisionTreeRegressor
    except ImportError as exc:
        raise SystemExit(
            "the two-stage baselines need scikit-learn: pip install 'ilplayer-experiments[twostage]'"
        ) from exc
    model = {
        "ridge": lambda: Ridge(alpha=1.0),
        "knn": lambda: KNeighborsRegressor(n_neighbors=5),
        "cart": lambda: DecisionTreeRegressor(min_samples_leaf=5, random_state=seed),
        "rf": lambda: RandomForestRegressor(
            n_estimators=100, min_samples_leaf=2, random_state=seed, n_jobs=1
        ),
        "mlp": lambda: MLPRegressor(hidden_layer_sizes=(32,), max_iter=2000, random_state=seed),
    }[name]()
    return make_pipeline(StandardScaler(), model)


def baseline_demand(name: str, data: nsp.NurseData, seed: int) -> np.ndarray:
    """(test, 21): a regressor fitted on every training shift's (features, demand)."""
    model = regressor(name, seed).fit(
        data.x_train.reshape(-1, nsp.FEATURES), data.demand_train.reshape(-1)
    )
    return model.predict(data.x_test.reshape(-1, nsp.FEATURES)).reshape(data.demand_test.shape)


class DemandNet(torch.nn.Module):
    """One shift's demand from its 8 features (standardised with the training shifts')."""

    def __init__(self, data: nsp.NurseData, hidden: int = 32) -> None:
        super().__init__()
        features = torch.from_numpy(data.x_train.reshape(-1, nsp.FEATURES))
        self.mean: torch.Tensor
        self.scale: torch.Tensor
        self.level: torch.Tensor
        self.register_buffer("mean", features.mean(0))
        self.register_buffer("scale", features.std(0).clamp(min=1e-9))
        self.register_buffer("level", torch.tensor(float(data.demand_train.mean())))
        self.body = torch.nn.Sequential(
            torch.nn.Linear(nsp.FEATURES, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1)
        ).double()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.level + self.body((x - self.mean) / self.scale).squeeze(-1)


def fit_squared_error(
    net: DemandNet, data: nsp.NurseData, epochs: int = 400, lr: float = 0.01
) -> DemandNet:
    """The network on the demands' squared error (full batch, Adam): the start of the others."""
    x, demand = torch.from_numpy(data.x_train), torch.from_numpy(data.demand_train)
    optimiser = torch.optim.Adam(net.parameters(), lr=lr)
    for _ in range(epochs):
        optimiser.zero_grad()
        loss = ((net(x) - demand) ** 2).mean()
        loss.backward()
        optimiser.step()
    return net


def batches(count: int, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    order = rng.permutation(count)
    return [order[start : start + size] for start in range(0, count, size)]


def fit_combopt(
    net: DemandNet,
    data: nsp.NurseData,
    program: Program,
    solver: str,
    epochs: int,
    seed: int,
    batch_size: int = 16,
    lr: float = 1e-3,
) -> DemandNet:
    """CombOptNet's gradient for ``b``: the schedule of the predicted demand against the true
    demand's optimal schedule (the paper's loss on solutions, through the layer), on the
    training instances whose true demand a schedule serves (the others have no target)."""
    rng = np.random.default_rng(seed)
    x, c = torch.from_numpy(data.x_train), torch.as_tensor(program.c)
    with Oracle(program, solver=solver) as oracle:
        y_true, status = oracle(c.expand(len(x), -1), program.A, nsp.rows_b(data.demand_train))
        served = status == int(Status.OPTIMAL)
        x, y_true = x[served], y_true[served]
        layer = ILPLayer(oracle, CombOptNet(tau=0.5))
        optimiser = torch.optim.Adam(net.parameters(), lr=lr)
        for _ in range(epochs):
            for batch in batches(len(x), batch_size, rng):
                optimiser.zero_grad()
                y = layer(c.expand(len(batch), -1), program.A, nsp.rows_b(net(x[batch])))
                loss = (y - y_true[batch].to(y.dtype)).abs().sum(-1).mean()
                loss.backward()
                optimiser.step()
    return net


class Regressor(torch.nn.Module):
    """A fitted scikit-learn regressor of one shift's demand, as a (frozen) torch module."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = self.model.predict(x.detach().reshape(-1, nsp.FEATURES).numpy())
        return torch.from_numpy(flat.reshape(x.shape[:-1]))


class Calibrated(torch.nn.Module):
    """A frozen predictor's demands, shrunk towards each shift's training mean and shifted:
    ``mean + shrink * (base - mean) + shift`` (one ``shrink``, a ``shift`` per day-shift), the
    few parameters the post-hoc regret is trained on."""

    def __init__(self, net: torch.nn.Module, data: nsp.NurseData) -> None:
        super().__init__()
        self.net = net.requires_grad_(False)
        self.mean: torch.Tensor
        self.register_buffer("mean", torch.from_numpy(data.demand_train.mean(0)))
        self.shrink = torch.nn.Parameter(torch.tensor(1.0, dtype=torch.float64))
        self.shift = torch.nn.Parameter(torch.zeros(nsp.PERIODS, dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mean + self.shrink * (self.net(x) - self.mean) + self.shift


def fit_post_hoc(
    net: torch.nn.Module,
    data: nsp.NurseData,
    program: Program,
    factor: float,
    solver: str,
    epochs: int,
    seed: int,
    batch_size: int = 21,
    lr: float = 0.02,
    sigma: float = 2.0,
) -> Calibrated:
    """The post-hoc regret's perturbed gradient at one penalty factor, on a calibration of a
    two-stage predictor (fresh penalty draws each batch; the true optima solved once); the
    calibration kept is the epoch's (or the start's) of least training post-hoc regret,
    unsmoothed. A predicted demand that no schedule serves costs every shift of Stage 2 (Hu et
    al.'s all-zero Stage 1): that cliff dominates the regret, and a few parameters follow its
    smoothed slope with less noise than a whole network's (records/two-stage.md)."""
    rng = np.random.default_rng(seed)
    x, c = torch.from_numpy(data.x_train), torch.as_tensor(program.c)
    true_b = nsp.rows_b(data.demand_train)
    model = Calibrated(net, data)
    # the demand rows move; the rest rows' right-hand sides (ones) are known and stay
    scales = torch.cat(
        [torch.full((nsp.PERIODS,), sigma), torch.zeros(nsp.NURSES * (nsp.DAYS - 1))]
    )
    loss = PostHocRegretLoss(program, solver=solver, sigma=scales, samples=1, seed=seed)
    selection = nsp.penalties(data, factor, len(x), np.random.default_rng(seed + 1))

    def training_regret() -> float:
        with torch.no_grad():
            y1 = stage1(program, model(x), solver)
        scores = loss.stages.score(
            y1, c, program.A, true_b, penalty=selection, drop_penalty=0.0, optimal=optimal
        )
        return torch.nan_to_num(scores.regret, nan=0.0).mean().item()

    try:
        optimal = loss.stages.optimal_values(c.expand(len(true_b), -1), program.A, true_b)
        best = (training_regret(), copy.deepcopy(model.state_dict()))
        optimiser = torch.optim.Adam([model.shrink, model.shift], lr=lr)
        for _ in range(epochs):
            for batch in batches(len(x), batch_size, rng):
                optimiser.zero_grad()
                value = loss(
                    nsp.rows_b(model(x[batch])),
                    c=c,
                    A=program.A,
                    b=true_b[batch],
                    penalty=nsp.penalties(data, factor, len(batch), rng),
                    drop_penalty=0.0,
                    optimal=optimal[batch],
                )
                value.backward()
                optimiser.step()
            if (regret := training_regret()) < best[0]:
                best = (regret, copy.deepcopy(model.state_dict()))
    finally:
        loss.close()
    model.load_state_dict(best[1])
    return model


def fit_odece(
    net: torch.nn.Module,
    data: nsp.NurseData,
    program: Program,
    solver: str,
    epochs: int,
    seed: int,
    alphas: Sequence[float] = ODECE_ALPHAS,
    margin: float = 1.0,
    lr: float = 0.02,
) -> dict[float, Calibrated]:
    """Odece's losses on a calibration of a two-stage predictor, one per trade-off weight, on
    the training instances whose true demand a schedule serves (the others have no optimum for
    OPL to keep): OPL keeps the true schedule within the predicted demand rows (so Stage 1 has
    a decision), IPL makes them cut off a Stage-1 schedule that understaffs in truth."""
    x, c = torch.from_numpy(data.x_train), torch.as_tensor(program.c)
    models = {}
    with Oracle(program, solver=solver) as oracle:
        y_true, status = oracle(c.expand(len(x), -1), program.A, nsp.rows_b(data.demand_train))
    served = status == int(Status.OPTIMAL)
    x, y_true, true_b = (
        x[served],
        y_true[served].to(torch.float64),
        nsp.rows_b(data.demand_train[served.numpy()]),
    )
    for alpha in alphas:
        rng = np.random.default_rng(seed)
        model = Calibrated(net, data)
        loss = FeasibilityLoss(program, solver=solver, alpha=alpha, margin=margin)
        optimiser = torch.optim.Adam([model.shrink, model.shift], lr=lr)
        with loss.oracle:
            for _ in range(epochs):
                for batch in batches(len(x), 21, rng):
                    optimiser.zero_grad()
                    loss(
                        b_pred=nsp.rows_b(model(x[batch])),
                        y_true=y_true[batch],
                        c=c,
                        A=program.A,
                        b=true_b[batch],
                    ).backward()
                    optimiser.step()
        models[alpha] = model
    return models


def choose_odece(
    models: dict[float, Calibrated],
    data: nsp.NurseData,
    program: Program,
    solver: str,
    factor: float,
    seed: int,
) -> tuple[float, Calibrated]:
    """The trade-off weight of least training post-hoc regret at ``factor`` (one penalty draw)."""
    x, c, true_b = (
        torch.from_numpy(data.x_train),
        torch.as_tensor(program.c),
        nsp.rows_b(data.demand_train),
    )
    selection = nsp.penalties(data, factor, len(x), np.random.default_rng(seed + 1))
    scored = []
    with TwoStage(program, solver) as stages:
        optimal = stages.optimal_values(c.expand(len(x), -1), program.A, true_b)
        for alpha, model in models.items():
            with torch.no_grad():
                y1 = stage1(program, model(x), solver)
            scores = stages.score(
                y1, c, program.A, true_b, penalty=selection, drop_penalty=0.0, optimal=optimal
            )
            scored.append((torch.nan_to_num(scores.regret, nan=0.0).mean().item(), alpha))
    alpha = min(scored)[1]
    return alpha, models[alpha]


def stage1(program: Program, demand: np.ndarray | torch.Tensor, solver: str) -> torch.Tensor:
    """The schedules of predicted demands; all zeros where none serves them (Hu et al.'s rule)."""
    c = torch.as_tensor(program.c)
    with Oracle(program, solver=solver) as oracle:
        y, status = oracle(c.expand(len(demand), -1), program.A, nsp.rows_b(demand))
    y = y.to(torch.float64)
    y[torch.tensor([not Status(int(s)).has_solution for s in status], dtype=torch.bool)] = 0.0
    return y


def evaluate(
    stages: TwoStage,
    data: nsp.NurseData,
    program: Program,
    y1: torch.Tensor,
    optimal: torch.Tensor,
    factor: float,
    draws: Sequence[int],
) -> dict[str, Any]:
    """Post-hoc regret per penalty draw: the mean over every test instance, one whose demand no
    schedule serves counting 0 (the authors' code: no optimum, no Stage 2), and the mean over
    the instances with an optimum."""
    true_b = nsp.rows_b(data.demand_test)
    regrets, solved, infeasible = [], [], 0.0
    for draw in draws:
        penalty = nsp.penalties(data, factor, len(y1), np.random.default_rng(10_000 + draw))
        scores = stages.score(
            y1, program.c, program.A, true_b, penalty=penalty, drop_penalty=0.0, optimal=optimal
        )
        regrets.append(torch.nan_to_num(scores.regret, nan=0.0).mean().item())
        solved.append(scores.mean)
        infeasible = scores.infeasible[scores.solved].to(torch.float64).mean().item()
    return {
        "factor": factor,
        "post_hoc_regret": float(np.mean(regrets)),
        "std": float(np.std(regrets)),
        "per_draw": regrets,
        "solved_mean": float(np.mean(solved)),
        "infeasibility_rate": infeasible,
    }


def run_nsp(
    out: str | Path = "results/nsp",
    methods: Sequence[str] = METHODS,
    factors: Sequence[float] = nsp.FACTORS,
    draws: int = 10,
    setting: int = 0,
    solver: str = "highs",
    epochs: dict[str, int] | None = None,
    train_size: int | None = None,
    test_size: int | None = None,
    seed: int = 0,
    data_dir: Any = None,
    alphas: Sequence[float] = ODECE_ALPHAS,
    report: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every method at every factor on one setting; writes ``nsp-setting{K}.json`` (and a plot
    where matplotlib is installed) under ``out`` and returns the record. ``alphas``: odece's
    trade-off weights, one training each, the weight chosen per factor."""
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise ValueError(f"methods: unknown {unknown}; choose from {list(METHODS)}")
    epochs = {"combopt": 10, "post-hoc": 3, "odece": 3, **(epochs or {})}
    data = nsp.load(data_dir, setting)
    data = nsp.NurseData(
        data.x_train[:train_size],
        data.demand_train[:train_size],
        data.x_test[:test_size],
        data.demand_test[:test_size],
        data.preference,
        data.capacity,
    )
    program = nsp.schedule_program(data)
    torch.manual_seed(seed)
    rows: list[dict[str, Any]] = []
    trained_once: dict[str, Any] = {}  # what a method trains once for every factor
    with TwoStage(program, solver) as stages:
        optimal = stages.optimal_values(
            torch.as_tensor(program.c).expand(len(data.demand_test), -1),
            program.A,
            nsp.rows_b(data.demand_test),
        )
        for method in methods:
            for factor in factors if method in ("post-hoc", "odece") else (None,):
                started = time.perf_counter()
                demand = _predict(
                    method, data, program, solver, epochs, seed, factor, trained_once, alphas
                )
                y1 = stage1(program, demand, solver)
                trained = time.perf_counter() - started
                for at in factors if factor is None else (factor,):
                    chosen = (
                        {"alpha": trained_once["odece_alpha"][factor]} if method == "odece" else {}
                    )
                    row = {
                        "method": method,
                        "train_s": trained,
                        **chosen,
                        **evaluate(stages, data, program, y1, optimal, at, range(draws)),
                    }
                    rows.append(row)
                    report(
                        f"nsp setting {setting} {method} f={at:g}: post-hoc regret {row['post_hoc_regret']:.2f} "
                        f"+- {row['std']:.2f}, Stage 1 infeasible {100 * row['infeasibility_rate']:.0f} % "
                        f"({trained:.0f} s)"
                    )
    record = {
        "task": "nsp",
        "setting": setting,
        "solver": solver,
        "draws": draws,
        "seed": seed,
        "alphas": list(alphas),
        "train": len(data.x_train),
        "test": len(data.x_test),
        "epochs": epochs,
        "true_optimal_value": float(np.nanmean(optimal.numpy())),
        "published": nsp.PUBLISHED,
        "rows": rows,
    }
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"nsp-setting{setting}.json").write_text(json.dumps(record, indent=1))
    try:
        from ilplayer_experiments.plots import plot_post_hoc

        plot_post_hoc(record, folder / f"nsp-setting{setting}.png")
    except ImportError:  # matplotlib: the [demo] extra
        report("no plot: matplotlib is not installed (pip install 'ilplayer-experiments[demo]')")
    return record


def _predict(
    method: str,
    data: nsp.NurseData,
    program: Program,
    solver: str,
    epochs: dict[str, int],
    seed: int,
    factor: float | None,
    trained_once: dict[str, Any],
    alphas: Sequence[float] = ODECE_ALPHAS,
) -> np.ndarray | torch.Tensor:
    if method in BASELINES:
        return baseline_demand(method, data, seed)
    if (
        method == "odece"
    ):  # calibrations of the ridge regression, one per weight, the weight chosen per factor
        assert factor is not None, "odece's weight is chosen at one factor"
        if "odece" not in trained_once:
            base = Regressor(
                regressor("ridge", seed).fit(
                    data.x_train.reshape(-1, nsp.FEATURES), data.demand_train.reshape(-1)
                )
            )
            trained_once["odece"] = fit_odece(
                base, data, program, solver, epochs["odece"], seed, alphas
            )
        alpha, chosen = choose_odece(trained_once["odece"], data, program, solver, factor, seed)
        trained_once.setdefault("odece_alpha", {})[factor] = alpha
        with torch.no_grad():
            return chosen(torch.from_numpy(data.x_test))
    if method == "post-hoc":  # a calibration of the ridge regression, the best baseline here
        assert factor is not None, "the post-hoc method trains at one factor"
        base = Regressor(
            regressor("ridge", seed).fit(
                data.x_train.reshape(-1, nsp.FEATURES), data.demand_train.reshape(-1)
            )
        )
        model: torch.nn.Module = fit_post_hoc(
            base, data, program, factor, solver, epochs["post-hoc"], seed
        )
        with torch.no_grad():
            return model(torch.from_numpy(data.x_test))
    net = fit_squared_error(DemandNet(data), data)
    model = net
    if method == "combopt":
        model = fit_combopt(net, data, program, solver, epochs["combopt"], seed)
    with torch.no_grad():
        return model(torch.from_numpy(data.x_test))
