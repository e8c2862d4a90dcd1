"""SPO+ and perturbed Fenchel-Young (PFYL) on PyEPO's own models: PyEPO's loss on its model and
solver beside ilplayer's loss on the same model read with ``Oracle.from_pyepo``, on HiGHS and on
Gurobi. Same data (PyEPO's generators), linear model, initial weights and batches; regret by
``pyepo.metric.regret`` on held-out data; seconds per epoch (one torch thread; PyEPO solves in
its own process, its default; ilplayer with its default executor, or ``--executor``). With
``--repeats`` the pair runs that many times, the order swapped on every other repeat, and the
table gives the median of the repeats' ratios (the machine is shared: a ratio taken in one run
is what means something).

    python benchmarks/pyepo_models.py --train 200 --test 200 --epochs 5
    python benchmarks/pyepo_models.py --models knapsack --items 16 --methods pfyl --solvers gurobi \
        --train 1000 --epochs 2 --repeats 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch


def model_and_data(
    name: str, library_solver: str, train: int, test: int, seed: int, items: int = 32
):
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
        weights, x, c = pyepo.data.knapsack.genData(
            total, 5, items, dim=2, deg=4, noise_width=0.5, seed=seed
        )
        optmodel = family.knapsackModel(weights, [20.0, 20.0], **options)
    elif name in ("tsp-gg", "tsp-mtz"):
        x, c = pyepo.data.tsp.genData(total, 5, 8, deg=4, noise_width=0.5, seed=seed)
        optmodel = (family.tspGGModel if name == "tsp-gg" else family.tspMTZModel)(8, **options)
    elif name == "cvrp-mtz":
        x, c = pyepo.data.tsp.genData(total, 5, 6, deg=4, noise_width=0.5, seed=seed)
        demands = np.random.RandomState(seed).uniform(1, 4, size=5).round(1)
        optmodel = family.vrp.vrpMTZModel(
            6, demands=demands, capacity=8.0, num_vehicle=3, **options
        )
    else:
        raise ValueError(name)
    return optmodel, np.asarray(x, dtype=np.float64), np.asarray(c, dtype=np.float64)


def run(name: str, library: str, solver: str, method: str, args: argparse.Namespace) -> dict:
    import pyepo

    import ilplayer

    optmodel, x, c = model_and_data(
        name,
        solver if library == "pyepo" else "gurobi",
        args.train,
        args.test,
        args.seed,
        args.items,
    )
    train = pyepo.data.dataset.optDataset(optmodel, x[: args.train], c[: args.train])
    test = pyepo.data.dataset.optDataset(optmodel, x[args.train :], c[args.train :])
    xs, cs = torch.from_numpy(x[: args.train]), torch.from_numpy(c[: args.train])
    w, z = torch.as_tensor(train.sols).double(), torch.as_tensor(train.objs).double()
    torch.manual_seed(args.seed)
    model = torch.nn.Linear(x.shape[1], c.shape[1]).double()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    oracle = None
    if library == "pyepo":
        loss_fn = (
            pyepo.func.SPOPlus(optmodel, processes=1)
            if method == "spo+"
            else pyepo.func.perturbedFenchelYoung(
                optmodel, n_samples=args.samples, sigma=args.sigma, processes=1
            )
        )
    else:
        oracle = ilplayer.Oracle.from_pyepo(optmodel, solver=solver, executor=args.executor)
        loss_fn = (
            ilplayer.losses.SPOPlus(oracle)
            if method == "spo+"
            else ilplayer.losses.FenchelYoung(
                oracle, sigma=args.sigma, samples=args.samples, seed=args.seed
            )
        )
    order = np.random.default_rng(args.seed)
    seconds = []
    for _ in range(args.epochs):
        start = time.perf_counter()
        for rows in torch.from_numpy(order.permutation(args.train)).split(args.batch):
            if method == "pfyl":
                loss = loss_fn(model(xs[rows]), w[rows])
            elif library == "pyepo":
                loss = loss_fn(model(xs[rows]), cs[rows], w[rows], z[rows])
            else:
                loss = loss_fn(model(xs[rows]), cs[rows], y_true=w[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        seconds.append(time.perf_counter() - start)
    if oracle is not None:
        oracle.close()
    regret = pyepo.metric.regret(
        model.float(), optmodel, torch.utils.data.DataLoader(test, batch_size=64)
    )
    return {"regret": regret, "seconds": float(np.median(seconds))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--models",
        nargs="+",
        default=["shortest-path", "knapsack", "tsp-gg", "tsp-mtz", "cvrp-mtz"],
    )
    parser.add_argument("--solvers", nargs="+", default=["highs", "gurobi"])
    parser.add_argument("--train", type=int, default=200)
    parser.add_argument("--test", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--executor", default=None, help="ilplayer's executor (default: the oracle's, auto)"
    )
    parser.add_argument("--methods", nargs="+", default=["spo+"], choices=["spo+", "pfyl"])
    parser.add_argument("--items", type=int, default=32, help="knapsack: items (2 dimensions)")
    parser.add_argument(
        "--samples", type=int, default=10, help="pfyl: perturbations per instance (PyEPO's 10)"
    )
    parser.add_argument(
        "--sigma", type=float, default=1.0, help="pfyl: the noise's scale (PyEPO's 1)"
    )
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(1)  # 2 cores: torch's own threads would compete with the solver's
    print(
        "| model | method | solver | PyEPO regret | ilplayer regret | PyEPO s/epoch | ilplayer s/epoch | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in args.models:
        for method in args.methods:
            for solver in args.solvers:
                pairs = []
                for repeat in range(args.repeats):
                    order = ("pyepo", "ilplayer") if repeat % 2 == 0 else ("ilplayer", "pyepo")
                    pairs.append(
                        {library: run(name, library, solver, method, args) for library in order}
                    )
                theirs, ours = pairs[-1]["pyepo"], pairs[-1]["ilplayer"]
                ratio = float(
                    np.median([p["ilplayer"]["seconds"] / p["pyepo"]["seconds"] for p in pairs])
                )
                print(
                    f"| {name} | {method} | {solver} | {100 * theirs['regret']:.2f} % | "
                    f"{100 * ours['regret']:.2f} % | {theirs['seconds']:.2f} | {ours['seconds']:.2f} | "
                    f"{ratio:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
