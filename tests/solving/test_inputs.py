"""Inputs beyond plain dense float tensors get the right answer: numpy, sparse, m = 0, narrow
dtypes, all-zero rows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer import Status


def test_numpy_in_numpy_out():
    c = np.array([[-1.0, -2.0], [1.0, 1.0]])
    y, status = ilplayer.solve(c, np.ones((1, 2)), np.array([1.0]), lb=0, ub=1)
    assert isinstance(y, np.ndarray) and isinstance(status, np.ndarray)
    assert y.tolist() == [[0.0, 1.0], [0.0, 0.0]]
    assert Status.names(status) == ["optimal", "optimal"]


def test_scipy_sparse_A_is_solved_like_its_dense_copy():
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(0)
    dense = rng.uniform(-1, 1, (3, 6)) * (rng.random((3, 6)) < 0.5)
    c, b = torch.from_numpy(rng.uniform(-1, 1, (4, 6))), torch.full((3,), 0.5, dtype=torch.float64)
    expected, _ = ilplayer.solve(c, torch.from_numpy(dense), b, lb=-1, ub=1)
    for matrix in (sparse.csr_matrix(dense), sparse.coo_array(dense)):
        y, _ = ilplayer.solve(c, matrix, b, lb=-1, ub=1)
        assert torch.equal(y, expected)


def test_torch_sparse_A_gets_solved_and_a_gradient():
    dense = torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    A = dense.to_sparse().requires_grad_()
    c = torch.tensor([[-1.0, -1.0, -1.0]], requires_grad=True)
    layer = ilplayer.ILPLayer(lb=0, ub=1)
    y = layer(c, A, torch.ones(2))
    assert y.tolist() == ilplayer.solve(c.detach(), dense, torch.ones(2))[0].tolist()
    (y * torch.tensor([[1.0, -1.0, 0.5]])).sum().backward()
    assert A.grad is not None and A.grad.shape == A.shape


@pytest.mark.parametrize("solver", ["bruteforce", "highs", "gurobi", "cpsat", "scip"])
def test_box_only_problems_are_solved(solver):
    if solver not in ilplayer.available_solvers():
        pytest.skip(f"backend {solver!r} is not installed")
    c = torch.tensor([[1.0, -1.0, 0.5], [-2.0, 3.0, -0.5]])
    lb, ub = [-1, 0, 2], [1, 3, 4]
    for A, b in (
        (torch.zeros(0, 3), torch.zeros(0)),
        (None, None),
        (torch.zeros(2, 0, 3), torch.zeros(2, 0)),
    ):
        y, status = ilplayer.solve(c, A, b, lb=lb, ub=ub, solver=solver)
        assert y.tolist() == [[-1.0, 3.0, 2.0], [1.0, 0.0, 4.0]]
        assert Status.names(status) == ["optimal", "optimal"]


def test_box_only_layer_has_a_cost_gradient():
    c = torch.tensor([[1.0, -1.0]], requires_grad=True)
    A = torch.zeros(0, 2, requires_grad=True)
    b = torch.zeros(0, requires_grad=True)
    y = ilplayer.ILPLayer(lb=0, ub=1)(c, A, b)
    y.sum().backward()
    assert c.grad.abs().sum() > 0 and A.grad.shape == (0, 2) and b.grad.shape == (0,)


@pytest.mark.parametrize(
    "dtype, reach, expected",
    [
        (torch.float16, 2048, torch.float16),
        (torch.float16, 2049, torch.float32),
        (torch.bfloat16, 256, torch.bfloat16),
        (torch.bfloat16, 257, torch.float32),
        (torch.float32, 2**24 + 1, torch.float64),
        (torch.float64, 2**40, torch.float64),
    ],
)
def test_y_dtype_holds_every_integer_of_the_box(dtype, reach, expected):
    c = torch.tensor([[-1.0]], dtype=dtype)
    y, _ = ilplayer.solve(
        c,
        None,
        None,
        lb=0,
        ub=reach,
        solver="highs" if "highs" in ilplayer.available_solvers() else "bruteforce",
    )
    assert y.dtype == expected and int(y.item()) == reach


def test_half_precision_layer_returns_exact_integers_and_casts_the_gradient_back():
    c = torch.tensor([[-1.0, 1.0]], dtype=torch.bfloat16, requires_grad=True)
    layer = ilplayer.ILPLayer(
        lb=0, ub=257, solver="bruteforce", solver_options={"max_points": 2**17}
    )
    y = layer(
        c,
        torch.tensor([[1.0, 0.0]], dtype=torch.bfloat16),
        torch.tensor([300.0], dtype=torch.bfloat16),
    )
    assert y.dtype == torch.float32 and y.tolist() == [[257.0, 0.0]]
    y.sum().backward()
    assert c.grad.dtype == torch.bfloat16


def test_all_zero_rows_are_decided_by_their_right_hand_side():
    c = torch.tensor([[-1.0, -1.0], [-1.0, -1.0]])
    A = torch.tensor([[[1.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 0.0]]])
    b = torch.tensor([[1.0, 0.0], [1.0, -0.5]])  # 0 <= 0 holds; 0 <= -0.5 does not
    for solver in ilplayer.available_solvers():
        y, status = ilplayer.solve(c, A, b, lb=0, ub=1, solver=solver)
        assert Status.names(status) == ["optimal", "infeasible"], solver
        assert y[0].sum() == 1


def _run_script(tmp_path, body: str):
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )


def test_processes_from_an_unguarded_script_raise_naming_the_guard(tmp_path):
    if "highs" not in ilplayer.available_solvers():  # bruteforce solves on the device: no pool
        pytest.skip("needs a host backend (highs)")
    done = _run_script(
        tmp_path,
        """
        import torch, ilplayer
        ilplayer.solve(-1 - torch.rand(4, 3), torch.ones(1, 3), torch.ones(1), solver="highs",
                       executor="processes", workers=2, mp_context="spawn")
        """,
    )  # negative costs: the box optimum (all ones) breaks the row, so a pool must start
    assert done.returncode != 0
    assert 'without an `if __name__ == "__main__":` guard' in done.stderr
    assert "script.py (line 3)" in done.stderr


def test_processes_from_a_guarded_script_solve(tmp_path):
    if "highs" not in ilplayer.available_solvers():
        pytest.skip("needs a host backend (highs)")
    done = _run_script(
        tmp_path,
        """
        import torch, ilplayer

        def main():
            y, status = ilplayer.solve(torch.randn(4, 3), torch.ones(1, 3), torch.ones(1),
                                       solver="highs", executor="processes", workers=2,
                                       mp_context="spawn")
            print(ilplayer.Status.names(status))

        if __name__ == "__main__":
            main()
        """,
    )
    assert done.returncode == 0, done.stderr
    assert "['optimal', 'optimal', 'optimal', 'optimal']" in done.stdout


LOSS_CASES = {  # loss -> (its constructor on an oracle, the target it takes)
    "SPOPlus": (lambda oracle: ilplayer.losses.SPOPlus(oracle), "c_true"),
    "FenchelYoung": (
        lambda oracle: ilplayer.losses.FenchelYoung(oracle, samples=2, seed=0),
        "y_true",
    ),
    "PerturbationGradient": (lambda oracle: ilplayer.losses.PerturbationGradient(oracle), "c_true"),
    "RegularizedFenchelYoung": (
        lambda oracle: ilplayer.losses.RegularizedFenchelYoung(oracle),
        "y_true",
    ),
    "NCE": (lambda oracle: ilplayer.losses.NCE(oracle, pool=np.eye(3)), "y_true"),
    "PairwiseLTR": (lambda oracle: ilplayer.losses.PairwiseLTR(oracle, pool=np.eye(3)), "c_true"),
    "CaVE": (lambda oracle: ilplayer.losses.CaVE(oracle), "y_true"),
}


@pytest.mark.parametrize("name", sorted(LOSS_CASES))
def test_every_loss_checks_its_inputs_naming_itself_and_the_argument(name):
    """The checks ilplayer.solve makes: the type, the shape, NaN; each error names the loss
    and the argument at fault, before anything is solved."""
    make, target = LOSS_CASES[name]
    loss = make(ilplayer.Oracle(ilplayer.Program(lb=0, ub=1), solver="bruteforce"))
    c = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    A, b = torch.ones(1, 3, dtype=torch.float64), torch.tensor([2.0], dtype=torch.float64)
    good = torch.zeros(4, 3, dtype=torch.float64)
    with pytest.raises(
        ValueError, match=rf"^{name}: {target} must have c_pred's shape \(4, 3\) .* got \(4, 2\)"
    ):
        loss(c, good[:, :2], A, b)
    with pytest.raises(
        ValueError, match=rf"^{name}: {target} must be finite; found nan at index \(1, 2\)"
    ):
        loss(
            c,
            good.index_put(
                (torch.tensor(1), torch.tensor(2)), torch.tensor(float("nan"), dtype=torch.float64)
            ),
            A,
            b,
        )
    with pytest.raises(
        ValueError, match=rf"^{name}: c_pred must be finite; found inf at index \(0, 0\)"
    ):
        loss(
            c.detach().index_put(
                (torch.tensor(0), torch.tensor(0)), torch.tensor(float("inf"), dtype=torch.float64)
            ),
            good,
            A,
            b,
        )
    with pytest.raises(TypeError, match=rf"^{name}: c_pred must be a torch.Tensor .* got list"):
        loss(c.tolist(), good, A, b)
    with pytest.raises(
        TypeError,
        match=r"A must be a torch.Tensor, a numpy array or a scipy.sparse matrix, got list",
    ):
        loss(c, good, A.tolist(), b)
    loss(c, good.long().numpy(), A, b).backward()  # 0/1 decisions or costs as integers are fine
