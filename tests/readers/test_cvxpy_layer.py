"""ilplayer.from_cvxpy: cvxpylayers' shape for MILPs, gradients through cvxpy's affine map."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer import Status
from tests.host_solvers import MILP_BACKENDS, require

cp = pytest.importorskip("cvxpy")


def hand_layer(
    method: str, A: np.ndarray, b: np.ndarray, ub: float = 3, solver: str = "highs"
) -> ilplayer.ILPLayer:
    program = ilplayer.Program(A=A, b=b, lb=0, ub=ub)
    return ilplayer.ILPLayer(ilplayer.Oracle(program, solver=solver), method)


def random_rows(seed: int, m: int = 3, n: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return np.round(rng.normal(size=(m, n)), 3), np.round(rng.uniform(1, 4, size=m), 3)


@pytest.mark.parametrize("method", ["combopt", "blackbox", "identity"])
@pytest.mark.parametrize(
    ("sense", "backend"),
    [
        ("min", "highs"),
        ("max", "highs"),
        *[("max", name) for name in MILP_BACKENDS if name != "highs"],
    ],
)
def test_objective_parameter_gradients_equal_the_method_on_hand_written_matrices(
    method, sense, backend
):
    require(backend)
    A, b = random_rows(0)
    x = cp.Variable(5, integer=True, bounds=[0, 3], name="x")
    c = cp.Parameter(5, name="c")
    objective = cp.Minimize(c @ x) if sense == "min" else cp.Maximize(c @ x)
    layer = ilplayer.from_cvxpy(
        cp.Problem(objective, [A @ x <= b]),
        parameters=[c],
        variables=[x],
        method=method,
        solver=backend,
    )
    hand = hand_layer(method, A, b, solver=backend)
    costs = torch.randn(8, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    weights = torch.randn(8, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    ours = costs.clone().requires_grad_()
    (y,) = layer(ours)
    (y * weights).sum().backward()
    theirs = costs.clone().requires_grad_()
    y_hand = hand(theirs if sense == "min" else -theirs)  # the hand-written program minimises
    (y_hand * weights).sum().backward()
    assert torch.equal(y, y_hand)
    assert torch.allclose(ours.grad, theirs.grad, atol=1e-9, rtol=0)


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_constraint_parameter_gradients_are_combopts_pushed_through_the_affine_map(backend):
    require(backend)
    A0, b0 = random_rows(3)
    x = cp.Variable(5, integer=True, bounds=[0, 3], name="x")
    A, b, c = cp.Parameter((3, 5), name="A"), cp.Parameter(3, name="b"), cp.Parameter(5, name="c")
    # The rows the solver sees: (A + 2 e_0^T) x <= 2 b - 1 — a map that is not the identity.
    problem = cp.Problem(cp.Minimize(c @ x), [A @ x + 2 * x[0] <= 2 * b - 1])
    layer = ilplayer.from_cvxpy(
        problem,
        parameters=[A, b, c],
        variables=[x],
        method=ilplayer.gradients.CombOptNet(),
        solver=backend,
    )
    rng = torch.Generator().manual_seed(4)
    batch = 6
    A_t = torch.from_numpy(A0) + 0.1 * torch.randn(batch, 3, 5, dtype=torch.float64, generator=rng)
    b_t = torch.from_numpy(b0).expand(batch, 3) + 1.5
    c_t = torch.randn(batch, 5, dtype=torch.float64, generator=rng)
    target = torch.randint(0, 4, (batch, 5), generator=rng).to(torch.float64)
    inputs = [t.clone().requires_grad_() for t in (A_t, b_t, c_t)]
    (y,) = layer(*inputs)
    ((y - target) ** 2).sum().backward()

    shift = torch.zeros(3, 5, dtype=torch.float64)
    shift[:, 0] = 2.0
    A_h = (A_t + shift).clone().requires_grad_()
    b_h = (2 * b_t - 1).clone().requires_grad_()
    c_h = c_t.clone().requires_grad_()
    hand = ilplayer.ILPLayer(
        ilplayer.Oracle(ilplayer.Program(lb=0, ub=3), solver=backend),
        ilplayer.gradients.CombOptNet(),
    )
    y_h = hand(c_h, A_h, b_h)
    ((y_h - target) ** 2).sum().backward()
    assert torch.equal(y, y_h)
    assert inputs[0].grad.abs().sum() > 0 and inputs[1].grad.abs().sum() > 0
    assert torch.allclose(inputs[0].grad, A_h.grad, atol=1e-9, rtol=0)
    assert torch.allclose(inputs[1].grad, 2 * b_h.grad, atol=1e-9, rtol=0)
    assert torch.allclose(inputs[2].grad, c_h.grad, atol=1e-9, rtol=0)


def test_the_lp_relaxation_in_cvxpylayers_agrees_where_it_is_integral():
    cvxpylayers_torch = pytest.importorskip("cvxpylayers.torch")
    k = 4  # an assignment problem: its LP relaxation has integral vertices
    rows = np.zeros((2 * k, k * k))
    for i in range(k):
        rows[i, i * k : (i + 1) * k] = 1
        rows[k + i, i::k] = 1
    c = cp.Parameter(k * k, name="c")
    x_int = cp.Variable(k * k, boolean=True)
    ours = ilplayer.from_cvxpy(
        cp.Problem(cp.Minimize(c @ x_int), [rows @ x_int == 1]), [c], [x_int]
    )
    x_lp = cp.Variable(k * k)
    relaxed = cp.Problem(cp.Minimize(c @ x_lp), [rows @ x_lp == 1, x_lp >= 0, x_lp <= 1])
    theirs = cvxpylayers_torch.CvxpyLayer(relaxed, parameters=[c], variables=[x_lp])
    costs = torch.rand(5, k * k, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    (y,) = ours(costs)
    (y_lp,) = theirs(costs)
    assert torch.allclose(y, y_lp, atol=1e-4)


def test_named_variables_of_any_shape_come_back_in_their_shape():
    X = cp.Variable((2, 3), integer=True, bounds=[0, 2], name="X")
    z = cp.Variable(boolean=True, name="z")
    C = cp.Parameter((2, 3), name="C")
    problem = cp.Problem(cp.Maximize(cp.sum(cp.multiply(C, X)) + z), [cp.sum(X) <= 3 + 2 * z])
    layer = ilplayer.from_cvxpy(problem, [C], [X, z])
    costs = torch.tensor([[1.0, -1.0, 0.5], [2.0, 0.1, -3.0]], dtype=torch.float64)
    X_star, z_star = layer(costs)
    assert X_star.shape == (2, 3) and z_star.shape == ()
    C.value = costs.numpy()
    problem.solve(solver=cp.HIGHS)
    assert float((costs * X_star).sum() + z_star) == pytest.approx(problem.value)
    assert torch.allclose(X_star, torch.from_numpy(X.value))


def test_infeasible_instances_get_a_status_and_the_batch_goes_on():
    x = cp.Variable(3, integer=True, bounds=[0, 2], name="x")
    b = cp.Parameter(name="b")
    c = cp.Parameter(3, name="c")
    layer = ilplayer.from_cvxpy(cp.Problem(cp.Minimize(c @ x), [cp.sum(x) >= b]), [b, c], [x])
    (y,) = layer(
        torch.tensor([2.0, 9.0], dtype=torch.float64), torch.ones(2, 3, dtype=torch.float64)
    )
    assert layer.last_status.tolist() == [Status.OPTIMAL, Status.INFEASIBLE]
    assert float(y[0].sum()) == 2.0


def test_a_parameter_whose_gradient_the_method_cannot_give_is_refused_by_name():
    x = cp.Variable(3, integer=True, bounds=[0, 2], name="x")
    w = cp.Variable(name="w")
    b, c, e = cp.Parameter(name="b"), cp.Parameter(3, name="c"), cp.Parameter(name="e")
    with pytest.raises(ValueError, match=r"'b' enters the constraints.*cost gradients only"):
        ilplayer.from_cvxpy(
            cp.Problem(cp.Minimize(c @ x), [cp.sum(x) <= b]), [b, c], [x], method="blackbox"
        )
    with pytest.raises(ValueError, match="'e' enters equality constraints"):
        ilplayer.from_cvxpy(cp.Problem(cp.Minimize(c @ x), [cp.sum(x) == e]), [e, c], [x])
    with pytest.raises(ValueError, match="'b' enters the constraints of a mixed-integer program"):
        ilplayer.from_cvxpy(
            cp.Problem(cp.Minimize(c @ x + w), [cp.sum(x) + w <= b, w >= 0]), [b, c], [x]
        )
    with pytest.raises(ValueError, match="'b' is not among them"):
        ilplayer.from_cvxpy(cp.Problem(cp.Minimize(c @ x), [cp.sum(x) <= b]), [c], [x])
    layer = ilplayer.from_cvxpy(cp.Problem(cp.Minimize(c @ x), [cp.sum(x) <= b]), [b, c], [x])
    with pytest.raises(ValueError, match=r"c: expected shape \(3,\)"):
        layer(torch.tensor(1.0), torch.ones(4))


def test_what_is_not_linear_is_refused_by_name():
    x = cp.Variable(3, integer=True, name="x")
    with pytest.raises(ilplayer.errors.UnreadableModelError, match=r"objective .* is not linear"):
        ilplayer.Program.from_cvxpy(cp.Problem(cp.Minimize(cp.sum_squares(x)), [x >= 0]))
    with pytest.raises(ilplayer.errors.UnreadableModelError, match=r"constraint .* is not linear"):
        ilplayer.Program.from_cvxpy(cp.Problem(cp.Minimize(cp.sum(x)), [cp.norm(x, 2) <= 1]))
    c = cp.Parameter(3, name="c")
    with pytest.raises(ilplayer.errors.UnreadableModelError, match="parameter 'c' has no value"):
        ilplayer.Program.from_cvxpy(cp.Problem(cp.Minimize(c @ x), [x >= 0]))


def test_a_deep_copy_answers_as_the_original_also_inside_a_module():
    x = cp.Variable(3, boolean=True, name="x")
    c, d = cp.Parameter(3, name="c"), cp.Parameter(name="d")
    problem = cp.Problem(cp.Maximize(c @ x), [cp.sum(x) <= d])
    model = torch.nn.Sequential(torch.nn.Identity())
    model.layer = ilplayer.from_cvxpy(problem, parameters=[c, d], variables=[x])
    costs = torch.tensor(
        [[1.0, -1.0, 2.0], [3.0, 2.0, 1.0]], dtype=torch.float64, requires_grad=True
    )
    capacity = torch.tensor([2.0, 1.0], dtype=torch.float64)
    copied = copy.deepcopy(model)  # the best-checkpoint pattern
    (y,), (y_copy,) = model.layer(costs, capacity), copied.layer(costs, capacity)
    assert torch.equal(y, y_copy) and y_copy.tolist() == [[1.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    y_copy.sum().backward()
    assert costs.grad is not None


def test_a_problem_that_is_not_dpp_is_refused_naming_the_expression():
    x = cp.Variable(3, boolean=True, name="x")
    c, d = cp.Parameter(3, name="c"), cp.Parameter(pos=True, name="d")
    problem = cp.Problem(cp.Maximize(c @ x), [(d * c) @ x <= 2])
    with pytest.raises(
        ilplayer.errors.UnreadableModelError, match=r"constraint .* is not DPP: .*c.* is not affine"
    ):
        ilplayer.from_cvxpy(problem, parameters=[c, d], variables=[x])
    # With values, Program.from_cvxpy reads it at those values (nothing is mapped).
    c.value, d.value = np.array([1.0, 2.0, 3.0]), 2.0
    program = ilplayer.Program.from_cvxpy(problem)
    assert program.A.toarray().tolist() == [[2.0, 4.0, 6.0]]
