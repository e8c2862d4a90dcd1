"""The conformance kit: the pytest suite every solver plugin runs (`SolverConformance`) and the
checks it is made of; imports pytest (the package `ilplayer.testing` does not)."""

from __future__ import annotations

import dataclasses
import itertools
import pickle
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pytest
import torch

from ilplayer.core.records import Capability, Status
from ilplayer.errors import SolverNotInstalledError, UnknownSolverError
from ilplayer.layer import solve
from ilplayer.solvers.contract import Solver
from ilplayer.solvers.registry import get_solver, get_solver_spec, resolve_solver_name
from ilplayer.testing.instances import TEST_FAMILIES as FAMILIES
from ilplayer.testing.instances import Instances, make_instances, market_split

__all__ = [
    "SolverConformance",
    "assert_agrees_with_bruteforce",
    "assert_correct_on_fuzzed_instances",
    "exhaustive_optimum",
]


OBJECTIVE_TOL = 1e-6


FUZZ_CASES = 200
"""Seeded `ilplayer.testing.fuzz` cases (about 500 instances) every backend is checked on."""


def assert_agrees_with_bruteforce(
    instances: Instances, solver: Solver | str, tol: float = OBJECTIVE_TOL
) -> tuple[torch.Tensor, torch.Tensor]:
    """Same status per instance as ``bruteforce``, and the same optimal objective."""
    y, status = solve(
        instances.c,
        instances.A,
        instances.b,
        instances.lb,
        instances.ub,
        solver=solver,
        A_eq=instances.A_eq,
        b_eq=instances.b_eq,
    )
    y_ref, status_ref = solve(
        instances.c,
        instances.A,
        instances.b,
        instances.lb,
        instances.ub,
        solver="bruteforce",
        A_eq=instances.A_eq,
        b_eq=instances.b_eq,
    )
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
        A_eq = (
            instances.A_eq if instances.A_eq.dim() == 3 else instances.A_eq.expand(len(y), -1, -1)
        )
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
            pytest.skip(
                f"backend {self.solver_name!r} is not available: missing "
                f"{spec.missing_requirements() or 'its library'}"
            )
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
        _, status = solve(
            instances.c, instances.A, instances.b, instances.lb, instances.ub, solver=solver
        )
        assert Status.names(status[1::2]) == ["infeasible"] * len(status[1::2])
        assert Status.names(status[0::2]) == ["optimal"] * len(status[0::2])

    def test_models_are_reused_across_calls_and_constraint_sets(self, solver: Solver) -> None:
        first, second = make_instances("binary-m4", 3), make_instances("binary-m8", 3)
        for instances in (first, second, first, second):
            assert_agrees_with_bruteforce(instances, solver)

    def test_warm_starts_keep_answers_exact(self, solver: Any) -> None:
        """Revisiting instances with moved costs (as training does) starts from pooled points;
        the answers stay optimal."""
        uses_starts = getattr(solver, "uses_starts", None)
        if uses_starts is None or not uses_starts():
            pytest.skip(f"backend {self.solver_name!r} takes no start point")
        instances = make_instances("dense", 2)
        rng = np.random.default_rng(0)
        starts: list[np.ndarray] = []
        solve_instance = solver.solve_instance

        def recording(model: Any, c: np.ndarray, start: np.ndarray | None = None) -> Any:
            if start is not None:
                starts.append(start.copy())
            return solve_instance(model, c, start)

        solver.solve_instance = recording
        try:
            for searching in (
                True,
                False,
            ):  # without the search around a start, every start is a MIP's
                starts.clear()
                if not searching:
                    solver.relaxation_multipliers = lambda model, c: [None] * len(c)
                for scale in (0.0, 0.01, 0.1):
                    noise = torch.as_tensor(rng.standard_normal(tuple(instances.c.shape)))
                    moved = dataclasses.replace(instances, c=instances.c * (1 + scale * noise))
                    assert_agrees_with_bruteforce(moved, solver)
        finally:
            del solver.solve_instance
            vars(solver).pop("relaxation_multipliers", None)
        assert starts, "warm_start is on but no start point was ever set"

    def test_time_limit_is_honoured(self, solver: Solver) -> None:
        if Capability.TIME_LIMIT not in solver.capabilities:
            pytest.skip(f"backend {self.solver_name!r} has no time limit")
        limited = get_solver(self.solver_name, **{**self.solver_options, "time_limit": 0.2})
        instances = market_split()
        start = time.perf_counter()
        y, status = solve(
            instances.c, instances.A, instances.b, instances.lb, instances.ub, solver=limited
        )
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


def assert_correct_on_fuzzed_instances(
    solver: Solver | str, cases: int = FUZZ_CASES, start: int = 0
) -> None:
    """No wrong ``OPTIMAL`` and no false ``INFEASIBLE`` on seeded `ilplayer.testing.fuzz` cases,
    judged against exhaustive enumeration; a failure quotes the first failing case as JSON."""
    import json

    from ilplayer.testing.fuzz import fuzz_backend
    from ilplayer.testing.fuzz_cases import fuzz_cases

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
        f"status {Status.names(status)}. Reproducer (ilplayer.testing.fuzz_cases.FuzzCase.from_json):\n"
        f"{json.dumps(case.to_json())}"
    )


def exhaustive_optimum(instances: Instances, row: int) -> float | None:
    """Plain-Python optimum of one instance (for tests of the kit itself)."""
    c = instances.c[row].numpy()
    A = (instances.A[row] if instances.A.dim() == 3 else instances.A).numpy()
    b = (instances.b[row] if instances.b.dim() == 2 else instances.b).numpy()
    best = None
    for point in itertools.product(
        *[range(int(l), int(u) + 1) for l, u in zip(instances.lb, instances.ub)]
    ):
        y = np.array(point, dtype=float)
        if (A @ y - b <= 1e-6).all():
            best = float(c @ y) if best is None else min(best, float(c @ y))
    return best
