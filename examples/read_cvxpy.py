"""Facility location written in cvxpy, learned end to end: a linear model predicts the opening
and transport costs (the problem's parameters) from features; ``ilplayer.from_cvxpy`` turns
the mixed-integer problem into a layer, and the decisions' true cost is the loss.

    python examples/read_cvxpy.py --epochs 30
"""

from __future__ import annotations

import argparse

import cvxpy as cp
import numpy as np
import torch

import ilplayer


def facility_location(facilities: int, customers: int) -> tuple[cp.Problem, list, list]:
    open_ = cp.Variable(facilities, boolean=True, name="open")
    serve = cp.Variable((facilities, customers), nonneg=True, name="serve")
    opening = cp.Parameter(facilities, name="opening")
    transport = cp.Parameter((facilities, customers), name="transport")
    problem = cp.Problem(
        cp.Minimize(opening @ open_ + cp.sum(cp.multiply(transport, serve))),
        [
            cp.sum(serve, axis=0) == 1,  # every customer served
            serve
            <= cp.reshape(open_, (facilities, 1), order="F")
            @ np.ones((1, customers)),  # by an open one
            serve <= 1,
        ],
    )
    return problem, [opening, transport], [open_, serve]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facilities", type=int, default=3)
    parser.add_argument("--customers", type=int, default=6)
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--solver", default="highs")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    m, k = args.facilities, args.customers
    problem, parameters, variables = facility_location(m, k)
    layer = ilplayer.from_cvxpy(
        problem,
        parameters=parameters,
        variables=variables,
        solver=args.solver,
        method=ilplayer.gradients.Blackbox(lambd=20.0),
    )  # gradients for the costs
    # Features -> true costs through a hidden linear map (what the model has to learn).
    features = torch.randn(args.samples, 4, dtype=torch.float64)
    hidden = torch.randn(4, m + m * k, dtype=torch.float64)
    true = torch.nn.functional.softplus(features @ hidden) + 0.1
    true_opening, true_transport = true[:, :m] * 3, true[:, m:].reshape(-1, m, k)

    def cost(opening, transport, open_, serve):
        return (opening * open_).sum(-1) + (transport * serve).sum((-2, -1))

    with torch.no_grad():
        best = cost(true_opening, true_transport, *layer(true_opening, true_transport))
    model = torch.nn.Linear(4, m + m * k).double()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        predicted = model(features)
        opening, transport = predicted[:, :m], predicted[:, m:].reshape(-1, m, k)
        open_, serve = layer(opening, transport)
        realised = cost(true_opening, true_transport, open_, serve)
        loss = realised.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        regret = ((realised - best) / best).mean().item()
        print(f"epoch {epoch + 1:2d}: relative regret {100 * regret:5.1f} %")
    print(
        "decision of the first sample:",
        dict(zip(["open", "serve"], [v[0].tolist() for v in (open_, serve)])),
    )
    layer.layer.close()


if __name__ == "__main__":
    main()
