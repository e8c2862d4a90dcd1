"""executor="ray" under faults, on a real two-node cluster in this machine
(``ray.cluster_utils.Cluster``, as Ray tests itself): a lost node's rows run again on what is
left, and several Ray executors in one process share the cluster's CPUs."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

import pytest
import torch
from host_solvers import SlowSolver, hold

import ilplayer
from ilplayer import Status
from ilplayer.testing import make_instances

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ilplayer[ray]')")
cluster_utils = pytest.importorskip("ray.cluster_utils")


@pytest.fixture(scope="module")
def cluster():
    """A head node with one CPU; each test adds the worker node it removes."""
    cluster = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    path = os.pathsep.join(
        filter(None, [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")])
    )
    ray.init(
        address=cluster.address,
        logging_level="ERROR",
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    ilplayer.register_solver("slow", SlowSolver, replace=True)
    try:
        yield cluster
    finally:
        ilplayer.solvers.registry.unregister_solver("slow")
        ilplayer.release_solvers()
        ray.shutdown()
        cluster.shutdown()


@contextlib.contextmanager
def two_node_layer(cluster, instances, delay):
    """A layer on the slow backend whose Ray executor has an actor on the head node and one on
    a new worker node; yields ``(node, layer)``. The node is removed on the way out if the test
    did not remove it (a failed test must not leave its CPU to the next), and the executor,
    which a layer leaves open when given one, is closed. Its actors may take up to 3 minutes
    to start: beside other jobs on 2 cores a fresh node's workers took over a minute to import
    ilplayer (a CI run)."""
    node = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    executor = ilplayer.parallel.executors.RayExecutor(wait_s=180.0)
    try:
        with ilplayer.ILPLayer(
            instances.lb,
            instances.ub,
            solver="slow",
            solver_options={"delay": delay},
            executor=executor,
        ) as layer:
            executor.start()  # waits for both actors: one on each node
            assert len(executor._shared.ready(2, 0)) == 2
            yield node, layer
    finally:
        executor.close()
        if node in cluster.worker_nodes:
            cluster.remove_node(node)


def reference(instances):
    return ilplayer.solve(instances.c, instances.A, instances.b, instances.lb, instances.ub)


def test_a_batch_after_a_node_is_lost_is_answered_in_full(cluster):
    instances = make_instances("binary-m4", seed=1, batch=64)
    y_ref, status_ref = reference(instances)
    with two_node_layer(cluster, instances, delay=0.0) as (node, layer):
        pool = layer.oracle.executor._shared
        layer(instances.c, instances.A, instances.b)
        cluster.remove_node(node)
        y = layer(instances.c, instances.A, instances.b)
        assert torch.equal(layer.last_status, status_ref) and torch.equal(y, y_ref)
        assert len(pool.actors) == 2  # the lost actor's replacement waits for a free CPU
        y = layer(instances.c, instances.A, instances.b)
        assert torch.equal(layer.last_status, status_ref) and torch.equal(y, y_ref)


def test_a_node_lost_during_a_batch_has_its_rows_run_again(cluster):
    instances = make_instances("per-instance", seed=2, batch=8)  # 8 groups: 0.3 s each
    y_ref, status_ref = reference(instances)
    with two_node_layer(cluster, instances, delay=0.3) as (node, layer):
        remover = threading.Timer(0.5, cluster.remove_node, args=(node,))
        remover.start()
        began = time.monotonic()
        y = layer(instances.c, instances.A, instances.b)
        remover.join()
        assert torch.equal(layer.last_status, status_ref) and torch.equal(y, y_ref)
        assert time.monotonic() - began < 60


def test_a_ray_solve_and_a_ray_layer_share_the_cluster(cluster):
    instances = make_instances("binary-m4", seed=3, batch=16)
    y_ref, status_ref = reference(instances)
    y, status = ilplayer.solve(
        instances.c,
        instances.A,
        instances.b,
        instances.lb,
        instances.ub,
        solver="slow",
        solver_options={"delay": 0.0},
        executor="ray",
    )
    assert torch.equal(status, status_ref)
    # solve() keeps its executor (and so its actors); the layer's tasks queue on the same ones
    with (
        ilplayer.ILPLayer(
            instances.lb, instances.ub, solver="slow", solver_options={"delay": 0.0}, executor="ray"
        ) as first,
        ilplayer.ILPLayer(
            instances.lb,
            instances.ub,
            solver="slow",
            solver_options={"delay": 0.0},
            executor="ray",
            workers=1,
        ) as second,
    ):
        for layer in (first, second):
            assert torch.equal(layer(instances.c, instances.A, instances.b), y_ref)
        assert second.oracle.executor._actors[0] in first.oracle.executor._actors


def wait_until_no_cpu_is_free(limit_s: float = 60.0) -> None:
    """The blocker is scheduled and a removed node's CPU is gone from Ray's view (both lag:
    an actor asked for before that finds a CPU and answers rows)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if (
            ray.cluster_resources().get("CPU", 0) == 1
            and ray.available_resources().get("CPU", 0) == 0
        ):
            return
        time.sleep(0.1)
    raise AssertionError(f"Ray still shows free CPUs: {ray.available_resources()}")


def test_without_a_free_cpu_the_rows_are_errors_with_a_clear_reason_not_a_hang(cluster):
    ilplayer.release_solvers()  # solve()'s executor leaves the shared actors: none is left
    instances = make_instances("per-instance", seed=4, batch=4)
    y_ref, status_ref = reference(instances)
    # hold comes from host_solvers, which the workers import (a function of this file would
    # fail to import there, and a blocker that fails frees its CPU)
    blocker = ray.remote(num_cpus=1)(hold).remote(60)  # holds every CPU that is left
    wait_until_no_cpu_is_free()
    layer = ilplayer.ILPLayer(
        instances.lb,
        instances.ub,
        solver="slow",
        solver_options={"delay": 0.0},
        executor=ilplayer.parallel.executors.RayExecutor(wait_s=2.0),
    )
    try:
        began = time.monotonic()
        with pytest.warns(
            ilplayer.errors.SolverFailureWarning, match="no Ray actor answered within 2.0 s"
        ):
            layer(instances.c, instances.A, instances.b)
        assert not ray.wait([blocker], timeout=0)[0], "the blocker ended: the test is void"
        assert Status.names(layer.last_status) == ["error"] * 4
        assert time.monotonic() - began < 30
        ray.cancel(blocker, force=True)  # the CPU is free again: the waiting actor starts
        layer.oracle.executor.wait_s = (
            120.0  # (a busy machine takes seconds to free the CPU and start it)
        )
        assert torch.equal(layer(instances.c, instances.A, instances.b), y_ref)
        assert torch.equal(layer.last_status, status_ref)
    finally:
        layer.oracle.executor.close()


def test_a_ray_layer_copies_and_pickles_and_its_copies_share_the_actors(cluster):
    import copy
    import pickle

    instances = make_instances("binary-m4", seed=5, batch=16)
    with ilplayer.ILPLayer(
        instances.lb, instances.ub, solver="slow", solver_options={"delay": 0.0}, executor="ray"
    ) as layer:
        y = layer(instances.c, instances.A, instances.b)
        for other in (copy.deepcopy(layer), pickle.loads(pickle.dumps(layer))):
            with other:
                assert torch.equal(other(instances.c, instances.A, instances.b), y)
                assert other.oracle.executor is not layer.oracle.executor
                assert other.oracle.executor._shared is layer.oracle.executor._shared
