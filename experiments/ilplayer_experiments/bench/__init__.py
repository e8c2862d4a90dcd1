"""Benchmarks reachable from the command line: ``ilplayer bench solvers | warm | reuse |
backward | parallel | scale``. Each prints a table; ratios are taken within one run, and every run
ends with the speed targets its rows can check (`ilplayer_experiments.bench.targets`)."""

from __future__ import annotations

from ilplayer.testing.instances import BENCH_FAMILIES as FAMILIES
from ilplayer.testing.instances import check_family, family_batch
from ilplayer_experiments.bench.parallel import (
    EXECUTORS,
    PARALLEL_FAMILIES,
    IdealSplit,
    dispatched_groups,
    ideal_split,
    parallel_benchmark,
)
from ilplayer_experiments.bench.solvers import (
    MIP_BACKENDS,
    SOLVER_FAMILIES,
    ReferenceLayerSolver,
    backward_benchmark,
    installed_backends,
    reuse_benchmark,
    rotated,
    solvers_benchmark,
    warm_benchmark,
)
from ilplayer_experiments.bench.targets import plot_rows, print_rows, target_rows

__all__ = [
    "EXECUTORS",
    "FAMILIES",
    "MIP_BACKENDS",
    "PARALLEL_FAMILIES",
    "SOLVER_FAMILIES",
    "IdealSplit",
    "ReferenceLayerSolver",
    "backward_benchmark",
    "check_family",
    "dispatched_groups",
    "family_batch",
    "ideal_split",
    "installed_backends",
    "parallel_benchmark",
    "plot_rows",
    "print_rows",
    "reuse_benchmark",
    "rotated",
    "solvers_benchmark",
    "target_rows",
    "warm_benchmark",
]
