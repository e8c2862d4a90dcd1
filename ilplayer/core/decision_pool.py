"""A pool of known decisions that answers a share of the training solves (``solve_ratio``).

PyEPO's rule (Mulamba et al., IJCAI 2021): each training batch calls the solver with
probability ``solve_ratio``; the other batches take, for every instance, the pooled decision
that is best under its predicted costs. Every solve adds its answers to the pool, which starts
from the decisions a user knows (the training set's, say). The contrastive and ranking losses
read the whole pool.

A pool holds decisions of one program (its rows, box and integrality): a pooled point is
feasible only there, so the rule refuses a batch whose constraints differ from the pool's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ilplayer.core.batch import ProblemTensors
from ilplayer.core.matrices import as_csr, is_sparse
from ilplayer.core.records import Status, has_solution

__all__ = ["DecisionPool", "PoolRule", "check_solve_ratio", "fingerprint", "pool_rule"]

Solve = Callable[[ProblemTensors], tuple[torch.Tensor, torch.Tensor, torch.Tensor]]


class DecisionPool:
    """Distinct known decisions (k, n), float64 on the CPU; grows with
    [`add`][ilplayer.core.decision_pool.DecisionPool.add].

    Example:
        >>> pool = DecisionPool(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
        >>> pool.best(torch.tensor([[2.0, 1.0]])).tolist()
        [[0.0, 1.0]]
    """

    def __init__(self, decisions: Any = None) -> None:
        self._decisions: torch.Tensor | None = None
        if decisions is not None:
            self.add(decisions)

    @property
    def decisions(self) -> torch.Tensor:
        """The pooled decisions (k, n); raises while the pool is empty."""
        if self._decisions is None:
            raise RuntimeError(
                "the decision pool is empty: give pool= (known decisions, e.g. the training "
                "set's optimal solutions) or let a solve fill it first"
            )
        return self._decisions

    def __len__(self) -> int:
        return 0 if self._decisions is None else int(self._decisions.shape[0])

    def add(self, decisions: Any) -> None:
        """Add rows (k, n) of decisions (tensor or array); duplicates are kept once."""
        rows = torch.as_tensor(
            np.asarray(
                decisions.detach().cpu() if isinstance(decisions, torch.Tensor) else decisions,
                dtype=np.float64,
            )
        )
        if rows.dim() != 2:
            raise ValueError(
                f"pool: decisions must be a (k, n) matrix, got shape {tuple(rows.shape)}"
            )
        if not bool(torch.isfinite(rows).all()):
            raise ValueError("pool: decisions must be finite")
        if self._decisions is not None:
            if rows.shape[1] != self._decisions.shape[1]:
                raise ValueError(
                    f"pool: decisions have {rows.shape[1]} variables, the pool's have "
                    f"{self._decisions.shape[1]}"
                )
            rows = torch.cat([self._decisions, rows])
        self._decisions = torch.unique(rows + 0.0, dim=0)  # + 0.0: -0.0 and 0.0 are one decision

    def best(self, c: torch.Tensor) -> torch.Tensor:
        """Per row of ``c`` (B, n), minimisation form: the pooled decision of least cost."""
        pool = self.decisions.to(device=c.device)
        return pool[torch.argmin(c.to(torch.float64) @ pool.T, dim=1)]


def check_solve_ratio(solve_ratio: Any) -> float:
    """``solve_ratio`` as a float in [0, 1], or a ValueError that names it."""
    if (
        isinstance(solve_ratio, bool)
        or not isinstance(solve_ratio, (int, float))
        or not 0 <= solve_ratio <= 1
    ):
        raise ValueError(
            f"solve_ratio must be a number in [0, 1] (the share of batches that call the "
            f"solver), got {solve_ratio!r}"
        )
    return float(solve_ratio)


def fingerprint(problem: ProblemTensors) -> bytes:
    """A digest of ``problem``'s constraints (rows, box, integrality, cost map): equal for
    batches of one program."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (problem.A, problem.b, problem.A_eq, problem.b_eq, problem.cost_map):
        if part is None:
            digest.update(b"-")
        elif is_sparse(part):
            csr = as_csr(part)
            for array in (np.asarray(csr.shape), csr.indptr, csr.indices, csr.data):
                digest.update(np.ascontiguousarray(array).tobytes())
        else:
            dense = part.to_dense() if part.is_sparse else part
            digest.update(repr(tuple(dense.shape)).encode())
            digest.update(dense.detach().cpu().to(torch.float64).contiguous().numpy().tobytes())
    for array in (problem.lb, problem.ub, problem.integrality):
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.digest()


class PoolRule:
    """Which training solves the solver answers and which the pool answers.

    Args:
        solve_ratio: the share of batches that call the solver (1: all of them, the pool
            only records; 0: none once the pool holds a decision).
        pool: known decisions of the program (k, n), or a `DecisionPool` to share.
        seed: the draws of "solve or pool" (one per batch), for reproducible runs.
    """

    def __init__(self, solve_ratio: float = 1.0, pool: Any = None, seed: int | None = None) -> None:
        self.solve_ratio = check_solve_ratio(solve_ratio)
        self.pool = pool if isinstance(pool, DecisionPool) else DecisionPool(pool)
        # NumPy's Mersenne Twister, one uniform draw per batch: PyEPO's own rule, so that the
        # same seed answers the same batches from the pool in both libraries.
        self._random = np.random.RandomState(seed)
        self._program: bytes | None = None
        self.solved_batches = 0
        self.pooled_batches = 0

    def _check_program(self, problem: ProblemTensors) -> None:
        if not problem.shared_constraints:
            raise ValueError(
                "solve_ratio / pool: a pool holds decisions of one program, so A, b (and A_eq, "
                "b_eq) must be shared by the batch ((m, n) and (m,)), not given per instance"
            )
        self.check_key(fingerprint(problem))

    def check_key(self, key: bytes) -> None:
        """Refuse a batch whose constraints' [`fingerprint`][ilplayer.core.decision_pool.fingerprint]
        differs from those of the pool's decisions (the first batch's sets it)."""
        if self._program is None:
            self._program = key
        elif key != self._program:
            raise ValueError(
                "solve_ratio / pool: the batch's constraints (A, b, A_eq, b_eq, bounds, "
                "integrality or cost map) differ from those of the pool's decisions; use one pool per "
                "program"
            )

    def draw_solve(self) -> bool:
        """Whether this batch calls the solver (always while the pool is empty)."""
        return len(self.pool) == 0 or self._random.uniform() < self.solve_ratio

    def solve(
        self, problem: ProblemTensors, exact: Solve
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``exact(problem)`` for a drawn share of batches (its answers join the pool), else
        the best pooled decision per instance with [`Status.POOLED`][ilplayer.Status.POOLED]."""
        self._check_program(problem)
        if self.draw_solve():
            y, status, objective = exact(problem)
            self.record(y, status)
            return y, status, objective
        self.pooled_batches += 1
        y = self.pool.best(problem.c)
        status = torch.full(
            (problem.batch_size,), int(Status.POOLED), dtype=torch.int8, device=y.device
        )
        return y, status, (problem.c.to(torch.float64) * y).sum(-1)

    def record(self, y: torch.Tensor, status: torch.Tensor) -> None:
        """Add the solved instances' decisions to the pool."""
        self.solved_batches += 1
        solved = has_solution(status) & (status != int(Status.POOLED))  # a solver's answers
        if bool(solved.any()):
            self.pool.add(y[solved])

    def refresh(
        self,
        problem: ProblemTensors | Callable[[], ProblemTensors],
        exact: Solve,
        device: torch.device,
        key: bytes | None = None,
    ) -> torch.Tensor:
        """For the losses that read the whole pool: solve the batch in a drawn share of calls
        (its answers join the pool); the pool's decisions on ``device``.

        ``problem`` may be a function that builds it, with ``key`` the constraints' fingerprint
        known beforehand (an immutable program's): then a batch the pool answers is never built."""
        if key is None:
            problem = problem() if callable(problem) else problem
            self._check_program(problem)
        else:
            self.check_key(key)
        if self.draw_solve():
            y, status, _ = exact(problem() if callable(problem) else problem)
            self.record(y, status)
        else:
            self.pooled_batches += 1
        return self.pool.decisions.to(device)


def pool_rule(solve_ratio: Any = 1.0, pool: Any = None, seed: int | None = None) -> PoolRule | None:
    """The rule for a layer's or loss's ``solve_ratio`` and ``pool`` arguments: None when
    nothing is pooled (ratio 1, no pool); ``pool`` itself when it is a
    [`PoolRule`][ilplayer.core.decision_pool.PoolRule]."""
    if isinstance(pool, PoolRule):
        if solve_ratio != 1.0:
            raise ValueError("solve_ratio: give it to the PoolRule passed as pool=, not beside it")
        return pool
    ratio = check_solve_ratio(solve_ratio)
    if ratio == 1.0 and pool is None:
        return None
    return PoolRule(ratio, pool, seed)
