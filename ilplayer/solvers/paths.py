"""Shortest paths in a directed acyclic graph: the unit flow programs answered before any backend.

A program whose only rows are a node-arc incidence matrix (each variable an arc, ``+1`` in its
head's row and ``-1`` in its tail's), whose right-hand side sends one unit from a source
(``-1``) to a sink (``+1``), on arcs ``0 <= y <= u`` with every ``u >= 1``, is a minimum-cost
unit flow. On an acyclic graph every such flow is a convex combination of source-to-sink
paths, so the cheapest path is an optimum whatever the costs' signs (SPO+ asks for ``2 c_hat -
c``), integer or not: the incidence matrix is totally unimodular. PyEPO's shortest path on a
grid is one. Dynamic programming over the graph's topological layers answers a whole batch in
a few NumPy operations per layer, where a backend solves an LP per instance.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from ilplayer.core.matrices import is_sparse
from ilplayer.core.records import ILPBatch, Status

__all__ = ["Network", "network_of", "shortest_paths"]

_KEPT = 64  # the graphs of the last constraint sets seen (a program's rows: one)
_graphs: OrderedDict[bytes, Network | None] = OrderedDict()
_lock = threading.Lock()


@dataclass(frozen=True)
class Network:
    """An acyclic graph read off the rows: the arcs' tails, the source and the sink, and its
    layers after the first (nodes whose arcs in all come from earlier layers), each as
    ``(nodes, arcs in (nodes, most) padded with -1)``."""

    tail: np.ndarray
    source: int
    sink: int
    layers: tuple[tuple[np.ndarray, np.ndarray], ...]


def _key(batch: ILPBatch) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    A_eq: Any = batch.A_eq  # an array or a CSR matrix
    parts = (A_eq.data, A_eq.indices, A_eq.indptr) if is_sparse(A_eq) else (A_eq,)
    for part in (*parts, batch.b_eq, batch.ub, np.array(A_eq.shape)):
        digest.update(np.ascontiguousarray(part).tobytes())
    return digest.digest()


def _arcs(batch: ILPBatch) -> tuple[np.ndarray, np.ndarray] | None:
    """``(tail, head)`` of every column when ``A_eq`` is an incidence matrix, else None."""
    A_eq: Any = batch.A_eq
    n = batch.num_variables
    if is_sparse(A_eq):
        coo = A_eq.tocoo()
        rows, columns, values = coo.row, coo.col, coo.data
    else:
        rows, columns = np.nonzero(A_eq)
        values = A_eq[rows, columns]
    if len(values) != 2 * n or not np.isin(values, (-1.0, 1.0)).all():
        return None
    tail, head = np.full(n, -1), np.full(n, -1)
    tail[columns[values < 0]] = rows[values < 0]
    head[columns[values > 0]] = rows[values > 0]
    if (tail < 0).any() or (head < 0).any():  # a column without its -1 or its +1
        return None
    return tail, head


def _layers(tail: np.ndarray, head: np.ndarray, nodes: int) -> list[np.ndarray] | None:
    """The topological layers (Kahn's), or None when the graph has a cycle."""
    arriving = np.bincount(head, minlength=nodes)
    layer = np.flatnonzero(arriving == 0)
    layers, seen = [], 0
    while len(layer):
        layers.append(layer)
        seen += len(layer)
        leaving = np.flatnonzero(np.isin(tail, layer))
        np.subtract.at(arriving, head[leaving], 1)
        reached = np.unique(head[leaving])
        layer = reached[arriving[reached] == 0]
    return layers if seen == nodes else None


def _network(batch: ILPBatch) -> Network | None:
    found = _arcs(batch)
    if found is None:
        return None
    b_eq = batch.b_eq
    sources, sinks = np.flatnonzero(b_eq == -1.0), np.flatnonzero(b_eq == 1.0)
    if len(sources) != 1 or len(sinks) != 1 or np.count_nonzero(b_eq) != 2:
        return None
    tail, head = found
    layers = _layers(tail, head, batch.num_equalities)
    if layers is None:
        return None
    # Each layer's arcs in, padded: the arcs sorted by head, each node's run of them.
    by_head = np.argsort(head, kind="stable")
    arriving = np.bincount(head, minlength=batch.num_equalities)
    first = np.concatenate([[0], np.cumsum(arriving)[:-1]])
    padded = []
    for layer in layers[1:]:
        width = np.arange(int(arriving[layer].max()))
        at = first[layer][:, None] + width[None, :]
        inside = width[None, :] < arriving[layer][:, None]
        padded.append((layer, np.where(inside, by_head[np.minimum(at, len(head) - 1)], -1)))
    return Network(tail, int(sources[0]), int(sinks[0]), tuple(padded))


def network_of(batch: ILPBatch) -> Network | None:
    """``batch``'s graph when it is a unit flow on an acyclic graph (module docstring), else
    None; kept per constraint set."""
    if (
        batch.num_constraints
        or batch.num_equalities < 2
        or (batch.lb != 0.0).any()
        or (batch.ub < 1.0).any()
    ):
        return None
    key = _key(batch)
    with _lock:  # oracles in several threads share the kept graphs
        if key in _graphs:
            _graphs.move_to_end(key)
            return _graphs[key]
    network = _network(batch)
    with _lock:
        _graphs[key] = network
        while len(_graphs) > _KEPT:
            _graphs.popitem(last=False)
    return network


def shortest_paths(batch: ILPBatch, network: Network) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(y, status, objective)`` of every instance: the cheapest source-to-sink path (the
    first among equals), ``Status.INFEASIBLE`` where the sink cannot be reached."""
    c, tail = batch.c, network.tail
    k, nodes = len(c), batch.num_equalities
    distance = np.full((k, nodes), np.inf)
    distance[:, network.source] = 0.0
    arriving = np.full((k, nodes), -1)
    for layer, arcs in network.layers:
        if network.source in layer:  # the source stays at 0 (nothing before it reaches it)
            keep = layer != network.source
            layer, arcs = layer[keep], arcs[keep]
        through = np.where(arcs >= 0, distance[:, tail[arcs]] + c[:, arcs], np.inf)
        best = through.argmin(axis=2)
        distance[:, layer] = np.take_along_axis(through, best[..., None], axis=2)[..., 0]
        arriving[:, layer] = arcs[np.arange(len(layer)), best]
    reached = np.isfinite(distance[:, network.sink])
    y = np.zeros(c.shape)
    node = np.full(k, network.sink)
    walking = np.flatnonzero(reached & (node != network.source))
    while len(walking):  # back from the sink along each path's arcs
        arc = arriving[walking, node[walking]]
        y[walking, arc] = 1.0
        node[walking] = tail[arc]
        walking = walking[node[walking] != network.source]
    status = np.where(reached, int(Status.OPTIMAL), int(Status.INFEASIBLE)).astype(np.int8)
    objective = np.where(reached, np.einsum("kn,kn->k", c, y), np.nan)
    return y, status, objective
