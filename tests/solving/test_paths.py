"""Shortest paths on acyclic graphs, answered before any backend (`ilplayer.solvers.paths`):
against exhaustive enumeration and HiGHS' LP, on grids and random acyclic graphs, costs of
either sign; what is not such a program goes to the backend."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer.core.records import ILPBatch, Status
from ilplayer.solvers.paths import network_of, shortest_paths
from ilplayer.testing.formulations import grid_network


def random_dag(rng: np.random.Generator, nodes: int, arcs: int) -> tuple[np.ndarray, np.ndarray]:
    """A dense incidence matrix of ``arcs`` random arcs, each from an earlier node to a later
    one in a shuffled order (acyclic), and a unit flow from the first node to the last."""
    order = rng.permutation(nodes)
    A_eq = np.zeros((nodes, arcs))
    for j in range(arcs):
        u, v = sorted(rng.choice(nodes, 2, replace=False))
        A_eq[order[u], j], A_eq[order[v], j] = -1.0, 1.0
    b_eq = np.zeros(nodes)
    b_eq[order[0]], b_eq[order[-1]] = -1.0, 1.0
    return A_eq, b_eq


def flow_batch(c: np.ndarray, A_eq: np.ndarray, b_eq: np.ndarray, ub: float = 1.0) -> ILPBatch:
    n = c.shape[1]
    return ILPBatch(
        c=c,
        A=np.zeros((0, n)),
        b=np.zeros(0),
        lb=np.zeros(n),
        ub=np.full(n, ub),
        A_eq=A_eq,
        b_eq=b_eq,
    )


def test_random_acyclic_graphs_match_exhaustive_enumeration():
    rng = np.random.default_rng(0)
    brute = ilplayer.get_solver("bruteforce")
    checked = infeasible = 0
    for _ in range(60):
        A_eq, b_eq = random_dag(rng, int(rng.integers(3, 7)), int(rng.integers(3, 13)))
        c = rng.normal(size=(8, A_eq.shape[1]))
        c[:2] = np.round(c[:2])  # ties among integer costs: any optimum will do
        batch = flow_batch(c, A_eq, b_eq)
        network = network_of(batch)
        assert network is not None
        y, status, objective = shortest_paths(batch, network)
        expected = brute.solve(batch)
        assert np.array_equal(status, expected.status)
        solved = status == Status.OPTIMAL
        np.testing.assert_allclose(objective[solved], expected.objective[solved], atol=1e-12)
        assert np.allclose(y[solved] @ A_eq.T, b_eq)  # each answer is a source-sink path
        checked += int(solved.sum())
        infeasible += int((~solved).sum())
    assert checked > 200 and infeasible > 0  # unreachable sinks were among them


@pytest.mark.parametrize("sparse", [True, False], ids=["sparse", "dense"])
def test_grids_of_spo_plus_costs_match_highs_lp(sparse):
    pytest.importorskip("highspy", reason="highspy is not installed")
    A_eq, b_eq = grid_network(6)
    rng = np.random.default_rng(1)
    c = 2 * rng.uniform(0, 2, (40, A_eq.shape[1])) - rng.uniform(0, 2, (40, A_eq.shape[1]))
    for ub in (1.0, np.inf):  # the LP's box: a unit, or none (PyEPO's other models)
        batch = flow_batch(c, A_eq if sparse else A_eq.toarray(), b_eq, ub)
        network = network_of(batch)
        assert network is not None
        y, status, objective = shortest_paths(batch, network)
        lp = flow_batch(c, A_eq.toarray(), b_eq, ub)
        expected = ilplayer.get_solver("highs").solve(
            ILPBatch(**{**lp.__dict__, "integrality": np.zeros(lp.num_variables, bool)})
        )
        assert (status == Status.OPTIMAL).all()
        np.testing.assert_allclose(objective, expected.objective, rtol=1e-9, atol=1e-9)


def test_either_sign_convention_is_read():
    """Rows written as out - in (the source +1): the same graph, each arc reversed."""
    A_eq, b_eq = grid_network(4)
    c = np.random.default_rng(2).normal(size=(5, A_eq.shape[1]))
    y, status, objective = shortest_paths(
        batch := flow_batch(c, -A_eq.toarray(), -b_eq), network_of(batch)
    )
    forward = flow_batch(c, A_eq.toarray(), b_eq)
    expected = shortest_paths(forward, network_of(forward))
    np.testing.assert_allclose(objective, expected[2])
    assert (status == Status.OPTIMAL).all()


@pytest.mark.parametrize(
    "change",
    ["cycle", "inequality", "lower bound", "upper bound", "two units", "a column of three"],
)
def test_what_is_not_a_unit_flow_on_an_acyclic_graph_goes_to_the_backend(change):
    A_eq, b_eq = grid_network(3)
    A_eq = A_eq.toarray()
    n = A_eq.shape[1]
    c = np.random.default_rng(3).normal(size=(4, n))
    fields = dict(c=c, A=np.zeros((0, n)), b=np.zeros(0), lb=np.zeros(n), ub=np.ones(n))
    if change == "cycle":  # an arc back from the sink to the source
        A_eq = np.c_[A_eq, np.zeros(len(A_eq))]
        A_eq[-1, -1], A_eq[0, -1] = -1.0, 1.0
        fields = dict(c=np.c_[c, np.ones(4)], A=np.zeros((0, n + 1)), b=np.zeros(0))
        fields.update(lb=np.zeros(n + 1), ub=np.ones(n + 1))
    elif change == "inequality":
        fields.update(A=np.ones((1, n)), b=np.array([3.0]))
    elif change == "lower bound":
        fields["lb"] = np.r_[1.0, np.zeros(n - 1)]
    elif change == "upper bound":
        fields["ub"] = np.r_[0.0, np.ones(n - 1)]
    elif change == "two units":
        b_eq = 2 * b_eq
    else:
        A_eq = A_eq.copy()
        A_eq[1, 0] = 1.0 if A_eq[1, 0] == 0 else 0.0
    assert network_of(ILPBatch(**fields, A_eq=A_eq, b_eq=b_eq)) is None


def test_the_oracle_answers_a_grid_without_its_backend(monkeypatch):
    """Through an `Oracle`: the backend is never asked, the answers are source-sink paths,
    and where the sink cannot be reached (every row still holding an arc) every instance is
    ``infeasible``."""
    from ilplayer.parallel.backend import Backend

    def refuse(self, groups):
        if groups:
            raise AssertionError("the backend was asked")
        return []

    monkeypatch.setattr(Backend, "solve_groups", refuse)
    A_eq, b_eq = grid_network(4)
    A_eq, b_eq = torch.as_tensor(A_eq.toarray()), torch.as_tensor(b_eq)
    c = torch.rand(
        6, A_eq.shape[1], dtype=torch.float64, generator=torch.Generator().manual_seed(4)
    )
    oracle = ilplayer.Oracle(ilplayer.Program(A_eq=A_eq, b_eq=b_eq, lb=0, ub=1), solver="highs")
    y, status = oracle(c)
    assert ilplayer.Status.names(status) == ["optimal"] * 6
    assert torch.allclose(y.double() @ A_eq.T, b_eq)
    tail, head = (A_eq < 0).double().argmax(0), (A_eq > 0).double().argmax(0)
    kept = ~((tail % 4 == 1) & (head == tail + 1))  # no arc from the grid's column 1 to 2
    cut = ilplayer.Oracle(
        ilplayer.Program(A_eq=A_eq[:, kept], b_eq=b_eq, lb=0, ub=1), solver="highs"
    )
    assert ilplayer.Status.names(cut(c[:, kept])[1]) == ["infeasible"] * 6
