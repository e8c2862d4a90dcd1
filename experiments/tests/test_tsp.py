"""PyEPO's TSP as a mixed-integer program: data, both formulations, every MILP backend, the
copyable example script and the experiment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from ilplayer.testing.formulations import FORMULATIONS, tsp_program
from ilplayer_experiments import decision_focused as dfl
from ilplayer_experiments.tsp import solve_tours, tsp_data
from tests.host_solvers import MILP_BACKENDS, require

ROOT = Path(__file__).resolve().parents[2]


def best_tour_lengths(c: np.ndarray, n: int) -> np.ndarray:
    """The optimal tour's length for each edge-cost row, by enumerating every tour from 0."""
    import itertools

    edge = {e: k for k, e in enumerate(itertools.combinations(range(n), 2))}
    tours = [(0, *p) for p in itertools.permutations(range(1, n)) if p[0] < p[-1]]
    used = np.zeros((len(tours), len(edge)))
    for t, tour in enumerate(tours):
        for i, j in zip(tour, tour[1:] + tour[:1]):
            used[t, edge[(min(i, j), max(i, j))]] = 1
    return (c @ used.T).min(axis=1)


def test_data_is_pyepos():
    pyepo = pytest.importorskip(
        "pyepo", reason="needs the pyepo extra: pip install 'ilplayer[pyepo]'"
    )
    x, c = tsp_data(30, 5, 7, deg=4, noise_width=0.5, seed=3)
    px, pc = pyepo.data.tsp.genData(30, 5, 7, deg=4, noise_width=0.5, seed=3)
    assert np.array_equal(c, pc) and np.array_equal(x, px)


@pytest.mark.parametrize("formulation", FORMULATIONS)
@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_tours_are_optimal_on_every_milp_backend(formulation, backend):
    require(backend)
    n = 6
    _, c = tsp_data(12, 5, n, deg=2, noise_width=0.5, seed=1)
    program = tsp_program(n, formulation)
    used, status = solve_tours(program, torch.from_numpy(c.astype(np.float64)), solver=backend)
    assert (status == 0).all()
    assert (used.sum(1) == n).all()  # n edges, each of the n nodes twice
    assert sorted(program.tour(used[0].numpy())) == list(range(n))  # one cycle through every node
    lengths = (torch.from_numpy(c.astype(np.float64)) * used).sum(1).numpy()
    assert np.allclose(lengths, best_tour_lengths(c.astype(np.float64), n), atol=1e-6)


def test_pure_integer_backends_refuse_the_tsp_clearly():
    require("cpsat")
    with pytest.raises(ValueError, match="integrality: variable 20 is continuous"):
        solve_tours(tsp_program(5, "gg"), torch.ones(1, 10), solver="cpsat")


def test_spo_plus_learns_on_the_tsp():
    require("highs")
    task = dfl.make_task("tsp", 64, 32, nodes=5, formulation="mtz")
    record = dfl.run_method(task, "spo+", "highs", epochs=3, seed=0, executor="serial")
    assert record["regret"] < record["history"][0]["regret"]


def test_the_documented_script_runs():
    require("highs")
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "tsp_spo.py"),
            "--nodes",
            "5",
            "--samples",
            "96",
            "--epochs",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "epoch 2: test regret" in done.stdout
