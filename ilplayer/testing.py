"""Conformance kit: the pytest suite every solver plugin runs.

Subclass :class:`SolverConformance` in a test module of the plugin and name the backend::

    from ilplayer.testing import SolverConformance

    class TestMySolver(SolverConformance):
        solver_name = "mysolver"
        solver_options = {}            # optional: options for get_solver

Every family of :data:`FAMILIES` is compared with the exact ``bruteforce`` backend (status per
instance; objective within 1e-6), and :data:`FUZZ_CASES` seeded fuzz cases with an exhaustive
NumPy oracle: a suboptimal ``OPTIMAL`` or a false ``INFEASIBLE`` fails with the instance as a
reproducer. Infeasible instances must get a status, time limits must be honoured, the spec
must pickle. A backend that is not installed, or has no usable licence, is
skipped with the reason.
"""

from __future__ import annotations

import dataclasses
import itertools
import pickle
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest
import torch

from ilplayer.instances import random_constraint_rows, sample_cover
from ilplayer.layer import solve
from ilplayer.plugins import UnknownSolverError, get_solver, get_solver_spec, resolve_solver_name
from ilplayer.solver import Solver
from ilplayer.spec import SolverNotInstalledError
from ilplayer.types import Capability, Status

__all__ = ["FAMILIES", "Instances", "SolverConformance", "assert_agrees_with_bruteforce",
           "assert_correct_on_fuzzed_instances", "make_instances"]

OBJECTIVE_TOL = 1e-6


@dataclass(frozen=True)
class Instances:
    """A batch of ILP instances as float64 tensors (``A`` shared or per instance), with
    equalities ``A_eq y = b_eq`` in some families."""

    c: torch.Tensor
    A: torch.Tensor
    b: torch.Tensor
    lb: list[int]
    ub: list[int]
    A_eq: torch.Tensor | None = None
    b_eq: torch.Tensor | None = None


def _random_constraints(rng: np.random.Generator, m: int, lb: list[int], ub: list[int]
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    n = len(lb)
    generator = torch.Generator().manual_seed(int(rng.integers(2**31)))
    corner = torch.tensor([l if rng.random() < 0.5 else u for l, u in zip(lb, ub)], dtype=torch.float64)
    return random_constraint_rows(m, n, lb, ub, generator=generator, feasible_point=corner)


def set_cover(rng: np.random.Generator, universe: int, subsets: int) -> tuple[np.ndarray, np.ndarray]:
    """``-M y <= -1``: choose subsets (of <= 3 elements, covering every element) to cover all."""
    return -sample_cover(rng, universe, subsets), -np.ones(universe)


FAMILIES = ("binary-m1", "binary-m4", "binary-m8", "dense", "integer-coefficients",
            "negative-bounds", "set-cover", "infeasible", "single-point", "per-instance",
            "zero-rows", "tight-rows", "equality-pairs", "box-only", "equalities")
"""The instance families :func:`make_instances` draws, by name."""
FUZZ_CASES = 200
"""Seeded :mod:`ilplayer.fuzz` cases (about 500 instances) every backend is checked on."""


def make_instances(family: str, seed: int = 0, batch: int = 12) -> Instances:
    """A seeded batch of one family (small enough for ``bruteforce``)."""
    rng = np.random.default_rng([seed, FAMILIES.index(family)])
    t = lambda x: torch.as_tensor(np.asarray(x, dtype=np.float64))
    A: Any
    b: Any
    a: Any
    if family.startswith("binary-m"):
        lb, ub = [0] * 10, [1] * 10
        A, b = _random_constraints(rng, int(family[len("binary-m"):]), lb, ub)
        return Instances(t(rng.uniform(-1, 1, (batch, 10))), A, b, lb, ub)
    if family == "dense":
        lb, ub = [-5] * 5, [5] * 5
        A, b = _random_constraints(rng, 3, lb, ub)
        return Instances(t(rng.uniform(-1, 1, (batch, 5))), A, b, lb, ub)
    if family == "integer-coefficients":
        lb, ub = [-2] * 6, [3] * 6
        A = rng.integers(-5, 6, (3, 6))
        b = np.abs(A).sum(1) // 2
        return Instances(t(rng.integers(-9, 10, (batch, 6))), t(A), t(b), lb, ub)
    if family == "negative-bounds":
        lb = rng.integers(-4, 1, 7).tolist()
        ub = [l + int(rng.integers(0, 4)) for l in lb]
        A, b = _random_constraints(rng, 3, lb, ub)
        return Instances(t(rng.uniform(-1, 1, (batch, 7))), A, b, lb, ub)
    if family == "set-cover":
        A, b = set_cover(rng, 5, 10)
        return Instances(t(rng.uniform(0.1, 1, (batch, 10))), t(A), t(b), [0] * 10, [1] * 10)
    if family == "infeasible":  # per instance: a·y <= -1 and a·y >= 1 for odd rows
        n = 6
        a = rng.uniform(0.5, 1, (batch, n))
        A = np.stack([a, -a], axis=1)
        b = np.stack([np.full(batch, 2.0), np.full(batch, -1.0)], axis=1)
        b[1::2] = [-1.0, -1.0]  # odd rows: a·y <= -1 and -a·y <= -1 -> impossible
        return Instances(t(rng.uniform(-1, 1, (batch, n))), t(A), t(b), [0] * n, [1] * n)
    if family == "single-point":  # y <= p and -y <= -p: the feasible set is {p}
        n = 6
        point = rng.integers(-2, 3, n)
        A = np.concatenate([np.eye(n), -np.eye(n)])
        b = np.concatenate([point, -point])
        return Instances(t(rng.uniform(-1, 1, (batch, n))), t(A), t(b), [-2] * n, [2] * n)
    if family == "per-instance":  # distinct (A, b) per row, with repeats
        lb, ub = [0] * 8, [2] * 8
        groups = [_random_constraints(rng, 2, lb, ub) for _ in range(3)]
        pick = rng.integers(0, 3, batch)
        A = torch.stack([groups[g][0] for g in pick])
        b = torch.stack([groups[g][1] for g in pick])
        return Instances(t(rng.uniform(-1, 1, (batch, 8))), A, b, lb, ub)
    if family == "zero-rows":  # all-zero rows: satisfied (0 <= b) on even rows, not on odd
        lb, ub = [-1] * 6, [2] * 6
        A, b = _random_constraints(rng, 2, lb, ub)
        A = torch.cat([A, torch.zeros(2, 6)]).expand(batch, -1, -1).clone()
        b = torch.cat([b, torch.tensor([0.0, 1.0])]).expand(batch, -1).clone()
        b[1::2, 2] = -0.5
        return Instances(t(rng.uniform(-1, 1, (batch, 6))), A, b, lb, ub)
    if family in ("tight-rows", "equality-pairs"):  # hyperplanes through box points
        lb, ub = [-2] * 6, [2] * 6
        a = rng.uniform(-1, 1, (3, 6))
        points = rng.integers(-2, 3, (3, 6)).astype(np.float64)  # row j passes through point j
        b = np.einsum("ij,ij->i", a, points)
        if family == "equality-pairs":
            a, b = np.concatenate([a[:2], -a[:2]]), np.concatenate([b[:2], -b[:2]])
        return Instances(t(rng.uniform(-1, 1, (batch, 6))), t(a), t(b), lb, ub)
    if family == "box-only":  # m = 0
        lb = rng.integers(-3, 1, 5).tolist()
        ub = [l + 2 for l in lb]
        return Instances(t(rng.uniform(-1, 1, (batch, 5))), torch.zeros(0, 5, dtype=torch.float64),
                         torch.zeros(0, dtype=torch.float64), lb, ub)
    if family == "equalities":  # native A_eq y = b_eq: a float row and a count, both through
        lb, ub = [-1] * 6, [2] * 6  # one of two feasible box points (two groups of rows)
        A, b = _random_constraints(rng, 2, lb, ub)
        box = np.array(list(itertools.product(range(-1, 3), repeat=6)), dtype=np.float64)
        feasible = box[(box @ A.numpy().T <= b.numpy()).all(axis=1)]
        points = feasible[rng.choice(len(feasible), 2, replace=False)]
        a = 0.1 * rng.integers(-3, 4, 6)  # not exact in binary: the tolerance matters
        A_eq = np.stack([np.broadcast_to(a, (batch, 6)), np.ones((batch, 6))], axis=1)
        chosen = points[np.arange(batch) % 2]
        b_eq = np.stack([chosen @ a, chosen.sum(axis=1)], axis=1)
        return Instances(t(rng.uniform(-1, 1, (batch, 6))), A, b, lb, ub, t(A_eq), t(b_eq))
    raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")


def market_split(seed: int = 0, m: int = 4, n: int = 36) -> Instances:
    """Cornuéjols-Dawande market split: a·y = floor(sum(a)/2) rows, famously hard for branch
    and bound; used to trigger time limits."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 100, (m, n)).astype(np.float64)
    rhs = np.floor(a.sum(1) / 2)
    A, b = np.concatenate([a, -a]), np.concatenate([rhs, -rhs])
    return Instances(torch.tensor(rng.uniform(-1, 1, (1, n))), torch.tensor(A), torch.tensor(b),
                     [0] * n, [1] * n)


def assert_agrees_with_bruteforce(instances: Instances, solver: Solver | str,
                                  tol: float = OBJECTIVE_TOL) -> tuple[torch.Tensor, torch.Tensor]:
    """Same status per instance as ``bruteforce``, and the same optimal objective."""
    y, status = solve(instances.c, instances.A, instances.b, instances.lb, instances.ub, solver=solver,
                      A_eq=instances.A_eq, b_eq=instances.b_eq)
    y_ref, status_ref = solve(instances.c, instances.A, instances.b, instances.lb, instances.ub,
                              solver="bruteforce", A_eq=instances.A_eq, b_eq=instances.b_eq)
    assert Status.names(status) == Status.names(status_ref)
    solved = status_ref == Status.OPTIMAL
    value = (instances.c * y).sum(-1)[solved]
    reference = (instances.c * y_ref).sum(-1)[solved]
    torch.testing.assert_close(value, reference, rtol=tol, atol=tol)
    A = instances.A if instances.A.dim() == 3 else instances.A.expand(len(y), -1, -1)
    b = instances.b if instances.b.dim() == 2 else instances.b.expand(len(y), -1)
    excess = (A @ y[..., None]).squeeze(-1) - b
    assert (excess[solved] <= 1e-6 * (1 + b[solved].abs())).all()
    if instances.A_eq is not None and instances.b_eq is not None:
        A_eq = instances.A_eq if instances.A_eq.dim() == 3 else instances.A_eq.expand(len(y), -1, -1)
        b_eq = instances.b_eq if instances.b_eq.dim() == 2 else instances.b_eq.expand(len(y), -1)
        gap = ((A_eq @ y[..., None]).squeeze(-1) - b_eq).abs()
        assert (gap[solved] <= 1e-6 * (1 + b_eq[solved].abs())).all()
    return y, status


class SolverConformance:
    """Base class of a plugin's conformance tests; set ``solver_name`` (and ``solver_options``)."""

    solver_name: ClassVar[str] = ""
    solver_options: ClassVar[dict[str, Any]] = {}

    @pytest.fixture
    def solver(self) -> Iterator[Solver]:
        try:
            spec = get_solver_spec(self.solver_name)
        except UnknownSolverError as exc:
            pytest.skip(f"backend {self.solver_name!r} is not registered: {exc}")
        if not spec.is_available():
            pytest.skip(f"backend {self.solver_name!r} is not available: missing "
                        f"{spec.missing_requirements() or 'its library'}")
        cls = spec.load()
        licence = cls.license_status()
        if not licence:
            pytest.skip(f"backend {self.solver_name!r} has no usable licence ({licence.value})")
        try:
            solver = get_solver(self.solver_name, **self.solver_options)
        except SolverNotInstalledError as exc:
            pytest.skip(str(exc))
        yield solver
        solver.close()

    @pytest.mark.parametrize("family", FAMILIES)
    @pytest.mark.parametrize("seed", [0, 1])
    def test_family_agrees_with_bruteforce(self, solver: Solver, family: str, seed: int) -> None:
        assert_agrees_with_bruteforce(make_instances(family, seed), solver)

    def test_fuzzed_instances_agree_with_exhaustive_enumeration(self, solver: Solver) -> None:
        assert_correct_on_fuzzed_instances(solver)

    def test_infeasible_instances_get_a_status_not_an_exception(self, solver: Solver) -> None:
        instances = make_instances("infeasible")
        _, status = solve(instances.c, instances.A, instances.b, instances.lb,
                                   instances.ub, solver=solver)
        assert Status.names(status[1::2]) == ["infeasible"] * len(status[1::2])
        assert Status.names(status[0::2]) == ["optimal"] * len(status[0::2])

    def test_models_are_reused_across_calls_and_constraint_sets(self, solver: Solver) -> None:
        first, second = make_instances("binary-m4", 3), make_instances("binary-m8", 3)
        for instances in (first, second, first, second):
            assert_agrees_with_bruteforce(instances, solver)

    def test_warm_starts_keep_answers_exact(self, solver: Any) -> None:
        """Revisiting instances with moved costs (as training does) starts from pooled points;
        the answers stay optimal."""
        takes_starts = getattr(solver, "_takes_starts", None)
        if takes_starts is None or not takes_starts():
            pytest.skip(f"backend {self.solver_name!r} takes no start point")
        instances = make_instances("dense", 2)
        rng = np.random.default_rng(0)
        starts: list[np.ndarray] = []
        set_start = solver.set_start
        def recording(model: Any, point: np.ndarray) -> None:
            starts.append(point.copy())
            set_start(model, point)

        solver.set_start = recording
        try:
            for searching in (True, False):  # without the search around a start, every start is a MIP's
                starts.clear()
                if not searching:
                    solver.relaxation_multipliers = lambda model, c: [None] * len(c)
                for scale in (0.0, 0.01, 0.1):
                    noise = torch.as_tensor(rng.standard_normal(tuple(instances.c.shape)))
                    moved = dataclasses.replace(instances, c=instances.c * (1 + scale * noise))
                    assert_agrees_with_bruteforce(moved, solver)
        finally:
            del solver.set_start
            vars(solver).pop("relaxation_multipliers", None)
        assert starts, "warm_start is on but no start point was ever set"

    def test_time_limit_is_honoured(self, solver: Solver) -> None:
        if Capability.TIME_LIMIT not in solver.capabilities:
            pytest.skip(f"backend {self.solver_name!r} has no time limit")
        limited = get_solver(self.solver_name, **{**self.solver_options, "time_limit": 0.2})
        instances = market_split()
        start = time.perf_counter()
        y, status = solve(instances.c, instances.A, instances.b, instances.lb,
                                   instances.ub, solver=limited)
        elapsed = time.perf_counter() - start
        limited.close()
        assert Status.names(status) in (["time_limit"], ["time_limit_no_solution"])
        assert elapsed < 10.0
        if status[0] == Status.TIME_LIMIT:
            assert ((instances.A @ y[0]) <= instances.b + 1e-6).all()

    def test_bad_time_limit_is_refused(self, solver: Solver) -> None:
        if Capability.TIME_LIMIT not in solver.capabilities:
            pytest.skip(f"backend {self.solver_name!r} has no time limit")
        with pytest.raises(ValueError, match="time_limit must be a positive number"):
            get_solver(self.solver_name, **{**self.solver_options, "time_limit": -1})

    def test_spec_pickles_for_worker_processes(self, solver: Solver) -> None:
        spec, implied = resolve_solver_name(self.solver_name)
        rebuilt = pickle.loads(pickle.dumps(spec)).create(**implied, **self.solver_options)
        try:
            assert_agrees_with_bruteforce(make_instances("binary-m4"), rebuilt)
        finally:
            rebuilt.close()

    def test_declares_a_name_and_capabilities(self, solver: Solver) -> None:
        assert isinstance(solver.capabilities, frozenset)
        assert all(isinstance(cap, Capability) for cap in solver.capabilities)
        assert solver.name


def assert_correct_on_fuzzed_instances(solver: Solver | str, cases: int = FUZZ_CASES,
                                      start: int = 0) -> None:
    """No wrong ``OPTIMAL`` and no false ``INFEASIBLE`` on seeded :mod:`ilplayer.fuzz` cases,
    judged against exhaustive enumeration; a failure quotes the first failing case as JSON."""
    import json

    from ilplayer.fuzz import fuzz_backend, fuzz_cases

    backend = get_solver(solver) if isinstance(solver, str) else solver
    try:
        report = fuzz_backend(backend, fuzz_cases(cases, start), keep=1)
    finally:
        if backend is not solver:
            backend.close()
    if report.correct:
        return
    case, verdicts, _, status = report.failures[0]
    raise AssertionError(
        f"backend {report.backend!r}: {report.count('wrong-optimal')} wrong OPTIMAL and "
        f"{report.count('false-infeasible')} false INFEASIBLE rows on {report.instances} fuzzed "
        f"instances. First: case {case.seed} ({', '.join(case.kinds)}), verdicts {verdicts}, "
        f"status {Status.names(status)}. Reproducer (ilplayer.fuzz.FuzzCase.from_json):\n"
        f"{json.dumps(case.to_json())}")


def exhaustive_optimum(instances: Instances, row: int) -> float | None:
    """Plain-Python optimum of one instance (for tests of the kit itself)."""
    c = instances.c[row].numpy()
    A = (instances.A[row] if instances.A.dim() == 3 else instances.A).numpy()
    b = (instances.b[row] if instances.b.dim() == 2 else instances.b).numpy()
    best = None
    for point in itertools.product(*[range(l, u + 1) for l, u in zip(instances.lb, instances.ub)]):
        y = np.array(point, dtype=float)
        if (A @ y - b <= 1e-6).all():
            best = float(c @ y) if best is None else min(best, float(c @ y))
    return best
