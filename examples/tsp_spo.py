"""Learn TSP edge costs with SPO+ through a mixed-integer program (PyEPO's GG formulation).

Binary arcs x_ij (both directions of every edge) and continuous flows y_ij make the program;
the model predicts one cost per undirected edge, and the layer's `cost_map` (`embed`) puts
each on the edge's two arcs and reads a solution back per edge, so the loss (and any noise a
method adds) lives on the edges, as in PyEPO.
Run: python examples/tsp_spo.py  (HiGHS; add --solver gurobi for Gurobi's pip licence)
"""

import argparse
from itertools import combinations

import numpy as np
import torch

import ilplayer
from ilplayer.losses import SPOPlus
from ilplayer.metrics import regret


def gg_program(n: int):
    """min c.x s.t. one arc into and out of each node; flows y_ij <= (n-1) x_ij carry one unit
    to every node but 0. Variables: 2E binary arcs, then 2E continuous flows."""
    edges = list(combinations(range(n), 2))
    arcs = edges + [(j, i) for i, j in edges]
    index = {a: k for k, a in enumerate(arcs)}
    size = 2 * len(arcs)
    flow = lambda a: len(arcs) + index[a]
    A_eq, b_eq, A, b = [], [], [], []
    for j in range(n):
        into, out = np.zeros(size), np.zeros(size)
        into[[index[(i, j)] for i in range(n) if i != j]] = 1
        out[[index[(j, k)] for k in range(n) if k != j]] = 1
        A_eq += [into, out]
        b_eq += [1, 1]
    for i in range(1, n):
        row = np.zeros(size)
        row[[flow((i, j)) for j in range(n) if j != i]] = 1
        row[[flow((j, i)) for j in range(1, n) if j != i]] = -1
        A_eq.append(row)
        b_eq.append(1)
    for i, j in arcs:
        if i != 0:
            row = np.zeros(size)
            row[flow((i, j))], row[index[(i, j)]] = 1, -(n - 1)
            A.append(row)
            b.append(0)
    embed = np.zeros((size, len(edges)))
    embed[np.arange(len(edges)), np.arange(len(edges))] = 1
    embed[len(edges) + np.arange(len(edges)), np.arange(len(edges))] = 1
    integrality = np.r_[np.ones(len(arcs)), np.zeros(len(arcs))]
    ub = np.r_[np.ones(len(arcs)), np.full(len(arcs), n - 1.0)]
    t = lambda a: torch.tensor(np.array(a), dtype=torch.float64)
    return t(A), t(b), t(A_eq), t(b_eq), ub, integrality, t(embed)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--solver", default="highs")
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=600, help="instances: 5/6 train, 1/6 test")
    args = parser.parse_args()
    torch.set_num_threads(1)  # the solves use the cores; the model is tiny
    A, b, A_eq, b_eq, ub, integrality, embed = gg_program(args.nodes)
    # Data: costs per edge from 5 features (PyEPO's generator, reimplemented in ilplayer)
    from ilplayer_experiments.tsp import tsp_data

    x, c = tsp_data(args.samples, 5, args.nodes, deg=4, noise_width=0.5, seed=135)
    x, c = torch.tensor(x), torch.tensor(c, dtype=torch.float64)
    split = args.samples * 5 // 6
    x_train, c_train, x_test, c_test = x[:split], c[:split], x[split:], c[split:]

    # Costs and decisions per edge: the program's costs are c @ embed.T, its answers y @ embed.
    layer = ilplayer.ILPLayer(
        lb=0,
        ub=ub,
        integrality=integrality,
        solver=args.solver,
        method="identity",
        cost_map=embed,
    )
    constraints = {"A": A, "b": b, "A_eq": A_eq, "b_eq": b_eq}
    solve = lambda costs: layer.oracle.solve_batch(costs, **constraints)[0]
    y_train, y_test = solve(c_train), solve(c_test)
    torch.manual_seed(0)
    model = torch.nn.Linear(5, c.shape[1]).double()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    spo = SPOPlus(layer)
    for epoch in range(args.epochs):
        for first in range(0, len(x_train), 32):
            rows = slice(first, first + 32)
            loss = spo(
                model(x_train[rows]),
                c_train[rows],
                A,
                b,
                y_true=y_train[rows],
                A_eq=A_eq,
                b_eq=b_eq,
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            tours = solve(model(x_test))  # the edges each predicted tour uses
        print(f"epoch {epoch + 1}: test regret {100 * regret(c_test, tours, y_test):.1f} %")
    layer.close()


if __name__ == "__main__":
    main()
