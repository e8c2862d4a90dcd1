"""executor="ray" against a real local Ray instance (``pip install 'ilplayer[ray]'``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from host_solvers import SlowSolver

import ilplayer
from ilplayer import Status
from ilplayer.parallel.ray_executor import RayExecutor
from ilplayer.testing import make_instances

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ilplayer[ray]')")


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    # Ray workers do not inherit the driver's sys.path: give them the tests' helper modules.
    path = os.pathsep.join(
        filter(None, [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")])
    )
    ray.init(
        address="local",  # not a cluster another test file started beside this one
        num_cpus=2,
        include_dashboard=False,
        logging_level="ERROR",
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    ilplayer.register_solver("slow", SlowSolver, replace=True)
    yield
    ilplayer.solvers.registry.unregister_solver("slow")
    ray.shutdown()


def backend() -> str:
    return next(
        (n for n in ("highs", "cpsat", "scip") if n in ilplayer.available_solvers()), "slow"
    )


def test_ray_actors_solve_batches_in_order_and_persist_across_batches():
    instances = make_instances("per-instance", seed=6, batch=24)
    layer = ilplayer.ILPLayer(lb=instances.lb, ub=instances.ub, solver=backend(), executor="ray")
    try:
        for _ in range(2):
            y = layer(instances.c, instances.A, instances.b)
            y_ref, status_ref = ilplayer.solve(
                instances.c, instances.A, instances.b, instances.lb, instances.ub
            )
            assert torch.equal(layer.last_status, status_ref)
            torch.testing.assert_close((instances.c * y).sum(-1), (instances.c * y_ref).sum(-1))
        assert layer.oracle.executor.workers == 2  # the running cluster's CPUs
        actors = list(layer.oracle.executor._actors)
        layer(instances.c, instances.A, instances.b)
        assert layer.oracle.executor._actors == actors  # the same actors (and their models) again
    finally:
        layer.close()


def test_a_killed_ray_actor_has_its_rows_run_on_another_and_is_replaced():
    instances = make_instances("binary-m4", seed=7, batch=8)
    y_ref, status_ref = ilplayer.solve(
        instances.c, instances.A, instances.b, instances.lb, instances.ub
    )
    executor = RayExecutor()
    executor.start()
    layer = ilplayer.ILPLayer(
        lb=instances.lb,
        ub=instances.ub,
        solver="slow",
        solver_options={"delay": 0.01},
        executor=executor,
    )
    try:
        killed = executor._actors[0]
        ray.kill(killed)
        y = layer(instances.c, instances.A, instances.b)
        assert torch.equal(layer.last_status, status_ref) and torch.equal(y, y_ref)
        assert killed not in executor._actors and len(executor._actors) == 2
        layer(instances.c, instances.A, instances.b)
        assert (layer.last_status == Status.OPTIMAL).all()
    finally:
        executor.close()
