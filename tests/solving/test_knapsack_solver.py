"""The built-in ``knapsack`` backend (meet in the middle for one-row programs) against the
exhaustive oracle, and what it refuses."""

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer import Status
from ilplayer.testing.fuzz import fuzz_backend
from ilplayer.testing.fuzz_cases import fuzz_cases


def test_one_row_fuzz_cases_agree_with_exhaustive_enumeration():
    """The fuzz cases in its scope: at most one row with non-zero coefficients, rows of zeros
    that hold or not, no equality (boxes binary, wide, negative and per-variable; integer,
    tight and infeasible rows; float32 data)."""
    with ilplayer.get_solver("knapsack") as solver:
        report = fuzz_backend(solver, fuzz_cases(4000))
    assert report.instances >= 1900 and report.feasible >= 1000
    assert report.counts == {"ok": report.instances}, report.row()


def _knapsacks(batch: int, n: int, seed: int, alike: bool) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    spread = (
        0.01 if alike else 0.2
    )  # alike: the untrained network's items, deep for branch and bound
    price = 0.25 + spread * torch.rand(batch, n, generator=g, dtype=torch.float64)
    weight = 0.25 + spread * torch.rand(batch, n, generator=g, dtype=torch.float64)
    return -price, weight[:, None, :], torch.full((batch, 1), 0.1 * n, dtype=torch.float64)


@pytest.mark.parametrize("alike", [False, True])
def test_twenty_item_knapsacks_match_bruteforce(alike):
    c, A, b = _knapsacks(12, 20, seed=3, alike=alike)
    y, status = ilplayer.solve(c, A, b, 0, 1, solver="knapsack")
    y_ref, _ = ilplayer.solve(c, A, b, 0, 1, solver="bruteforce")
    assert (status == Status.OPTIMAL).all() and ((A[:, 0] * y).sum(-1) <= b[:, 0] + 1e-6).all()
    torch.testing.assert_close((c * y).sum(-1), (c * y_ref).sum(-1), rtol=0, atol=1e-12)


def test_thirty_item_knapsacks_match_a_mip_backend():
    if "highs" not in ilplayer.available_solvers():
        pytest.skip("needs the highs plugin: pip install -e plugins/ilplayer-highs")
    c, A, b = _knapsacks(6, 30, seed=4, alike=False)
    y, status = ilplayer.solve(c, A, b, 0, 1, solver="knapsack")
    y_ref, status_ref = ilplayer.solve(c, A, b, 0, 1, solver="highs")
    assert (status == Status.OPTIMAL).all() and (status_ref == Status.OPTIMAL).all()
    torch.testing.assert_close((c * y).sum(-1), (c * y_ref).sum(-1), rtol=0, atol=1e-9)


def test_a_shared_row_on_a_wide_box_and_an_infeasible_instance_in_one_batch():
    c = torch.tensor([[-1.0, -2.0, 0.5], [1.0, 1.0, 1.0]], dtype=torch.float64)
    A = torch.tensor([[[1.0, 1.0, -1.0]], [[1.0, 1.0, 1.0]]], dtype=torch.float64)
    b = torch.tensor(
        [[2.0], [-7.0]], dtype=torch.float64
    )  # the second row is at least -6 on [-2, 3]^3
    y, status = ilplayer.solve(c, A, b, -2, 3, solver="knapsack")
    assert Status.names(status) == ["optimal", "infeasible"]
    assert y[0].tolist() == [
        2.0,
        3.0,
        3.0,
    ]  # 2 + 3 - 3 <= 2 at cost -6.5, against every point below
    points = torch.cartesian_prod(*[torch.arange(-2, 4, dtype=torch.float64)] * 3)
    feasible = points @ A[0, 0] <= 2.0
    assert (c[0] * y[0]).sum() == (points[feasible] @ c[0]).min()


def test_it_refuses_more_rows_equalities_and_boxes_past_its_halves():
    c, A, b = torch.zeros(1, 4), torch.ones(2, 4), torch.ones(2)
    with pytest.raises(
        ValueError, match="A: 2 rows with non-zero coefficients; solver 'knapsack' solves"
    ):
        ilplayer.solve(c, A, b, 0, 1, solver="knapsack")
    with pytest.raises(ValueError, match="A_eq: 1 equality row"):
        ilplayer.solve(
            c, A[:1], b[:1], 0, 1, solver="knapsack", A_eq=torch.ones(1, 4), b_eq=torch.ones(1)
        )
    with pytest.raises(
        ValueError, match=r"lb/ub: the box holds .* more than solver 'knapsack' enumerates"
    ):
        ilplayer.solve(
            torch.zeros(1, 42), torch.ones(1, 42), torch.ones(1), 0, 1, solver="knapsack"
        )
    with pytest.raises(ValueError, match="max_half_points must be a positive integer"):
        ilplayer.get_solver("knapsack", max_half_points=0)


def test_combopt_trains_through_it():
    c, A, b = (t.float().requires_grad_() for t in _knapsacks(4, 12, seed=5, alike=False))
    layer = ilplayer.ILPLayer(0, 1, solver="knapsack")
    y = layer(c, A, b)
    (y * torch.arange(12.0)).sum().backward()
    assert y.dtype == torch.float32 and all(
        t.grad is not None and torch.isfinite(t.grad).all() for t in (c, A, b)
    )
    assert np.isin(y.detach().numpy(), [0.0, 1.0]).all()


def test_the_host_and_the_tensor_paths_give_the_same_answers():
    # `solve` (an ILPBatch on the host, NumPy) and `solve_tensors` (torch, any device) take
    # the same steps: the same points, ties included (integer costs and weights), on boxes of
    # every sign, rows of zeros that hold or fail, and infeasible rows.
    from ilplayer.core.records import ILPBatch
    from ilplayer.core.validation import validate_problem

    rng = np.random.default_rng(8)
    solver = ilplayer.get_solver("knapsack")
    for trial in range(300):
        n, m = int(rng.integers(1, 9)), int(rng.integers(1, 4))
        lb = rng.integers(-3, 1, n).astype(float)
        ub = lb + rng.integers(0, 4, n)
        integer = trial % 2 == 0
        draw = (
            (lambda *s: rng.integers(-3, 4, s).astype(float))
            if integer
            else (lambda *s: rng.normal(size=s))
        )
        A = np.zeros((m, n))
        A[int(rng.integers(m))] = draw(n)
        b = draw(m) + (2.0 if trial % 5 else -20.0)  # a fifth of them infeasible
        batch = ILPBatch(c=draw(6, n), A=A, b=b, lb=lb, ub=ub)
        host = solver.solve(batch)
        problem = validate_problem(torch.tensor(batch.c), torch.tensor(A), torch.tensor(b), lb, ub)
        y, status, objective = (t.numpy() for t in solver.solve_tensors(problem))
        assert np.array_equal(host.status, status), trial
        assert np.array_equal(host.y, y), trial
        assert np.allclose(host.objective, objective, equal_nan=True), trial
