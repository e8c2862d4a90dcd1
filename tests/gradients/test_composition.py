"""The layer as a composition: a Program (the static data, checked once), an Oracle (solves it),
a gradient method; the keyword shortcut builds the same three and refuses what it would not use."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer import Oracle, Program
from ilplayer.gradients import CombOptNet, Perturbed
from ilplayer.losses import SPOPlus

A = torch.tensor([[1.0, 1.0, 1.0], [1.0, -1.0, 0.0]], dtype=torch.float64)
B = torch.tensor([2.0, 0.5], dtype=torch.float64)


def costs(seed: int = 0, batch: int = 5) -> torch.Tensor:
    return torch.randn(batch, 3, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_a_program_is_checked_once_and_names_the_argument():
    with pytest.raises(ValueError, match="b must have shape"):
        Program(A=A, b=torch.ones(3))
    with pytest.raises(ValueError, match="A and b must both be given"):
        Program(A=A)
    with pytest.raises(ValueError, match="sense must be 'min' or 'max'"):
        Program(sense="maximise")
    with pytest.raises(ValueError, match="lb must not exceed ub"):
        Program(lb=1, ub=0)
    with pytest.raises(ValueError, match="A must be finite"):
        Program(A=[[np.nan, 1.0, 1.0]], b=[1.0])
    with pytest.raises(
        ValueError, match="variable_names has 2 names but the program has 3 variables"
    ):
        Program(A=A, b=B, variable_names=["x", "y"])


def test_a_program_is_immutable_picklable_and_reads_solutions_by_name():
    program = Program(
        A=A.numpy(), b=B.numpy(), lb=0, ub=1, sense="MAX", variable_names=["x", "y", "z"]
    )
    assert program.sense == "max" and program.num_variables == 3 and program.num_constraints == 2
    assert isinstance(program.A, torch.Tensor)  # NumPy in, a tensor stored
    with pytest.raises(AttributeError):
        program.sense = "min"  # type: ignore[misc]
    again = pickle.loads(pickle.dumps(program))
    assert torch.equal(again.A, program.A) and again.variable_names == ("x", "y", "z")
    values = program.values(torch.tensor([[1.0, 0.0, 1.0]]))
    assert values["z"].tolist() == [1.0] and values["y"].tolist() == [0.0]


@pytest.mark.parametrize("solver", ["bruteforce", "highs"])
def test_the_oracle_solves_with_the_programs_rows_or_the_calls(solver):
    program = Program(A=A, b=B, lb=0, ub=1, sense="max")
    c = costs()
    expected, _ = ilplayer.solve(c, A, B, 0, 1, solver="bruteforce", sense="max")
    with Oracle(program, solver=solver, executor="serial") as oracle:
        y, status = oracle(c)
        assert torch.equal(y, expected) and (status == 0).all()
        none, _ = oracle(
            c, torch.zeros(0, 3, dtype=torch.float64), torch.zeros(0, dtype=torch.float64)
        )
        assert torch.equal(none, (c > 0).to(none.dtype))  # no rows: each variable on its own
        assert pickle.loads(pickle.dumps(oracle))(c)[0].equal(expected)


def test_the_programs_rows_are_validated_once_and_every_batch_of_costs_always():
    import scipy.sparse as sparse

    program = Program(A_eq=sparse.csr_matrix(np.array([[1.0, 1.0, 1.0]])), b_eq=[1.0], lb=0, ub=1)
    oracle = Oracle(program, solver="highs", executor="serial")
    first, second = oracle.min_problem(costs(0)), oracle.min_problem(costs(1, batch=3))
    assert (
        second.A_eq is first.A_eq and not second.A_eq.data.flags.writeable
    )  # one frozen copy, shared
    assert torch.equal(second.c, costs(1, batch=3))
    full = ilplayer.core.validation.validate_problem(
        costs(1, batch=3), None, None, 0, 1, program.A_eq, program.b_eq
    )
    assert (full.A_eq != second.A_eq).nnz == 0 and torch.equal(full.b_eq, second.b_eq)
    bad = costs(2)
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match=r"c must be finite; found nan at index \(3, 1\)"):
        oracle.min_problem(bad)
    with pytest.raises(ValueError, match="A_eq has 3 columns but c has 4 variables"):
        oracle.min_problem(torch.zeros(2, 4, dtype=torch.float64))
    with pytest.raises(TypeError, match="c must have a floating-point dtype"):
        oracle.min_problem(torch.zeros(2, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="empty batch"):
        oracle.min_problem(torch.zeros(0, 3, dtype=torch.float64))
    assert "_templates" not in copy.deepcopy(oracle).__dict__  # a copy validates anew
    assert torch.equal(oracle(costs(4))[0], copy.deepcopy(oracle)(costs(4))[0])


def test_the_composed_layer_equals_the_keyword_shortcut():
    c, A_grad, b_grad = (
        costs(1).requires_grad_(),
        A.clone().requires_grad_(),
        B.clone().requires_grad_(),
    )
    composed = ilplayer.ILPLayer(
        Oracle(Program(lb=0, ub=1), solver="bruteforce"), CombOptNet(tau=0.5)
    )
    shortcut = ilplayer.ILPLayer(lb=0, ub=1, solver="bruteforce", tau=0.5)
    grads = []
    for layer in (composed, shortcut):
        y = layer(c, A_grad, b_grad)
        grads.append(
            torch.autograd.grad((y * torch.arange(3.0, dtype=y.dtype)).sum(), (c, A_grad, b_grad))
        )
        layer.close()
    for first, second in zip(*grads):
        assert torch.equal(first, second)


def test_a_layer_on_a_program_with_rows_takes_the_costs_alone():
    oracle = Oracle(Program(A=A, b=B, lb=0, ub=1), solver="bruteforce")
    layer = ilplayer.ILPLayer(oracle, Perturbed(sigma=0.5, samples=4, seed=0))
    c = costs(2).requires_grad_()
    y = layer(c)
    assert y.shape == (5, 3) and (layer.last_status == 0).all()
    y.sum().backward()
    assert c.grad is not None and c.grad.abs().sum() > 0


def test_a_loss_takes_the_oracle_and_solves_with_the_programs_rows():
    oracle = Oracle(Program(A=A, b=B, lb=0, ub=1), solver="bruteforce")
    c_true, c_pred = costs(3), costs(4).requires_grad_()
    from_oracle = SPOPlus(oracle)(c_pred, c_true)
    from_layer = SPOPlus(ilplayer.ILPLayer(lb=0, ub=1, solver="bruteforce"))(c_pred, c_true, A, B)
    assert torch.equal(from_oracle, from_layer)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "perturbed", "tau": 0.5}, "tau applies to method='combopt' only"),
        ({"method": "blackbox", "sigma": 1.0}, "sigma applies to"),
        ({"solvr": "highs"}, "unexpected keyword argument 'solvr'"),
        ({"gradient": "combopt", "method": "perturbed"}, "give the gradient method once"),
    ],
)
def test_the_shortcut_refuses_a_keyword_it_would_not_use(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        ilplayer.ILPLayer(lb=0, ub=1, **kwargs)


def test_an_oracle_takes_no_shortcut_keywords_beside_it():
    oracle = Oracle(Program(), solver="bruteforce")
    with pytest.raises(ValueError, match="solver: with an oracle, give it to the Oracle"):
        ilplayer.ILPLayer(oracle, solver="highs")
    with pytest.raises(ValueError, match="tau: with an oracle, give it to the method object"):
        ilplayer.ILPLayer(oracle, tau=0.3)
    assert ilplayer.ILPLayer(oracle, "perturbed").gradient == "perturbed"


def test_positional_bounds_keep_working():
    layer = ilplayer.ILPLayer(-1, 2, solver="bruteforce", method="identity")
    assert (layer.oracle.program.lb, layer.oracle.program.ub) == (-1, 2)
    with pytest.raises(TypeError, match="multiple values for argument 'lb'"):
        ilplayer.ILPLayer(0, 1, lb=0)


def test_one_keyword_names_the_method_in_both_forms_and_the_old_one_still_works():
    oracle = Oracle(Program(lb=0, ub=1), solver="bruteforce")
    assert ilplayer.ILPLayer(oracle, method=Perturbed()).gradient == "perturbed"
    assert ilplayer.ILPLayer(oracle=oracle, method="blackbox").gradient == "blackbox"
    assert ilplayer.ILPLayer(0, 1, method="blackbox").gradient == "blackbox"
    with pytest.raises(TypeError, match="multiple values for argument 'method'"):
        ilplayer.ILPLayer(oracle, "identity", method="blackbox")
    with pytest.raises(TypeError, match="positionally; got 3 positional"):
        ilplayer.ILPLayer(0, 1, "blackbox")
    with pytest.warns(FutureWarning, match=r"ILPLayer\(gradient='blackbox'\) is ILPLayer\(method="):
        old = ilplayer.ILPLayer(0, 1, gradient="blackbox", lambd=3.0)
    assert old.gradient == "blackbox" and old.method.lambd == 3.0


def test_copies_of_a_composed_layer_build_their_own_backend():
    layer = ilplayer.ILPLayer(
        Oracle(Program(A=A, b=B), solver="highs", executor="serial"), "identity"
    )
    c = costs(5)
    y = layer(c)
    for other in (copy.deepcopy(layer), pickle.loads(pickle.dumps(layer))):
        assert torch.equal(other(c), y)
        assert other.oracle.solver is not layer.oracle.solver
        other.close()
    layer.close()
