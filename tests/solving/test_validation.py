"""Every bad input raises before anything is solved, naming the argument and the problem."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ilplayer
from tests.host_solvers import require

c, A, b = torch.zeros(2, 3), torch.ones(1, 3), torch.ones(1)


@pytest.mark.parametrize(
    "args, error, message",
    [
        (
            (c.clone().fill_(float("nan")), A, b),
            ValueError,
            r"c must be finite; found nan at index \(0, 0\)",
        ),
        ((c, A.clone().fill_(float("inf")), b), ValueError, r"A must be finite; found inf"),
        ((c, A, b.clone().fill_(float("-inf"))), ValueError, r"b must be finite; found -inf"),
        (
            (torch.zeros(3), A, b),
            ValueError,
            r"c must have shape \(batch, num_variables\).*unsqueeze",
        ),
        ((torch.zeros(0, 3), A, b), ValueError, r"c is an empty batch"),
        ((c, torch.ones(1, 4), b), ValueError, r"A has 4 columns but c has 3 variables"),
        ((c, torch.ones(5, 1, 3), b), ValueError, r"A has batch size 5 but c has 2"),
        ((c, A, torch.ones(2)), ValueError, r"b must have shape \(1,\) or \(batch, 1\)"),
        ((c, A, torch.ones(3, 1)), ValueError, r"b has batch size 3 but c has 2"),
        ((c.long(), A, b), TypeError, r"c must have a floating-point dtype, got torch.int64"),
        (
            ([[0.0, 0.0, 0.0]], A, b),
            TypeError,
            r"c must be a torch.Tensor, a numpy array or a scipy.sparse matrix, got list",
        ),
        ((c, A, None), ValueError, r"A and b must both be given, or both be None"),
        ((c, A.to("meta"), b), ValueError, r"A is on meta but c is on cpu"),
    ],
)
def test_bad_tensors_are_refused_with_the_argument_named(args, error, message):
    with pytest.raises(error, match=message):
        ilplayer.solve(*args, lb=0, ub=1)
    with pytest.raises(error, match=message):
        ilplayer.ILPLayer(lb=0, ub=1)(*args)


@pytest.mark.parametrize(
    "lb, ub, error, message",
    [
        (2, 1, ValueError, r"lb must not exceed ub; variable 0 has lb=2 > ub=1"),
        (0, [1, 0, -1], ValueError, r"variable 2 has lb=0 > ub=-1"),
        (0.5, 1, ValueError, r"lb must hold integers on the integer variables; lb\[0\] = 0.5"),
        (
            0,
            [1, 1.5, 2],
            ValueError,
            r"ub must hold integers on the integer variables; ub\[1\] = 1.5",
        ),
        (
            0,
            float("inf"),
            ValueError,
            r"lb/ub: variable 0 has an infinite bound .* 'bruteforce' needs a finite box",
        ),
        (float("inf"), float("inf"), ValueError, r"lb\[0\] = inf: a lower bound may be -inf"),
        (0, [1, float("nan"), 1], ValueError, r"ub must not hold NaN; ub\[1\] is NaN"),
        (0, [1, 1], ValueError, r"ub must be a scalar or have shape \(3,\).*got shape \(2,\)"),
        (None, 1, TypeError, r"lb must be a number or a vector of numbers"),
        (True, 1, TypeError, r"lb must be a number"),
        ("zero", 1, TypeError, r"lb must be a number or a vector of numbers, got str"),
        (0, 2**63, ValueError, r"ub must lie strictly between -2\*\*53 and 2\*\*53"),
        (-(2**62), 2**62, ValueError, r"lb must lie strictly between -2\*\*53 and 2\*\*53"),
        (0, 2**53 + 1, ValueError, r"ub must lie strictly between"),
    ],
)
def test_bad_bounds_are_refused(lb, ub, error, message):
    with pytest.raises(error, match=message):
        ilplayer.solve(c, A, b, lb=lb, ub=ub)


def test_bounds_accept_scalars_lists_arrays_and_tensors():
    for lb, ub in (
        (0, 1),
        ([0, 0, 0], [1, 1, 1]),
        (np.zeros(3), np.ones(3)),
        (torch.zeros(3), torch.ones(3)),
        (0.0, 1.0),
    ):
        y, status = ilplayer.solve(c, A, b, lb=lb, ub=ub)
        assert y.shape == (2, 3)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(tau=0), r"tau must be a positive number or None"),
        (dict(tau="hot"), r"tau must be a positive number or None"),
        (dict(basis="random"), r"basis must be one of \('delta', 'canonical'\)"),
        (dict(project_to_box="yes"), r"project_to_box must be True or False"),
        (dict(feasibility_tol=-1.0), r"feasibility_tol must be a number >= 0"),
        (dict(feasibility_tol="x"), r"feasibility_tol must be a number >= 0, got 'x'"),
        (dict(lb=2, ub=1), r"lb must not exceed ub; variable 0 has lb=2 > ub=1"),
        (dict(lb=[0, 0], ub=[1, 1, 1]), r"lb and ub must have the same length"),
        (dict(lb=0, ub=2**63), r"ub must lie strictly between"),
        (dict(lb=0.5, ub=1), r"lb must hold integers"),
        (dict(solver_options=["time_limit", 1]), r"solver_options must be a dict"),
        (dict(solver="higs"), r"unknown solver 'higs'.*Did you mean 'highs'"),
    ],
)
def test_bad_layer_options_are_refused(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        ilplayer.ILPLayer(**kwargs)


def test_bad_solver_options_are_refused():
    with pytest.raises(ValueError, match="max_points must be a positive integer"):
        ilplayer.get_solver("bruteforce", max_points=0)
    with pytest.raises(
        TypeError,
        match=r"solver_options: backend 'bruteforce' takes no option\(s\) "
        r"\['threads'\]; it takes \['feasibility_tol', 'max_points'\]",
    ):
        ilplayer.get_solver("bruteforce", threads=2)
    with pytest.raises(TypeError, match=r"Did you mean 'max_points'"):
        ilplayer.get_solver("bruteforce", max_point=2)


def test_solver_names_are_case_insensitive():
    y, status = ilplayer.solve(c, A, b, lb=0, ub=1, solver="BruteForce")
    assert ilplayer.Status.names(status) == ["optimal", "optimal"]


def test_bounds_are_checked_before_anything_is_solved():
    with pytest.raises(ValueError, match="ub must lie strictly between"):
        ilplayer.solve(c, A, b, lb=[0, 0, 0], ub=[1, 2**63, 1])


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            dict(num_constraints=-1, num_variables=3),
            ValueError,
            r"num_constraints must be a non-negative integer, got -1",
        ),
        (
            dict(num_constraints=2, num_variables=2.5),
            ValueError,
            r"num_variables must be a positive integer, got 2.5",
        ),
        (
            dict(num_constraints=2, num_variables=3, lb=2, ub=1),
            ValueError,
            r"lb must not exceed ub",
        ),
        (
            dict(num_constraints=2, num_variables=3, normalize="yes"),
            TypeError,
            r"normalize must be True or False",
        ),
        (
            dict(num_constraints=2, num_variables=3, dtype=torch.int64),
            TypeError,
            r"dtype must be a floating torch dtype",
        ),
    ],
)
def test_bad_constraint_module_arguments_are_refused(kwargs, error, message):
    with pytest.raises(error, match=message):
        ilplayer.StaticConstraints(**kwargs)


@pytest.mark.parametrize("solver", ["bruteforce", "highs"])
def test_meta_tensors_through_a_solver_are_refused_naming_the_device(solver):
    require(solver)
    meta = {"device": "meta", "dtype": torch.float64}
    layer = ilplayer.ILPLayer(ilplayer.Oracle(ilplayer.Program(lb=0, ub=1), solver=solver))
    with pytest.raises(
        ValueError, match=r"c: the inputs are on the meta device, .* solver '\w+' needs the values"
    ):
        layer(torch.zeros(2, 3, **meta), torch.ones(2, 1, 3, **meta), torch.ones(2, 1, **meta))
