"""Seconds per training epoch of ilplayer's cost-learning methods against PyEPO's own, on
PyEPO's tasks and data, interleaved in one run (the machine is shared: only ratios taken in one
run mean something).

Each repeat trains every configuration for ``--epochs`` epochs, each method's runs side by side
(PyEPO's first, then ilplayer's; the order reversed on every other repeat); the table gives the
median seconds per epoch over the repeats and its ratio to PyEPO's same method with the same
solver (its Gurobi model beside ilplayer on Gurobi, its Pyomo model with HiGHS beside ilplayer
on HiGHS; one process, its default). torch uses one intra-op thread throughout.

    python benchmarks/dfl_epochs.py --task shortest-path --grid 10 --methods spo+ pfyl dbb \\
        --backends highs gurobi --executors auto processes --repeats 3
    python benchmarks/dfl_epochs.py --task tsp --nodes 8 --methods spo+ --backends gurobi --train-size 300
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict

import torch

from ilplayer_experiments import decision_focused as dfl
from ilplayer_experiments.pyepo_runs import run_pyepo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", choices=dfl.TASKS, default="shortest-path")
    parser.add_argument("--methods", nargs="*", default=["spo+", "pfyl", "dbb"])
    parser.add_argument("--backends", nargs="*", default=["highs", "gurobi"])
    parser.add_argument(
        "--executors",
        nargs="*",
        default=["auto"],
        help="ilplayer executors to time (auto = threads for these backends)",
    )
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--grid", type=int, default=5, help="shortest path: a grid x grid network")
    parser.add_argument("--nodes", type=int, default=8, help="tsp: cities")
    parser.add_argument("--train-size", type=int, default=1000)
    parser.add_argument("--test-size", type=int, default=100, help="(only the epochs are timed)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    task = dfl.make_task(
        args.task, args.train_size, args.test_size, grid=args.grid, nodes=args.nodes
    )
    same = {"gurobi": "gurobi", "highs": "pyomo:highs"}  # PyEPO's model on the same solver
    runs = [
        ("pyepo", method, same[backend], "1 process")
        for method in args.methods
        if method in dfl.PYEPO_METHODS
        for backend in args.backends
        if backend in same
    ]
    runs += [
        ("ilplayer", method, backend, executor)
        for method in args.methods
        for backend in args.backends
        for executor in args.executors
    ]
    seconds: dict[tuple, list[float]] = defaultdict(list)
    for repeat in range(args.repeats):
        # Each method's runs side by side, PyEPO first on even repeats and last on odd ones:
        # what runs earlier in the process (memory, solver environments) favours neither.
        order = [run for method in args.methods for run in runs if run[1] == method]
        for library, method, backend, executor in order if repeat % 2 == 0 else order[::-1]:
            if library == "pyepo":
                record = run_pyepo(task, method, epochs=args.epochs, solver=backend)
            else:
                record = dfl.run_method(
                    task, method, backend, epochs=args.epochs, executor=executor
                )
            seconds[(library, method, backend, executor)].append(record["seconds_per_epoch"])
    print(
        f"{dfl.task_title(args.task, {'grid': args.grid, 'nodes': args.nodes})}: seconds per epoch (median of "
        f"{args.repeats} repeats x {args.epochs} epochs, {args.train_size} training instances), ratio to "
        "PyEPO's same method on the same solver"
    )
    print(
        f"{'library':<9} {'method':<6} {'backend':<12} {'executor':<10} {'s/epoch':>8} {'ratio':>6}"
    )
    for key in runs:
        library, method, backend, executor = key
        median = statistics.median(seconds[key])
        reference = seconds.get(("pyepo", method, same.get(backend, backend), "1 process"))
        ratio = f"{median / statistics.median(reference):6.2f}" if reference else "     –"
        print(f"{library:<9} {method:<6} {backend:<12} {executor:<10} {median:8.3f} {ratio}")


if __name__ == "__main__":
    main()
