"""SPO+ on PyEPO's own models: PyEPO's loss on its model and solver beside ilplayer's loss on
the same model read with ``Oracle.from_pyepo``, on HiGHS and on Gurobi. Same data (PyEPO's
generators), linear model, initial weights and batches; regret by ``pyepo.metric.regret``
on held-out data; seconds per epoch (one torch thread; PyEPO solves in its own process, its
default; ilplayer with its default executor, or ``--executor``).

    python benchmarks/pyepo_models.py --train 200 --test 200 --epochs 5
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch


def model_and_data(name: str, library_solver: str, train: int, test: int, seed: int):
    """A fresh PyEPO model (gurobipy, or Pyomo on HiGHS) and its features and costs."""
    import pyepo
    from pyepo.model import grb, omo

    family = grb if library_solver == "gurobi" else omo
    options = {} if library_solver == "gurobi" else {"solver": "appsi_highs"}
    total = train + test
    if name == "shortest-path":
        x, c = pyepo.data.shortestpath.genData(total, 5, (5, 5), deg=4, noise_width=0.5, seed=seed)
        optmodel = family.shortestPathModel((5, 5), **options)
    elif name == "knapsack":
        weights, x, c = pyepo.data.knapsack.genData(total, 5, 32, dim=2, deg=4, noise_width=0.5, seed=seed)
        optmodel = family.knapsackModel(weights, [20.0, 20.0], **options)
    elif name in ("tsp-gg", "tsp-mtz"):
        x, c = pyepo.data.tsp.genData(total, 5, 8, deg=4, noise_width=0.5, seed=seed)
        optmodel = (family.tspGGModel if name == "tsp-gg" else family.tspMTZModel)(8, **options)
    elif name == "cvrp-mtz":
        x, c = pyepo.data.tsp.genData(total, 5, 6, deg=4, noise_width=0.5, seed=seed)
        demands = np.random.RandomState(seed).uniform(1, 4, size=5).round(1)
        optmodel = family.vrp.vrpMTZModel(6, demands=demands, capacity=8.0, num_vehicle=3, **options)
    else:
        raise ValueError(name)
    return optmodel, np.asarray(x, dtype=np.float64), np.asarray(c, dtype=np.float64)


def run(name: str, library: str, solver: str, args: argparse.Namespace) -> dict:
    import pyepo

    import ilplayer

    optmodel, x, c = model_and_data(name, solver if library == "pyepo" else "gurobi", args.train, args.test,
                                    args.seed)
    train = pyepo.data.dataset.optDataset(optmodel, x[:args.train], c[:args.train])
    test = pyepo.data.dataset.optDataset(optmodel, x[args.train:], c[args.train:])
    xs, cs = torch.from_numpy(x[:args.train]), torch.from_numpy(c[:args.train])
    w, z = torch.as_tensor(train.sols).double(), torch.as_tensor(train.objs).double()
    torch.manual_seed(args.seed)
    model = torch.nn.Linear(x.shape[1], c.shape[1]).double()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    oracle = None
    if library == "pyepo":
        spo = pyepo.func.SPOPlus(optmodel, processes=1)
    else:
        oracle = ilplayer.Oracle.from_pyepo(optmodel, solver=solver, executor=args.executor)
        spo = ilplayer.losses.SPOPlus(oracle)
    order = np.random.default_rng(args.seed)
    seconds = []
    for _ in range(args.epochs):
        start = time.perf_counter()
        for rows in torch.from_numpy(order.permutation(args.train)).split(args.batch):
            if library == "pyepo":
                loss = spo(model(xs[rows]), cs[rows], w[rows], z[rows])
            else:
                loss = spo(model(xs[rows]), cs[rows], y_true=w[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        seconds.append(time.perf_counter() - start)
    if oracle is not None:
        oracle.close()
    regret = pyepo.metric.regret(model.float(), optmodel, torch.utils.data.DataLoader(test, batch_size=64))
    return {"regret": regret, "seconds": float(np.median(seconds))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["shortest-path", "knapsack", "tsp-gg", "tsp-mtz",
                                                        "cvrp-mtz"])
    parser.add_argument("--solvers", nargs="+", default=["highs", "gurobi"])
    parser.add_argument("--train", type=int, default=200)
    parser.add_argument("--test", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--executor", default=None, help="ilplayer's executor (default: the oracle's, auto)")
    args = parser.parse_args()
    torch.set_num_threads(1)  # 2 cores: torch's own threads would compete with the solver's
    print("| model | solver | PyEPO regret | ilplayer regret | PyEPO s/epoch | ilplayer s/epoch | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models:
        for solver in args.solvers:
            theirs = run(name, "pyepo", solver, args)
            ours = run(name, "ilplayer", solver, args)
            print(f"| {name} | {solver} | {100 * theirs['regret']:.2f} % | {100 * ours['regret']:.2f} % | "
                  f"{theirs['seconds']:.2f} | {ours['seconds']:.2f} | {ours['seconds'] / theirs['seconds']:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
