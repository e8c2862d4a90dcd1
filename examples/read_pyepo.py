"""A PyEPO model trained with SPO+ on HiGHS: ``Oracle.from_pyepo`` reads PyEPO's own
shortest-path model (gurobipy inside; solved here by HiGHS, or any backend), and ilplayer's
SPO+ trains a linear model on PyEPO's data; regret by PyEPO's own metric.

    python examples/read_pyepo.py --epochs 5
"""

from __future__ import annotations

import argparse

import pyepo
import torch
from pyepo.model.grb import shortestPathModel

import ilplayer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--train", type=int, default=1000)
    parser.add_argument("--solver", default="highs")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    optmodel = shortestPathModel(grid=(5, 5))
    x, c = pyepo.data.shortestpath.genData(
        args.train + 1000, 5, (5, 5), deg=4, noise_width=0.5, seed=135
    )
    train = pyepo.data.dataset.optDataset(optmodel, x[: args.train], c[: args.train])
    test = pyepo.data.dataset.optDataset(optmodel, x[args.train :], c[args.train :])
    oracle = ilplayer.Oracle.from_pyepo(optmodel, solver=args.solver)
    spo = ilplayer.losses.SPOPlus(oracle)
    model = torch.nn.Linear(5, optmodel.num_cost)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(train, batch_size=32, shuffle=True)
    test_loader = torch.utils.data.DataLoader(test, batch_size=256)
    for epoch in range(args.epochs):
        for features, costs, solutions, _ in loader:
            loss = spo(model(features), costs, y_true=solutions)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(
            f"epoch {epoch + 1}: test regret {100 * pyepo.metric.regret(model, optmodel, test_loader):.2f} %"
        )
    oracle.close()


if __name__ == "__main__":
    main()
