"""Predict-then-optimise on PyEPO's tasks: learn a linear map from features to costs so that
the decisions optimised on the predicted costs have low regret under the true ones.

Tasks (data by PyEPO 2.2.7's generators, reimplemented exactly; a test checks them against
PyEPO when it is installed):

* ``shortest-path``: a 5 x 5 grid, 40 edges, from the top-left to the bottom-right node; the
  flow conservation rows are equalities ``A_eq y = b_eq``; minimise.
* ``knapsack-regret``: 32 items, 2 weight rows of capacity 20 each; maximise the value.
* ``tsp``: PyEPO's travelling salesperson (8 nodes by default), a mixed-integer program in
  its GG or MTZ formulation (`ilplayer_experiments.tsp`): binary arcs, continuous flows
  or orders; the costs per edge reach the program through the layer's ``cost_map``
  (``Task.embed``), so every method works on the edges, as PyEPO's do: losses, noise and
  decisions per edge (CombOptNet's gradient, which lives in the program's variables, gets the
  arcs' and flows' costs ``c @ embed.T`` and its decisions are read back as ``y @ embed``).

Methods, every one on any backend: ``2s`` (two-stage: MSE on the costs), ``spo+``
([`SPOPlus`][ilplayer.losses.SPOPlus]), ``pfyl`` ([`FenchelYoung`][ilplayer.losses.FenchelYoung]),
``dbb`` (blackbox gradient on the decision's true objective), ``nid`` (negative identity,
same loss), ``dpo`` (perturbed optimiser, MSE to the true decision), ``combopt``
(CombOptNet's gradient, MSE to the true decision), and PyEPO's other methods: ``pg``
([`PerturbationGradient`][ilplayer.losses.PerturbationGradient]), ``nce``, ``cmap``, ``ptltr``, ``prltr``,
``lsltr`` (over a pool seeded with the training decisions, ``solve_ratio`` 0.05 as PyEPO's
examples), ``pfymul`` (Fenchel-Young, multiplicative noise), ``dpomul``, ``imle`` and
``aimle`` (layer gradients, L1 to the true decision), ``rfwo`` (the L2-regularised optimiser by
Frank-Wolfe, MSE to the true decision), ``rfy`` (its Fenchel-Young loss) and ``cave`` (CaVE+,
[`CaVE`][ilplayer.losses.CaVE] with 3 Clarabel steps; PyEPO's needs its Gurobi model). When
PyEPO is installed, its own method of the same name runs on the same data and splits
(`PYEPO_METHODS`), with its Gurobi model or its Pyomo model on HiGHS, for comparison.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ilplayer.core.seeding import derive_seed
from ilplayer.gradients import (
    IMLE,
    AdaptiveIMLE,
    Blackbox,
    CombOptNet,
    FrankWolfe,
    GradientMethod,
    Identity,
    Perturbed,
)
from ilplayer.layer import ILPLayer
from ilplayer.losses import (
    NCE,
    CaVE,
    ContrastiveMAP,
    FenchelYoung,
    ListwiseLTR,
    PairwiseLTR,
    PerturbationGradient,
    PointwiseLTR,
    RegularizedFenchelYoung,
    SPOPlus,
)
from ilplayer.metrics import regret
from ilplayer.oracle import Oracle
from ilplayer.program import Program

__all__ = [
    "METHODS",
    "TASKS",
    "Task",
    "knapsack_data",
    "make_task",
    "method_fits",
    "run_method",
    "shortest_path_data",
    "task_label",
    "task_title",
]

POOL_METHODS = ("nce", "cmap", "ptltr", "prltr", "lsltr")
DECISION_METHODS = ("dpomul", "imle", "aimle")  # layer gradients, L1 to the true decision
METHODS = (
    "2s",
    "spo+",
    "pfyl",
    "dbb",
    "nid",
    "dpo",
    "combopt",
    "pg",
    *POOL_METHODS,
    "pfymul",
    *DECISION_METHODS,
    "rfwo",
    "rfy",
    "cave",
)
TASKS = ("shortest-path", "knapsack-regret", "tsp")
PYEPO_NOISE = 135  # PyEPO's default noise seed, whatever the training seed
PYEPO_METHODS = (
    "spo+",
    "pfyl",
    "dbb",
    "pg",
    *POOL_METHODS,
    "pfymul",
    *DECISION_METHODS,
    "rfwo",
    "rfy",
    "cave",
)
POOL_SOLVE_RATIO = 0.05  # the pool losses' share of solved batches (PyEPO's examples)


def grid_arcs(grid: tuple[int, int]) -> list[tuple[int, int]]:
    """PyEPO's arc order on a grid: per row, the arcs to the right, then those downwards."""
    arcs = []
    for i in range(grid[0]):
        for j in range(grid[1] - 1):
            v = i * grid[1] + j
            arcs.append((v, v + 1))
        if i == grid[0] - 1:
            continue
        for j in range(grid[1]):
            v = i * grid[1] + j
            arcs.append((v, v + grid[1]))
    return arcs


def shortest_path_data(
    num_data: int,
    num_features: int,
    grid: tuple[int, int],
    deg: int = 1,
    noise_width: float = 0.0,
    seed: int = 135,
) -> tuple[np.ndarray, np.ndarray]:
    """``pyepo.data.shortestpath.genData``, the same numbers for the same arguments."""
    rnd = np.random.RandomState(seed)
    d = (grid[0] - 1) * grid[1] + (grid[1] - 1) * grid[0]
    B = rnd.binomial(1, 0.5, (d, num_features))
    x = rnd.normal(0, 1, (num_data, num_features))
    c = (x @ B.T / np.sqrt(num_features) + 3) ** deg + 1
    c /= 3.5**deg
    c *= rnd.uniform(1 - noise_width, 1 + noise_width, (num_data, d))
    return x, c.astype(np.float32)


def knapsack_data(
    num_data: int,
    num_features: int,
    num_items: int,
    dim: int,
    deg: int = 1,
    noise_width: float = 0.0,
    seed: int = 135,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``pyepo.data.knapsack.genData``, the same numbers for the same arguments."""
    rnd = np.random.RandomState(seed)
    weights = rnd.choice(range(300, 800), size=(dim, num_items)) / 100
    B = rnd.binomial(1, 0.5, (num_items, num_features))
    x = rnd.normal(0, 1, (num_data, num_features))
    c = (x @ B.T / np.sqrt(num_features) + 3) ** deg + 1
    c *= 5
    c /= 3.5**deg
    c *= rnd.uniform(1 - noise_width, 1 + noise_width, (num_data, num_items))
    return weights, x, np.ceil(c).astype(np.float32)


@dataclass
class Task:
    """Features, true costs and the fixed constraints of one predict-then-optimise task."""

    name: str
    sense: str
    x_train: torch.Tensor
    c_train: torch.Tensor
    x_test: torch.Tensor
    c_test: torch.Tensor
    A: torch.Tensor
    b: torch.Tensor
    A_eq: torch.Tensor | None
    b_eq: torch.Tensor | None
    pyepo_args: dict[str, Any]
    lb: Any = 0
    ub: Any = 1
    integrality: Any = None
    embed: torch.Tensor | None = None
    """(variables, cost entries) when the program's variables are not the costs' (the TSP's
    arcs and flows for its edge costs): the layers' ``cost_map``."""

    def constraints(self) -> dict[str, Any]:
        return {"A": self.A, "b": self.b, "A_eq": self.A_eq, "b_eq": self.b_eq}


def make_task(
    name: str,
    train_size: int = 1000,
    test_size: int = 1000,
    num_features: int = 5,
    deg: int = 4,
    noise_width: float = 0.5,
    seed: int = 135,
    nodes: int = 8,
    formulation: str = "gg",
    grid: int = 5,
    items: int = 32,
    dim: int = 2,
) -> Task:
    """The data of ``name`` (PyEPO's settings: 5 features, polynomial degree 4, noise 0.5;
    ``grid`` (a grid x grid shortest path), ``items`` and ``dim`` (the knapsack's items and
    weight rows, capacity 20 each), ``nodes`` and ``formulation`` for the TSP)."""
    total = train_size + test_size
    t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64))
    if name == "shortest-path":
        shape = (grid, grid)
        extra: dict[str, Any]
        x, c = shortest_path_data(total, num_features, shape, deg, noise_width, seed)
        arcs = grid_arcs(shape)
        nodes = grid * grid
        A_eq = np.zeros((nodes, len(arcs)))
        for k, (u, v) in enumerate(arcs):
            A_eq[u, k], A_eq[v, k] = -1.0, 1.0
        b_eq = np.zeros(nodes)
        b_eq[0], b_eq[-1] = -1.0, 1.0
        A, b = np.zeros((0, len(arcs))), np.zeros(0)
        sense, extra = "min", {"grid": shape}
    elif name == "knapsack-regret":
        weights, x, c = knapsack_data(total, num_features, items, dim, deg, noise_width, seed)
        A, b, A_eq, b_eq = weights, np.full(dim, 20.0), None, None
        sense, extra = "max", {"weights": weights, "capacity": [20.0] * dim}
    elif name == "tsp":
        from ilplayer.testing.formulations import tsp_program
        from ilplayer_experiments.tsp import tsp_data

        x, c = tsp_data(total, num_features, nodes, deg, noise_width, seed)
        program = tsp_program(nodes, formulation)
        return Task(
            name,
            "min",
            t(x[:train_size]),
            t(c[:train_size]),
            t(x[train_size:]),
            t(c[train_size:]),
            t(program.A),
            t(program.b),
            t(program.A_eq),
            t(program.b_eq),
            {"nodes": nodes, "formulation": formulation},
            lb=program.lb,
            ub=program.ub,
            integrality=program.integrality,
            embed=t(program.embed),
        )
    else:
        raise ValueError(f"task must be one of {TASKS}, got {name!r}")
    return Task(
        name,
        sense,
        t(x[:train_size]),
        t(c[:train_size]),
        t(x[train_size:]),
        t(c[train_size:]),
        t(A),
        t(b),
        None if A_eq is None else t(A_eq),
        None if b_eq is None else t(b_eq),
        extra,
    )


def task_label(name: str, options: dict[str, Any]) -> str:
    """The task's name in record names: with its size where that is not the default."""
    if name == "tsp":
        return f"tsp{options.get('nodes', 8)}-{options.get('formulation', 'gg')}"
    if name == "shortest-path" and options.get("grid", 5) != 5:
        return f"shortest-path{options['grid']}x{options['grid']}"
    if name == "knapsack-regret" and (options.get("items", 32), options.get("dim", 2)) != (32, 2):
        return f"knapsack-regret-{options.get('items', 32)}items-dim{options.get('dim', 2)}"
    return name


def task_title(name: str, options: dict[str, Any]) -> str:
    """A plot title for the task at its size."""
    if name == "tsp":
        return (
            f"TSP, {options.get('nodes', 8)} nodes, {options.get('formulation', 'gg').upper()} "
            "(mixed-integer)"
        )
    if name == "shortest-path":
        return f"Shortest path, {options.get('grid', 5)} x {options.get('grid', 5)} grid"
    return f"Knapsack, {options.get('items', 32)} items, {options.get('dim', 2)} rows"


def method_fits(method: str, task: Task, refuse: bool = False) -> bool:
    """Whether ``method`` runs on ``task``: CaVE reads the binding rows in the program's own
    variables, so not on a task whose costs reach the program through a map (the TSP's
    edges); with ``refuse``, a clear error instead of False."""
    if method == "cave" and task.embed is not None:
        if refuse:
            raise ValueError(
                f"method 'cave' does not run on {task.name}: its costs are per edge and reach the "
                "program's arcs through a cost map, while CaVE's cone is spanned by the rows binding "
                "in the program's own variables"
            )
        return False
    return True


class EpochBatches:
    """The training batches of each epoch, a fresh shuffle per pass, from the seed's own stream:
    ilplayer's loop and PyEPO's DataLoader (as its ``batch_sampler``) see the same batches."""

    def __init__(self, size: int, batch_size: int, seed: int) -> None:
        self.size, self.batch_size = size, batch_size
        self.generator = torch.Generator().manual_seed(derive_seed(seed, 2))

    def __iter__(self) -> Any:
        order = torch.randperm(self.size, generator=self.generator)
        return iter(
            [
                order[first : first + self.batch_size].tolist()
                for first in range(0, self.size, self.batch_size)
            ]
        )

    def __len__(self) -> int:
        return -(-self.size // self.batch_size)


def _optimal(oracle: Oracle, c: torch.Tensor) -> torch.Tensor:
    """The optimal decisions (per cost entry) for the costs ``c``."""
    y, status = oracle.solve_batch(c)
    if not bool((status == 0).all()):
        raise RuntimeError(f"{int((status != 0).sum())} instances not solved to optimality")
    return y


def noise_seed_of(method: str, seed: int) -> int:
    """The noise stream of ``method``'s run with training ``seed``: ilplayer's, and PyEPO's run
    of the same method unless told otherwise (both draw each row's samples together)."""
    return derive_seed(seed, 5 if method in DECISION_METHODS else 6)


def _cost_losses(
    method: str, oracle: Oracle, y_train: torch.Tensor, seed: int, solve_ratio: float | None
) -> Any:
    """The loss module of a cost-loss ``method`` (None for the others); the pool losses start
    from the training decisions, with ``solve_ratio`` (default 0.05), as do the others when a
    ``solve_ratio`` is given."""
    pooled: dict[str, Any] = {
        "solve_ratio": POOL_SOLVE_RATIO if solve_ratio is None else solve_ratio,
        "pool": y_train,
        "seed": derive_seed(seed, 7),
    }
    some = {} if solve_ratio is None else pooled  # the solving losses: pooled only when asked
    noise_seed = noise_seed_of(method, seed)
    builders = {
        "spo+": lambda: SPOPlus(oracle, **some),
        "pfyl": lambda: FenchelYoung(oracle, sigma=1.0, samples=10, seed=noise_seed, **some),
        "pfymul": lambda: FenchelYoung(
            oracle, sigma=1.0, samples=10, seed=noise_seed, noise="multiplicative", **some
        ),
        "pg": lambda: PerturbationGradient(oracle, sigma=0.1, **some),
        "nce": lambda: NCE(oracle, **pooled),
        "cmap": lambda: ContrastiveMAP(oracle, **pooled),
        "ptltr": lambda: PointwiseLTR(oracle, **pooled),
        "prltr": lambda: PairwiseLTR(oracle, **pooled),
        "lsltr": lambda: ListwiseLTR(oracle, **pooled),
        "rfy": lambda: RegularizedFenchelYoung(oracle, lambd=1.0, **some),
        "cave": lambda: CaVE(oracle, max_iter=3),
    }
    return builders[method]() if method in builders else None


def run_method(
    task: Task,
    method: str,
    solver: str,
    *,
    epochs: int = 10,
    lr: float = 1e-2,
    batch_size: int = 32,
    seed: int = 0,
    executor: str | None = None,
    workers: int | None = None,
    solve_ratio: float | None = None,
) -> dict[str, Any]:
    """Train PyEPO's linear model with ``method`` on ``solver`` (its batches solved on
    ``executor``, the layer's default when None); normalised test regret and seconds per epoch
    (the regret of the untrained model too). ``solve_ratio``: the cost losses answer the other
    batches from a pool seeded with the training decisions (the pool losses: 0.05 unless given)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    method_fits(method, task, refuse=True)
    torch.manual_seed(derive_seed(seed, 1))
    model = torch.nn.Linear(task.x_train.shape[1], task.c_train.shape[1]).double()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    noise_seed = noise_seed_of(method, seed)
    method_object: GradientMethod = {
        "dbb": Blackbox(lambd=10.0),
        "dpo": Perturbed(sigma=1.0, samples=10, seed=noise_seed),
        "combopt": CombOptNet(),
        "dpomul": Perturbed(
            sigma=1.0, samples=10, seed=noise_seed, noise="multiplicative", variance_reduction=True
        ),  # PyEPO's default
        "imle": IMLE(sigma=1.0, samples=10, lambd=10.0, seed=noise_seed),
        "aimle": AdaptiveIMLE(sigma=1.0, samples=10, seed=noise_seed),
        "rfwo": FrankWolfe(lambd=1.0),
    }.get(method, Identity())  # the losses solve through the oracle
    # The task's constraints live in the program (PyEPO's optModel holds them too): the calls
    # below pass costs alone, and the pool losses skip re-checking the rows per batch.
    # CombOptNet's gradient lives in the program's variables: it gets their costs (below).
    embed = task.embed if method == "combopt" else None
    program = Program(
        A=task.A,
        b=task.b,
        A_eq=task.A_eq,
        b_eq=task.b_eq,
        lb=task.lb,
        ub=task.ub,
        integrality=task.integrality,
        sense=task.sense,
    )
    oracle = Oracle(
        dataclasses.replace(program, cost_map=task.embed if embed is None else None),
        solver=solver,
        executor=executor,
        workers=workers,
    )
    layer = ILPLayer(oracle, method_object)
    # Its exact solves (the true decisions, the test) go through the same map as the others'.
    reference = (
        oracle
        if embed is None
        else Oracle(
            dataclasses.replace(program, cost_map=embed),
            solver=solver,
            executor=executor,
            workers=workers,
        )
    )
    sign = 1.0 if task.sense == "min" else -1.0
    y_train = _optimal(reference, task.c_train)
    y_test = _optimal(reference, task.c_test)
    losses = _cost_losses(method, oracle, y_train, seed, solve_ratio)

    def test_regret() -> float:
        with torch.no_grad():
            decisions = _optimal(reference, model(task.x_test))
        return regret(task.c_test, decisions, y_test, sense=task.sense)

    history = [{"epoch": 0, "regret": test_regret(), "seconds": 0.0}]
    batches = EpochBatches(len(task.x_train), batch_size, seed)
    for epoch in range(epochs):
        start = time.perf_counter()
        for rows in batches:
            c_pred, c_true = model(task.x_train[rows]), task.c_train[rows]
            y_true = y_train[rows]
            if method == "2s":
                loss = torch.nn.functional.mse_loss(c_pred, c_true)
            elif method == "spo+":
                loss = losses(c_pred, c_true, y_true=y_true)
            elif method in (
                "pfyl",
                "pfymul",
                "nce",
                "cmap",
                "rfy",
                "cave",
            ):  # against the true decisions
                loss = losses(c_pred, y_true)
            elif method in ("pg", "ptltr", "prltr", "lsltr"):  # against the true costs
                loss = losses(c_pred, c_true)
            elif method in ("dbb", "nid"):  # the decision's true objective, to be minimised
                loss = sign * (c_true * layer(c_pred)).sum(-1).mean()
            elif method in DECISION_METHODS:  # L1 to the true decision (PyEPO's examples)
                loss = (layer(c_pred) - y_true).abs().sum(-1).mean()
            elif (
                embed is not None
            ):  # combopt on the program's variables, its decisions read per edge
                loss = ((layer(c_pred @ embed.T) @ embed - y_true) ** 2).sum(-1).mean()
            else:  # dpo, combopt: distance to the true decision
                loss = ((layer(c_pred) - y_true) ** 2).sum(-1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        seconds = time.perf_counter() - start
        history.append({"epoch": epoch + 1, "regret": test_regret(), "seconds": seconds})
    oracle.close()
    if reference is not oracle:
        reference.close()
    return {
        "task": task.name,
        "method": method,
        "solver": solver,
        "library": "ilplayer",
        "seed": seed,
        "executor": executor or "auto",
        "workers": workers,
        "epochs": epochs,
        "lr": lr,
        "solve_ratio": solve_ratio,
        "batch_size": batch_size,
        "train_size": len(task.x_train),
        "test_size": len(task.x_test),
        "regret": history[-1]["regret"],
        "seconds_per_epoch": float(np.mean([h["seconds"] for h in history[1:]])) if epochs else 0.0,
        "history": history,
    }
