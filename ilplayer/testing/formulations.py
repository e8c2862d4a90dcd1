"""Textbook formulations as constraint matrices, shared by the experiments and the benchmarks:
PyEPO's travelling salesperson models (GG and MTZ: binary arcs with continuous flows or
orders, a mixed-integer program) and the shortest path on a grid as a sparse network.

The TSP's costs are per undirected edge (PyEPO's ``num_nodes * (num_nodes - 1) / 2``, edges
``(i, j)``, ``i < j``, in ``itertools.combinations`` order); both formulations are built
variable for variable as in ``pyepo.model.grb.tspGGModel`` and ``tspMTZModel``:

* ``gg`` (Gavish-Graves): binary arcs ``x_ij`` for both directions of every edge, then
  continuous flows ``y_ij >= 0`` with ``y_ij <= (n - 1) x_ij`` for ``i != 0`` and one unit of
  flow consumed at every node but the depot 0;
* ``mtz`` (Miller-Tucker-Zemlin): the same arcs, then continuous orders ``u_i >= 0`` with
  ``u_j - u_i >= n (x_ij - 1) + 1`` for arcs between nodes other than 0.

Each node has one arc in and one arc out (equalities). PyEPO leaves the flows and orders
unbounded above; here they get ``ub = n - 1``, which every tour meets (a flow never exceeds
``n - 1`` and the orders of a tour fit in ``0 .. n - 2``), so the feasible tours and their
costs are the same and the backends may warm-start (an infinite bound turns HiGHS' starts
off). A cost vector ``c`` (edges) becomes the program's costs through `TspProgram.embed`
(both arcs of an edge get its cost, the flows 0), and a solution's edges are ``y @ embed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

__all__ = ["FORMULATIONS", "TspProgram", "grid_network", "tsp_program"]

FORMULATIONS = ("gg", "mtz")


def grid_network(k: int) -> tuple[Any, np.ndarray]:
    """The shortest path on a ``k x k`` grid from node 0 to node ``k * k - 1`` (PyEPO's arc
    order: per row, the arcs to the right, then those downwards): ``A_eq`` the node-arc
    incidence as a scipy.sparse CSR matrix, ``b_eq`` the flow balance."""
    import scipy.sparse as sparse

    arcs = []
    for i in range(k):
        arcs += [(i * k + j, i * k + j + 1) for j in range(k - 1)]
        if i < k - 1:
            arcs += [(i * k + j, i * k + j + k) for j in range(k)]
    tail, head = np.array(arcs).T
    columns = np.arange(len(arcs))
    A_eq = sparse.csr_matrix(
        (
            np.r_[-np.ones(len(arcs)), np.ones(len(arcs))],
            (np.r_[tail, head], np.r_[columns, columns]),
        ),
        shape=(k * k, len(arcs)),
    )
    b_eq = np.zeros(k * k)
    b_eq[0], b_eq[-1] = -1.0, 1.0
    return A_eq, b_eq


@dataclass(frozen=True)
class TspProgram:
    """The constraint matrices of one formulation, and the map between edges and variables."""

    num_nodes: int
    formulation: str
    edges: list[tuple[int, int]]
    A: np.ndarray
    b: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    integrality: np.ndarray
    embed: np.ndarray
    """(variables, edges): ``c_edges @ embed.T`` are the program's costs, ``y @ embed`` the
    edges a solution uses."""

    def tour(self, used: np.ndarray) -> list[int]:
        """The tour (from node 0) through the edges marked in ``used`` (edges)."""
        following: dict[int, list[int]] = {i: [] for i in range(self.num_nodes)}
        for (i, j), on in zip(self.edges, used):
            if on > 0.5:
                following[i].append(j)
                following[j].append(i)
        tour, previous = [0], -1
        while len(tour) < self.num_nodes:
            step = next(k for k in following[tour[-1]] if k != previous)
            previous = tour[-1]
            tour.append(step)
        return tour


def _stacked(pairs: list[tuple[np.ndarray, float]], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and right-hand sides as ``(A, b)``: (k, size) and (k,)."""
    return np.array([r for r, _ in pairs]).reshape(-1, size), np.array([v for _, v in pairs])


def tsp_program(num_nodes: int, formulation: str = "gg") -> TspProgram:
    """PyEPO's GG or MTZ model of the TSP on ``num_nodes`` cities, as matrices."""
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {FORMULATIONS}, got {formulation!r}")
    if num_nodes < 3:
        raise ValueError(f"num_nodes must be at least 3, got {num_nodes}")
    n = num_nodes
    edges = list(combinations(range(n), 2))
    arcs = edges + [(j, i) for (i, j) in edges]  # PyEPO's directed_edges
    arc = {a: k for k, a in enumerate(arcs)}
    extra = len(arcs) if formulation == "gg" else n  # flows per arc, or orders per node
    size = len(arcs) + extra
    rows_eq, rows = [], []
    for j in range(n):  # one arc into j, one arc out of j
        row = np.zeros(size)
        row[[arc[(i, j)] for i in range(n) if i != j]] = 1.0
        rows_eq.append((row, 1.0))
        row = np.zeros(size)
        row[[arc[(j, k)] for k in range(n) if k != j]] = 1.0
        rows_eq.append((row, 1.0))
    flow = lambda a: len(arcs) + arc[a]
    if formulation == "gg":
        for i in range(1, n):  # flow out of i minus flow into i (from nodes other than 0) = 1
            row = np.zeros(size)
            row[[flow((i, j)) for j in range(n) if j != i]] = 1.0
            row[[flow((j, i)) for j in range(1, n) if j != i]] = -1.0
            rows_eq.append((row, 1.0))
        for i, j in arcs:  # y_ij <= (n - 1) x_ij
            if i != 0:
                row = np.zeros(size)
                row[flow((i, j))], row[arc[(i, j)]] = 1.0, -(n - 1.0)
                rows.append((row, 0.0))
    else:
        order = lambda i: len(arcs) + i
        for i, j in arcs:  # u_j - u_i >= n (x_ij - 1) + 1  <=>  n x_ij + u_i - u_j <= n - 1
            if i != 0 and j != 0:
                row = np.zeros(size)
                row[arc[(i, j)]], row[order(i)], row[order(j)] = float(n), 1.0, -1.0
                rows.append((row, n - 1.0))
    A, b = _stacked(rows, size)
    A_eq, b_eq = _stacked(rows_eq, size)
    embed = np.zeros((size, len(edges)))
    for e in range(len(edges)):
        embed[e, e] = embed[len(edges) + e, e] = 1.0
    integrality = np.arange(size) < len(arcs)
    return TspProgram(
        num_nodes=n,
        formulation=formulation,
        edges=edges,
        A=A,
        b=b,
        A_eq=A_eq,
        b_eq=b_eq,
        lb=np.zeros(size),
        ub=np.where(integrality, 1.0, n - 1.0),
        integrality=integrality,
        embed=embed,
    )
