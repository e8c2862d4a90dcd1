"""Sudoku puzzles with a unique solution, and the rules they hide.

A grid of side ``N`` (4, 6 or 9) with boxes of ``box_shape(N)`` is encoded as ``N**3`` binary
variables, one per (cell, digit): ``x[(r * N + c) * N + d] = 1`` when cell ``(r, c)`` holds
digit ``d + 1``. The game's rules are ``4 N**2`` equality rows (`sudoku_rules`): each
cell holds one digit, and each row, column and box holds each digit once. A learner is shown
none of them: it sees the givens as a cost (ILP-Loss' encoding, minus the one-hot of the
givens) and the solved grid.

`make_puzzles` draws a random solved grid by randomised search, keeps a random set of its
cells as givens and adds a cell where two completions differ until the exhaustive search finds
one completion only; `prove_unique` then checks every puzzle with a MIP backend: the
puzzle's program with the rules, the givens kept and the known solution cut off is infeasible.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "BOX_SHAPES",
    "SudokuSet",
    "box_shape",
    "decode",
    "encode",
    "make_puzzles",
    "prove_unique",
    "puzzle_costs",
    "sudoku_rules",
]

BOX_SHAPES = {4: (2, 2), 6: (2, 3), 9: (3, 3)}
"""Box shape (rows, columns) of each grid side."""

_START_GIVENS = {4: 4, 6: 8, 9: 26}  # the search adds givens from here until the puzzle is unique
_PROOF_BATCH = 256  # puzzles per solve of prove_unique


def box_shape(size: int) -> tuple[int, int]:
    """The (rows, columns) of a box of a ``size`` x ``size`` grid."""
    if size not in BOX_SHAPES:
        raise ValueError(f"size must be one of {sorted(BOX_SHAPES)}, got {size!r}")
    return BOX_SHAPES[size]


def sudoku_rules(size: int) -> tuple[np.ndarray, np.ndarray]:
    """The game's rules as ``A_eq x = b_eq`` on the one-hot encoding: ``4 size**2`` rows of 0/1
    (cells, then rows, columns and boxes, each by digit)."""
    br, bc = box_shape(size)
    N = size
    index = lambda r, c, d: (r * N + c) * N + d
    rows = [[index(r, c, d) for d in range(N)] for r in range(N) for c in range(N)]
    for d in range(N):
        rows += [[index(r, c, d) for c in range(N)] for r in range(N)]
        rows += [[index(r, c, d) for r in range(N)] for c in range(N)]
        rows += [
            [index(top + i, left + j, d) for i in range(br) for j in range(bc)]
            for top in range(0, N, br)
            for left in range(0, N, bc)
        ]
    A = np.zeros((len(rows), N**3))
    for k, cols in enumerate(rows):
        A[k, cols] = 1.0
    return A, np.ones(len(rows))


def encode(grids: np.ndarray) -> np.ndarray:
    """Grids (B, N, N) of digits 1..N (0: empty) -> one-hot (B, N**3); an empty cell is all 0."""
    grids = np.asarray(grids)
    N = grids.shape[-1]
    out = np.zeros((*grids.shape[:-2], N * N, N))
    flat = grids.reshape(*grids.shape[:-2], N * N)
    filled = flat > 0
    np.put_along_axis(
        out, np.clip(flat - 1, 0, N - 1)[..., None], filled[..., None].astype(float), axis=-1
    )
    return out.reshape(*grids.shape[:-2], N**3)


def decode(x: np.ndarray | torch.Tensor, size: int) -> np.ndarray:
    """One-hot (B, N**3) -> grids (B, N, N) of digits 1..N, 0 where a cell holds no digit or several."""
    x = np.asarray(x).reshape(-1, size * size, size) > 0.5
    digits = np.where(x.sum(-1) == 1, x.argmax(-1) + 1, 0)
    return digits.reshape(-1, size, size)


def puzzle_costs(givens: np.ndarray) -> np.ndarray:
    """ILP-Loss' cost of a puzzle: minus the one-hot of its givens (B, N**3)."""
    return -encode(givens)


# --- exhaustive search --------------------------------------------------------------------------


class _Search:
    """Depth-first search over one grid with bit masks and the fewest-candidates cell first."""

    def __init__(self, grid: np.ndarray, rng: np.random.Generator | None = None) -> None:
        self.N = N = grid.shape[0]
        self.br, self.bc = box_shape(N)
        self.full = (1 << N) - 1
        self.grid = [int(v) for v in grid.reshape(-1)]
        self.rows, self.cols, self.boxes = [0] * N, [0] * N, [0] * N
        self.rng = rng
        self.valid = True
        for i, v in enumerate(self.grid):
            if v:
                r, c = divmod(i, N)
                bit = 1 << (v - 1)
                b = self._box(r, c)
                if (self.rows[r] | self.cols[c] | self.boxes[b]) & bit:
                    self.valid = False
                self.rows[r] |= bit
                self.cols[c] |= bit
                self.boxes[b] |= bit
        self.empty = [i for i, v in enumerate(self.grid) if not v]

    def _box(self, r: int, c: int) -> int:
        return (r // self.br) * (self.N // self.bc) + c // self.bc

    def solutions(self, limit: int) -> list[list[int]]:
        """Up to ``limit`` completions (digits in a random order with ``rng``, else ascending)."""
        found: list[list[int]] = []
        if self.valid:
            self._search(found, limit)
        return found

    def _search(self, found: list[list[int]], limit: int) -> None:
        N = self.N
        best, best_free, best_count = -1, 0, N + 1
        for k, i in enumerate(self.empty):
            if self.grid[i]:
                continue
            r, c = divmod(i, N)
            free = self.full & ~(self.rows[r] | self.cols[c] | self.boxes[self._box(r, c)])
            count = bin(free).count("1")
            if count < best_count:
                best, best_free, best_count = k, free, count
                if count <= 1:
                    break
        if best < 0:
            found.append(list(self.grid))
            return
        if best_count == 0:
            return
        i = self.empty[best]
        r, c = divmod(i, N)
        b = self._box(r, c)
        digits = [d for d in range(N) if best_free >> d & 1]
        if self.rng is not None:
            self.rng.shuffle(digits)
        for d in digits:
            bit = 1 << d
            self.grid[i] = d + 1
            self.rows[r] |= bit
            self.cols[c] |= bit
            self.boxes[b] |= bit
            self._search(found, limit)
            self.grid[i] = 0
            self.rows[r] &= ~bit
            self.cols[c] &= ~bit
            self.boxes[b] &= ~bit
            if len(found) >= limit:
                return


def count_solutions(grid: np.ndarray, limit: int = 2) -> int:
    """How many completions ``grid`` (0: empty) has, counted up to ``limit``."""
    return len(_Search(np.asarray(grid)).solutions(limit))


def _random_grid(size: int, rng: np.random.Generator) -> np.ndarray:
    return np.array(_Search(np.zeros((size, size), dtype=int), rng).solutions(1)[0]).reshape(
        size, size
    )


def _puzzle(solution: np.ndarray, start_givens: int, rng: np.random.Generator) -> np.ndarray:
    """Givens of ``solution``: ``start_givens`` random cells, then a cell where two completions
    differ, until one completion is left."""
    N = solution.shape[0]
    order = rng.permutation(N * N)
    givens = np.zeros(N * N, dtype=int)
    givens[order[:start_givens]] = solution.reshape(-1)[order[:start_givens]]
    while True:
        found = _Search(givens.reshape(N, N)).solutions(2)
        if len(found) < 2:
            return givens.reshape(N, N)
        differ = np.flatnonzero(np.array(found[0]) != np.array(found[1]))
        cell = rng.choice(differ)
        givens[cell] = solution.reshape(-1)[cell]


@dataclass(frozen=True)
class SudokuSet:
    """Puzzles of one size: ``givens`` (B, N, N) with 0 for empty cells, their ``solutions``."""

    givens: np.ndarray
    solutions: np.ndarray

    @property
    def size(self) -> int:
        return int(self.givens.shape[-1])

    def __len__(self) -> int:
        return len(self.givens)

    def __getitem__(self, rows: slice | np.ndarray) -> SudokuSet:
        return SudokuSet(self.givens[rows], self.solutions[rows])

    def concat(self, other: SudokuSet) -> SudokuSet:
        return SudokuSet(
            np.concatenate([self.givens, other.givens]),
            np.concatenate([self.solutions, other.solutions]),
        )

    def costs(self) -> np.ndarray:
        """`puzzle_costs` of the givens."""
        return puzzle_costs(self.givens)

    def targets(self) -> np.ndarray:
        """The solutions, one-hot (B, N**3)."""
        return encode(self.solutions)

    def num_givens(self) -> np.ndarray:
        return (self.givens > 0).reshape(len(self), -1).sum(-1)

    def save_npz(self, path: str | Path) -> None:
        """Write the pairs as ``ilplayer learn`` reads them: ``c``, ``y``, the box ``lb``, ``ub``
        (and the ``givens`` and ``solutions`` grids)."""
        np.savez_compressed(
            path,
            c=self.costs(),
            y=self.targets(),
            lb=0.0,
            ub=1.0,
            givens=self.givens,
            solutions=self.solutions,
        )


def make_puzzles(
    size: int, count: int, seed: int = 0, start_givens: int | None = None, progress: bool = False
) -> SudokuSet:
    """``count`` puzzles with a unique solution, seeded: a random solved grid, ``start_givens``
    random givens (default: 4 at 4x4, 8 at 6x6, 26 at 9x9) and a differing cell added until the
    exhaustive search finds one completion (9x9: 30.7 givens on average, 26-39). ``progress``:
    a bar over the puzzles."""
    box_shape(size)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive integer, got {count!r}")
    rng = np.random.default_rng(seed)
    start = _START_GIVENS[size] if start_givens is None else start_givens
    if not 0 <= start <= size * size:
        raise ValueError(f"start_givens must lie in [0, {size * size}], got {start!r}")
    from tqdm import tqdm

    solutions = np.stack([_random_grid(size, rng) for _ in range(count)])
    bar = tqdm(
        solutions,
        desc=f"{size}x{size} puzzles",
        unit="puzzle",
        disable=not progress,
        dynamic_ncols=True,
    )
    givens = np.stack([_puzzle(s, start, rng) for s in bar])
    return SudokuSet(givens, solutions)


def prove_unique(
    puzzles: SudokuSet, solver: str = "highs", progress: bool = False, **solve_options: Any
) -> np.ndarray:
    """Whether each puzzle's solution is its only one, proved by ``solver``: the puzzle's program
    (the rules, every given kept) with the known solution cut off (``y·x <= N**2 - 1``) must
    be infeasible. Returns a bool per puzzle (False: a second solution, or no proof).
    ``progress``: a bar over the puzzles."""
    from tqdm import tqdm

    from ilplayer.core.records import Status
    from ilplayer.layer import solve

    N = puzzles.size
    A_eq, b_eq = (torch.as_tensor(t) for t in sudoku_rules(N))
    proved = []
    bar = tqdm(
        total=len(puzzles),
        desc=f"uniqueness ({solver})",
        unit="puzzle",
        disable=not progress,
        dynamic_ncols=True,
    )
    for first in range(0, len(puzzles), _PROOF_BATCH):  # the batch's rows are expanded per instance
        part = puzzles[first : first + _PROOF_BATCH]
        givens, y = encode(part.givens), part.targets()
        # kept givens: -givens·x <= -#givens; the cut: y·x <= N^2 - 1
        A = torch.as_tensor(np.stack([-givens, y], axis=1))
        b = torch.as_tensor(np.stack([-givens.sum(-1), np.full(len(y), N * N - 1.0)], axis=1))
        _, status = solve(
            torch.zeros(len(y), N**3, dtype=torch.float64),
            A,
            b,
            0,
            1,
            solver=solver,
            A_eq=A_eq,
            b_eq=b_eq,
            **solve_options,
        )
        proved.append((status == Status.INFEASIBLE).numpy())
        bar.update(len(y))
    bar.close()
    return np.concatenate(proved)
