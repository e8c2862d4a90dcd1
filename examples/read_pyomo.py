"""A production plan written in Pyomo, solved for a batch of price scenarios by ilplayer:
``Program.from_pyomo`` reads the model once; each scenario is a cost vector; the answers
are read back by Pyomo's variable names and checked against Pyomo's own solve.

    python examples/read_pyomo.py --scenarios 8
"""

from __future__ import annotations

import argparse

import numpy as np
import pyomo.environ as pe
import torch

import ilplayer

PRODUCTS = {
    "chairs": (2.0, 1.0),
    "tables": (5.0, 3.0),
    "shelves": (3.0, 2.5),
}  # hours of work, wood


def production_plan(price: dict[str, float]) -> pe.ConcreteModel:
    model = pe.ConcreteModel()
    model.make = pe.Var(list(PRODUCTS), domain=pe.NonNegativeIntegers, bounds=(0, 20))
    model.overtime = pe.Var(domain=pe.NonNegativeReals, bounds=(0, 10))
    model.hours = pe.Constraint(
        expr=sum(PRODUCTS[p][0] * model.make[p] for p in PRODUCTS) <= 40 + model.overtime
    )
    model.wood = pe.Constraint(expr=sum(PRODUCTS[p][1] * model.make[p] for p in PRODUCTS) <= 25)
    model.profit = pe.Objective(
        expr=sum(price[p] * model.make[p] for p in PRODUCTS) - 4.0 * model.overtime,
        sense=pe.maximize,
    )
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", type=int, default=8)
    parser.add_argument("--solver", default="highs")
    args = parser.parse_args()
    base = {"chairs": 10.0, "tables": 30.0, "shelves": 18.0}
    program = ilplayer.Program.from_pyomo(production_plan(base))
    print(program, "columns:", program.variable_names)
    # Scenarios: the model's own objective with the product prices scaled up or down.
    rng = np.random.default_rng(0)
    costs = program.c.repeat(args.scenarios, 1)
    for j, name in enumerate(program.variable_names):
        if name.startswith("make"):
            costs[:, j] *= torch.from_numpy(rng.uniform(0.7, 1.3, args.scenarios))
    with ilplayer.Oracle(program, solver=args.solver) as oracle:
        y, status = oracle(costs)
    for i, plan in enumerate(program.values(y)["make[tables]"].tolist()):
        price = {p: float(costs[i, program.variable_names.index(f"make[{p}]")]) for p in PRODUCTS}
        model = production_plan(price)
        pe.SolverFactory("appsi_highs").solve(model)
        ours = float(costs[i] @ y[i].double())
        print(
            f"scenario {i}: tables {plan:.0f}, profit {ours:.2f} (Pyomo's own solve: {pe.value(model.profit):.2f})"
        )


if __name__ == "__main__":
    main()
