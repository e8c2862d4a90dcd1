"""A gurobipy model solved by any backend: ``Program.from_gurobipy`` reads a knapsack with
side constraints; a batch of value scenarios is solved on HiGHS (or SCIP, CP-SAT, ...) and
each answer checked against Gurobi's own ``optimize()``.

    python examples/read_gurobipy.py --solver highs
"""

from __future__ import annotations

import argparse

import gurobipy as gp
import numpy as np
import torch

import ilplayer


def knapsack(values: np.ndarray, weights: np.ndarray, capacity: float) -> gp.Model:
    model = gp.Model(env=gp.Env(params={"OutputFlag": 0}))
    take = model.addVars(len(values), vtype=gp.GRB.BINARY, name="take")
    model.addConstr(
        gp.quicksum(w * take[i] for i, w in enumerate(weights)) <= capacity, name="capacity"
    )
    model.addConstr(take[0] + take[1] <= 1, name="either_first_or_second")
    model.setObjective(gp.quicksum(v * take[i] for i, v in enumerate(values)), gp.GRB.MAXIMIZE)
    model.update()
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=12)
    parser.add_argument("--scenarios", type=int, default=6)
    parser.add_argument("--solver", default="highs")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    weights, capacity = rng.uniform(1, 5, args.items).round(2), 0.4 * args.items * 3
    program = ilplayer.Program.from_gurobipy(
        knapsack(rng.uniform(1, 10, args.items).round(2), weights, capacity)
    )
    print(program)
    scenarios = torch.from_numpy(rng.uniform(1, 10, (args.scenarios, args.items)).round(2))
    with ilplayer.Oracle(program, solver=args.solver) as oracle:
        y, status = oracle(scenarios)
    for i, values in enumerate(scenarios.numpy()):
        model = knapsack(values, weights, capacity)
        model.optimize()
        taken = [name for name, v in program.values(y[i]).items() if v > 0.5]
        print(
            f"scenario {i}: value {float(scenarios[i] @ y[i].double()):.2f} (Gurobi: {model.ObjVal:.2f}), "
            f"{', '.join(taken)}"
        )


if __name__ == "__main__":
    main()
