"""Sparse constraints stay sparse: scipy.sparse and torch sparse A, A_eq reach the backends as
CSR matrices, with the dense answers, on every backend."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer.core.matrices import is_sparse
from ilplayer.core.validation import validate_problem
from ilplayer.testing.formulations import grid_network
from tests.host_solvers import require

sparse = pytest.importorskip("scipy.sparse")


grid = grid_network


@pytest.mark.parametrize(
    "backend", ["highs", "gurobi", "scip", "pyomo:appsi_highs", "cpsat", "bruteforce"]
)
def test_sparse_rows_give_the_dense_answers(backend):
    require(backend)
    rng = np.random.default_rng(0)
    A_eq, b_eq = grid(3)
    n = A_eq.shape[1]
    A = sparse.random(2, n, density=0.4, random_state=1, format="csr") * 3
    b = np.array([1.5, 2.0])
    c = rng.uniform(-1, 1, (6, n))
    y, status = ilplayer.solve(c, A, b, 0, 1, solver=backend, A_eq=A_eq, b_eq=b_eq)
    y_dense, status_dense = ilplayer.solve(
        c, A.toarray(), b, 0, 1, solver=backend, A_eq=A_eq.toarray(), b_eq=b_eq
    )
    assert np.array_equal(status, status_dense)
    assert np.allclose((c * y).sum(1), (c * y_dense).sum(1))


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_torch_sparse_without_grad_stays_sparse(layout):
    A_eq, b_eq = grid(3)
    t = torch.sparse_coo_tensor(np.vstack(A_eq.nonzero()), A_eq.data, A_eq.shape)
    if layout == "csr":
        t = t.to_sparse_csr()
    problem = validate_problem(
        torch.ones(2, A_eq.shape[1]), None, None, 0, 1, t, torch.from_numpy(b_eq)
    )
    assert is_sparse(problem.A_eq) and (problem.A_eq != A_eq).nnz == 0
    ((_, batch),) = problem.host_groups()
    assert is_sparse(batch.A_eq)


def test_no_dense_copy_on_the_way_to_the_backend():
    require("highs")
    A_eq, b_eq = grid(30)  # 900 x 1740: 12.5 MB dense
    c = np.random.default_rng(1).uniform(0.1, 1, (4, A_eq.shape[1]))
    ilplayer.solve(
        c[:1], None, None, 0, 1, solver="highs", executor="serial", A_eq=A_eq, b_eq=b_eq
    )  # imports
    tracemalloc.start()
    y, status = ilplayer.solve(
        c, None, None, 0, 1, solver="highs", executor="serial", A_eq=A_eq, b_eq=b_eq
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert (status == 0).all() and ((y @ A_eq.T.toarray()) == b_eq).all()
    assert peak < 4 * 2**20, f"{peak / 2**20:.1f} MB traced: a dense copy of the rows is 12.5 MB"


def test_sparse_rows_that_require_grad_are_densified_for_combopt():
    require("highs")
    A = torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]).to_sparse().requires_grad_(True)
    layer = ilplayer.ILPLayer(0, 1, solver="highs")
    y = layer(torch.tensor([[-1.0, -2.0, -1.0]]), A, torch.tensor([1.0, 1.0]))
    ((y - torch.tensor([[1.0, 0.0, 1.0]])) ** 2).sum().backward()
    assert A.grad is not None


def test_bad_sparse_input_is_named():
    A = sparse.csr_matrix(np.array([[1.0, np.inf]]))
    with pytest.raises(ValueError, match="A must be finite"):
        ilplayer.solve(torch.ones(1, 2), A, torch.ones(1), 0, 1)
    with pytest.raises(ValueError, match=r"A has 3 columns but c has 2"):
        ilplayer.solve(torch.ones(1, 2), sparse.csr_matrix(np.ones((1, 3))), torch.ones(1), 0, 1)


def test_grid_network_matches_the_experiments_dense_rows():
    from ilplayer_experiments.decision_focused import make_task

    task = make_task("shortest-path", 2, 2, grid=4)
    A_eq, b_eq = grid_network(4)
    assert np.array_equal(A_eq.toarray(), task.A_eq.numpy()) and np.array_equal(
        b_eq, task.b_eq.numpy()
    )


def test_bench_scale_measures_one_size_beside_the_direct_model():
    require("highs")
    from ilplayer_experiments.bench.scale import fit_exponent, measure_one

    row = measure_one("shortest-path", 6, "highs", 3)
    assert row["optimal"] == 3 and row["objective_gap"] < 1e-6 and row["variables"] == 60
    # memory growth is a difference of two RSS readings: the allocator may hand pages back
    assert row["ms_per_instance"] > 0 and row["direct_ms"] > 0
    assert np.isfinite(row["memory_growth_mb"])
    assert fit_exponent([10, 100, 1000], [1.0, 100.0, 10000.0]) == pytest.approx(2.0)


def test_model_key_sees_the_sparse_values():
    from ilplayer.core.records import ILPBatch
    from ilplayer.solvers.persistent import PersistentModelSolver

    one = sparse.csr_matrix(np.array([[1.0, 0.0, 2.0]]))
    two = sparse.csr_matrix(np.array([[1.0, 0.0, 3.0]]))
    make = lambda A: ILPBatch(c=np.ones((1, 3)), A=A, b=np.ones(1), lb=np.zeros(3), ub=np.ones(3))
    assert PersistentModelSolver.model_key(make(one)) != PersistentModelSolver.model_key(make(two))
    assert PersistentModelSolver.model_key(make(one)) == PersistentModelSolver.model_key(
        make(one.copy())
    )
