"""What makes repeated solving cheap: warm-start pools, solve() reusing its backends, one
torch thread in the backward, and the benchmark command that measures them."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer import PersistentModelSolver, Status, backend_cache
from ilplayer.bench import FAMILIES, family_batch
from ilplayer.cli import main
from ilplayer.solver import SolutionPool
from tests.host_solvers import EnumerationSolver


def test_the_pool_returns_its_cheapest_point_and_forgets_the_oldest():
    pool = SolutionPool(num_variables=2, capacity=2)
    assert pool.best_for(np.array([1.0, 1.0])) is None
    for point in ([0, 1], [1, 0], [0, 1]):  # the repeat is not stored twice
        pool.add(np.array(point, dtype=float))
    assert pool.size == 2
    assert pool.best_for(np.array([1.0, -1.0])).tolist() == [0.0, 1.0]
    assert pool.best_for(np.array([1.0, -2.0])).tolist() == [0.0, 1.0]
    pool.add(np.array([1.0, 1.0]))  # evicts [0, 1], the oldest
    assert pool.best_for(np.array([1.0, -2.0])).tolist() == [1.0, 1.0]


class StartRecordingSolver(PersistentModelSolver):
    """Exact enumeration behind the persistent-model contract; records the starts it is given."""

    name = "start-recording"

    def __init__(self, warm_start=None, tag=None):
        super().__init__(warm_start=warm_start)
        self.starts = []

    def build_model(self, batch):
        return EnumerationSolver.feasible_points(batch)

    def solve_instance(self, model, c):
        if not len(model):
            return Status.INFEASIBLE, None
        return Status.OPTIMAL, model[np.argmin(model @ c)]

    def set_start(self, model, point):
        self.starts.append(point.copy())


def test_a_revisited_instance_starts_from_its_previous_solution():
    solver = StartRecordingSolver()
    c = torch.tensor([[-1.0, -2.0, 0.5], [2.0, -1.0, -1.0]], dtype=torch.float64)
    A, b = torch.tensor([[1.0, 1.0, 1.0]], dtype=torch.float64), torch.tensor([2.0], dtype=torch.float64)
    y, _ = ilplayer.solve(c, A, b, lb=0, ub=1, solver=solver)
    solver.starts.clear()
    ilplayer.solve(c * 1.01, A, b, lb=0, ub=1, solver=solver)
    # each instance starts from the pooled point that is cheapest for it: its own last answer
    assert [s.tolist() for s in solver.starts] == y.tolist()
    cold = StartRecordingSolver(warm_start=False)
    ilplayer.solve(c, A, b, lb=0, ub=1, solver=cold)
    ilplayer.solve(c, A, b, lb=0, ub=1, solver=cold)
    assert cold.starts == []
    with pytest.raises(TypeError, match="warm_start must be True, False or None"):
        StartRecordingSolver(warm_start="yes")


def test_solve_reuses_its_backend_per_thread_until_released(monkeypatch):
    built = []
    real = backend_cache.get_solver
    monkeypatch.setattr(backend_cache, "get_solver", lambda *a, **k: built.append(a) or real(*a, **k))
    ilplayer.release_solvers()
    c, A, b = torch.randn(3, 4), torch.ones(1, 4), torch.ones(1)
    for _ in range(3):
        ilplayer.solve(c, A, b, solver="bruteforce")
    assert len(built) == 1
    ilplayer.solve(c, A, b, solver="bruteforce", solver_options={"max_points": 2**10})
    assert len(built) == 2  # other options: another backend

    def other_thread():
        ilplayer.solve(c, A, b, solver="bruteforce")

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    assert len(built) == 3  # a backend is never shared between threads
    ilplayer.release_solvers()
    ilplayer.solve(c, A, b, solver="bruteforce")
    assert len(built) == 4
    ilplayer.release_solvers()


def test_solve_with_an_option_that_cannot_be_a_key_builds_afresh_and_keeps_nothing():
    ilplayer.register_solver("start-recording", StartRecordingSolver, replace=True)
    try:
        c, A, b = torch.randn(2, 3), torch.ones(1, 3), torch.ones(1)
        _, status = ilplayer.solve(c, A, b, solver="start-recording", solver_options={"tag": {1, 2}})
        assert (status == Status.OPTIMAL).all()
        assert not any(key[0] == "start-recording" for key in backend_cache._thread_cache().entries)
    finally:
        ilplayer.unregister_solver("start-recording")


def test_backward_runs_on_one_torch_thread_and_restores_the_setting():
    seen = []
    layer = ilplayer.ILPLayer(lb=0, ub=1)
    c = torch.randn(4, 5, requires_grad=True)
    A, b = torch.rand(2, 5), torch.ones(2)
    torch.set_num_threads(2)
    try:
        y = layer(c, A, b)
        y.register_hook(lambda grad: seen.append(torch.get_num_threads()))
        y.sum().backward()
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)
    assert c.grad is not None
    with pytest.raises(ValueError, match="backward_threads must be a positive integer or None"):
        ilplayer.ILPLayer(lb=0, ub=1, backward_threads=0)


def test_knapsack_family_has_one_row_and_a_reachable_capacity():
    batch = family_batch("knapsack", 5)
    assert "knapsack" in FAMILIES and batch.A.shape == (1, 16) and (batch.c < 0).all()
    assert 0 < batch.b[0] < batch.A.sum()


def test_bench_command_writes_rows_and_a_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out, png = tmp_path / "rows.json", tmp_path / "ratios.png"
    assert main(["bench", "solvers", "--backends", "bruteforce", "--families", "binary m=1",
                 "--batch", "4", "--json", str(out), "--plot", str(png)]) == 0
    rows = json.loads(out.read_text())
    assert rows and rows[0]["backend"] == "bruteforce" and rows[0]["ratio"] == 1.0
    assert png.stat().st_size > 0
    assert main(["bench", "reuse", "--backends", "bruteforce", "--families", "binary m=4",
                 "--json", str(out)]) == 0
    assert json.loads(out.read_text())[0]["benchmark"] == "reuse"
    assert "solve_ms" in capsys.readouterr().out
