"""Parallel batch solving: every executor gives the bruteforce answer in input order; failing
and killed workers give clear errors and the pool recovers; no orphan processes."""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest
import torch
from host_solvers import FlakyParallelSolver, GilEnumerationSolver, SlowSolver

import ilplayer
from ilplayer import Status
from ilplayer.parallel.auto import AutoDispatch
from ilplayer.parallel.executors import FuturesExecutor, plan_tasks
from ilplayer.testing import make_instances

HERE = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def test_backends():
    for name, cls in (
        ("gil-enumeration", GilEnumerationSolver),
        ("slow", SlowSolver),
        ("flaky-parallel", FlakyParallelSolver),
    ):
        ilplayer.register_solver(name, cls, replace=True)
    yield
    for name in ("gil-enumeration", "slow", "flaky-parallel"):
        ilplayer.solvers.registry.unregister_solver(name)


def mip_backend() -> str:
    """A real MIP plugin when one is installed, else the in-test host backend."""
    for name in ("highs", "cpsat", "scip", "gurobi"):
        if name in ilplayer.available_solvers():
            return name
    return "gil-enumeration"


def assert_same_as_bruteforce(instances, y, status):
    y_ref, status_ref = ilplayer.solve(
        instances.c, instances.A, instances.b, instances.lb, instances.ub
    )
    assert torch.equal(status, status_ref)
    torch.testing.assert_close((instances.c * y).sum(-1), (instances.c * y_ref).sum(-1))


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_dead(pids, timeout=15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


@pytest.mark.parametrize(
    "executor, mp_context",
    [
        ("serial", None),
        ("threads", None),
        ("processes", "forkserver"),
        ("processes", "spawn"),
        ("processes", "fork"),
        ("auto", None),
    ],
)
def test_every_executor_matches_bruteforce_in_input_order(executor, mp_context):
    instances = make_instances("per-instance", seed=1, batch=40)  # distinct rows: order shows
    y, status = ilplayer.solve(
        instances.c,
        instances.A,
        instances.b,
        instances.lb,
        instances.ub,
        solver=mip_backend(),
        executor=executor,
        workers=2,
        mp_context=mp_context,
    )
    assert_same_as_bruteforce(instances, y, status)


@pytest.mark.parametrize("executor", ["threads", "processes", "auto"])
def test_native_params_reach_every_worker_batch_after_batch(executor):
    """A ``params`` dict among the options (unhashable as it stands) keys each worker's solver:
    with auto, the third batch, the first on the workers, failed with 'unhashable type'."""
    if "highs" not in ilplayer.available_solvers():
        pytest.skip("needs the HiGHS plugin")
    instances = make_instances("binary-m4", seed=3, batch=16)
    c, A, b = instances.c, instances.A, instances.b
    expected, _ = ilplayer.solve(c, A, b, instances.lb, instances.ub, solver="bruteforce")
    options = {"params": {"presolve": "off"}}
    with ilplayer.ILPLayer(
        instances.lb,
        instances.ub,
        solver="highs",
        solver_options=options,
        executor=executor,
        workers=2,
    ) as layer:
        for _ in range(5):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                assert torch.equal(layer(c, A, b), expected)


def test_any_concurrent_futures_executor_can_run_the_batch():
    instances = make_instances("binary-m4", seed=2, batch=30)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        y, status = ilplayer.solve(
            instances.c,
            instances.A,
            instances.b,
            instances.lb,
            instances.ub,
            solver=mip_backend(),
            executor=pool,
        )
        assert_same_as_bruteforce(instances, y, status)
        assert not pool._shutdown  # the caller's pool is left to the caller


def test_a_layer_keeps_its_process_pool_and_worker_models_across_batches():
    instances = make_instances("binary-m4", seed=3, batch=16)
    layer = ilplayer.ILPLayer(
        lb=instances.lb, ub=instances.ub, solver=mip_backend(), executor="processes", workers=2
    )
    try:
        layer(instances.c, instances.A, instances.b)
        pids = set(layer.oracle.executor.worker_pids())
        for _ in range(3):
            y = layer(instances.c, instances.A, instances.b)
            assert_same_as_bruteforce(instances, y, layer.last_status)
        assert (
            set(layer.oracle.executor.worker_pids()) == pids
        )  # the same workers served every batch
    finally:
        layer.close()
    assert wait_dead(pids) == []


def test_tasks_are_about_batch_over_workers_and_send_a_shared_A_once_per_task():
    instances = make_instances("binary-m4", seed=0, batch=256)
    problem = ilplayer.core.validation.validate_problem(
        instances.c, instances.A, instances.b, instances.lb, instances.ub
    )
    tasks = plan_tasks(list(problem.host_groups()), workers=2)
    assert [sum(len(rows) for rows, _ in task) for task in tasks] == [128, 128]
    assert all(len(task) == 1 for task in tasks)  # one (A, b) per task, not one per instance
    per_instance = make_instances("per-instance", seed=0, batch=30)
    problem = ilplayer.core.validation.validate_problem(
        per_instance.c, per_instance.A, per_instance.b, per_instance.lb, per_instance.ub
    )
    tasks = plan_tasks(list(problem.host_groups()), workers=4)
    rows = sorted(int(r) for task in tasks for group_rows, _ in task for r in group_rows)
    assert rows == list(range(30))
    assert [sum(len(r) for r, _ in task) for task in tasks] == [8, 8, 8, 6]


def test_task_j_of_every_batch_runs_on_worker_j(monkeypatch):
    """Worker lanes: the same slice of a batch meets the same worker (and its warm starts)."""
    import ilplayer.parallel.executors

    monkeypatch.setattr(
        ilplayer.parallel.executors, "run_task", lambda recipe, task: threading.get_ident()
    )
    threads = FuturesExecutor(kind="threads", workers=2)
    processes = FuturesExecutor(kind="processes", workers=2, mp_context="forkserver")
    try:
        first = threads.run(None, [[], []])
        assert len(set(first)) == 2
        assert all(threads.run(None, [[], []]) == first for _ in range(5))
        pids = [processes.lane(j).submit(os.getpid).result() for j in range(2)]
        assert len(set(pids)) == 2 and sorted(pids) == sorted(processes.worker_pids())
        assert all(
            [processes.lane(j).submit(os.getpid).result() for j in range(2)] == pids
            for _ in range(5)
        )
    finally:
        threads.close()
        processes.close()


def test_a_raising_worker_marks_its_instances_and_the_rest_of_the_batch_is_solved():
    instances = make_instances("per-instance", seed=4, batch=12)
    c = instances.c.clone()
    c[:, 0] = c[:, 0].abs()
    c[5, 0] = -1.0  # the group containing row 5 raises inside a worker process
    with pytest.warns(
        ilplayer.errors.SolverFailureWarning,
        match=r"failed on instances \[.*5.*\].*"
        r"native library crashed in process",
    ):
        y, status = ilplayer.solve(
            c,
            instances.A,
            instances.b,
            instances.lb,
            instances.ub,
            solver="flaky-parallel",
            executor="processes",
            workers=2,
        )
    assert status[5] == Status.ERROR
    assert (status != Status.ERROR).sum() >= 1


def test_a_worker_killed_mid_batch_gives_a_clear_error_and_the_next_batch_succeeds():
    instances = make_instances("per-instance", seed=5, batch=8)
    layer = ilplayer.ILPLayer(
        lb=instances.lb,
        ub=instances.ub,
        solver="slow",
        solver_options={"delay": 1.0},
        executor="processes",
        workers=2,
    )
    try:
        layer.oracle.executor.start()
        victim = layer.oracle.executor.worker_pids()[0]
        threading.Timer(0.5, os.kill, (victim, signal.SIGKILL)).start()
        with pytest.warns(
            ilplayer.errors.SolverFailureWarning,
            match=r"failed on instances \[.*\].*worker lost \(BrokenProcessPool",
        ):
            layer(instances.c, instances.A, instances.b)
        # only the killed worker's task is lost: the other worker's instances are solved
        assert (layer.last_status == Status.ERROR).any() and (
            layer.last_status == Status.OPTIMAL
        ).any()
        y = layer(instances.c, instances.A, instances.b)  # a fresh pool serves the next batch
        assert_same_as_bruteforce(instances, y, layer.last_status)
    finally:
        layer.close()


class _Unpicklable:
    def __reduce__(self):
        raise TypeError("this object stays in its process")


def _unpicklable_answer() -> _Unpicklable:
    return _Unpicklable()


def _raise_value_error(message: str) -> None:
    raise ValueError(message)


def _sleep_then_pid(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def test_a_process_lane_answers_in_order_and_a_failed_call_fails_only_itself():
    """A lane is one worker behind a pipe: answers come back in the order of the calls, whichever
    is asked for first; a call or answer that cannot cross, or raises, fails that call alone."""
    from ilplayer.parallel.lanes import ProcessLane

    lane = ProcessLane("forkserver")
    try:
        futures = [lane.submit(pow, 2, i) for i in range(6)]
        assert [futures[i].result() for i in (5, 0, 3, 1, 4, 2)] == [32, 1, 8, 2, 16, 4]
        with pytest.raises(TypeError, match="stays in its process"):  # refused before it is sent
            lane.submit(pow, _Unpicklable(), 2).result()
        with pytest.raises(
            RuntimeError, match="answer could not be sent back: TypeError: this object stays"
        ):
            lane.submit(_unpicklable_answer).result()
        with pytest.raises(ValueError, match="raised in the worker"):
            lane.submit(_raise_value_error, "raised in the worker").result()
        assert (
            lane.submit(_sleep_then_pid, 0).result() == lane.pid
        )  # the same worker, still serving
    finally:
        lane.terminate()
    assert wait_dead([lane.pid]) == []


def test_a_process_lane_is_safe_to_share_between_threads():
    from ilplayer.parallel.lanes import ProcessLane

    lane = ProcessLane("forkserver")
    answers: dict[int, list[int]] = {}

    def ask(thread: int) -> None:
        answers[thread] = [lane.submit(pow, thread, k).result() for k in range(20)]

    try:
        threads = [threading.Thread(target=ask, args=(t,)) for t in range(2, 6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert answers == {t: [t**k for k in range(20)] for t in range(2, 6)}
    finally:
        lane.terminate()


def test_a_lost_lane_fails_every_pending_call_and_refuses_new_ones():
    from ilplayer.parallel.lanes import ProcessLane

    lane = ProcessLane("forkserver")
    try:
        pending = [lane.submit(_sleep_then_pid, 5.0), lane.submit(pow, 2, 3)]
        time.sleep(0.5)
        os.kill(lane.pid, signal.SIGKILL)
        for future in pending:
            with pytest.raises(
                concurrent.futures.process.BrokenProcessPool,
                match=rf"worker process {lane.pid} died \(killed by SIGKILL\)",
            ):
                future.result()
        with pytest.raises(concurrent.futures.process.BrokenProcessPool):
            lane.submit(pow, 2, 3)
    finally:
        lane.terminate()


def test_close_leaves_no_worker_processes():
    executor = FuturesExecutor(kind="processes", workers=2, mp_context="forkserver")
    executor.start()
    pids = executor.worker_pids()
    assert len(pids) == 2 and all(alive(p) for p in pids)
    executor.close()
    executor.close()  # idempotent
    assert wait_dead(pids) == []


SCRIPT = """
import os, signal, sys, threading, time
sys.path.insert(0, {tests!r})
import torch, ilplayer
from host_solvers import SlowSolver

if __name__ == "__main__":
    # A job started in the background of a non-interactive shell (a CI runner's) inherits
    # SIGINT ignored, and Python then keeps it ignored: the Ctrl-C below would never arrive.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ilplayer.register_solver("slow", SlowSolver)
    layer = ilplayer.ILPLayer(lb=0, ub=1, solver="slow", solver_options={{"delay": 60.0}},
                              executor="processes", workers=2)
    layer.oracle.executor.start()
    print(" ".join(str(p) for p in layer.oracle.executor.worker_pids()), flush=True)
    {ending}
"""
# Costs all negative: the box optimum (every variable 1) breaks the rows of instances 1-3, so
# they go to the workers (random costs let every row be decided by the box once in ~128 runs,
# and the script ended before its Ctrl-C).
ENDINGS = {
    "ctrl-c mid-batch": """threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    layer(-torch.ones(4, 3), torch.ones(4, 1, 3) * torch.arange(4.0)[:, None, None], torch.ones(4, 1))""",
    "interpreter exit without close": "pass",
    "parent killed with SIGKILL": "os.kill(os.getpid(), signal.SIGKILL)",
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_no_orphan_workers_after(ending):
    script = textwrap.dedent(SCRIPT).format(tests=str(HERE), ending=ENDINGS[ending])
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    pids = [int(p) for p in out.stdout.split("\n")[0].split()]
    assert len(pids) == 2, out.stderr
    if ending == "ctrl-c mid-batch":
        assert "KeyboardInterrupt" in out.stderr
    assert wait_dead(pids) == []


NO_FILE_SCRIPT = """
import warnings
import torch
import ilplayer
warnings.simplefilter("error")  # a worker lost would warn
generator = torch.Generator().manual_seed(0)
c = torch.randn(8, 6, generator=generator, dtype=torch.float64)
A = torch.rand(2, 6, generator=generator, dtype=torch.float64)
b = torch.full((2,), 2.0, dtype=torch.float64)
y, status = ilplayer.solve(c, A, b, solver="gil-enumeration", executor="processes", workers=2)
layer = ilplayer.ILPLayer(0, 1, solver="gil-enumeration", executor="processes", workers=2)
print(torch.equal(y, ilplayer.solve(c, A, b)[0]), torch.equal(layer(c, A, b), y))
layer.close()
"""


@pytest.mark.parametrize("how", ["stdin", "-c"])
def test_process_pools_work_from_a_script_without_a_file(how):
    setup = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); import ilplayer; "
        "from host_solvers import GilEnumerationSolver; "
        "ilplayer.register_solver('gil-enumeration', GilEnumerationSolver)\n"
    )
    script = setup + NO_FILE_SCRIPT
    command = [sys.executable, "-"] if how == "stdin" else [sys.executable, "-c", script]
    out = subprocess.run(
        command,
        input=script if how == "stdin" else None,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]


def test_threads_are_refused_for_a_backend_that_holds_the_gil():
    from host_solvers import EnumerationSolver

    ilplayer.register_solver("gil-holding", EnumerationSolver, replace=True)
    try:
        with pytest.raises(
            ValueError,
            match=r"executor='threads': solver 'enumeration' holds the "
            r"GIL.*use executor='processes'",
        ):
            ilplayer.ILPLayer(solver="gil-holding", executor="threads")
    finally:
        ilplayer.solvers.registry.unregister_solver("gil-holding")


class PositionalSolver(GilEnumerationSolver):
    """Built with a positional argument: nothing can build another one from keywords."""

    def __init__(self, tolerance: float) -> None:
        super().__init__()


def test_parallel_executors_need_a_solver_their_workers_can_build():
    with pytest.raises(ValueError, match="needs a solver its workers can build again"):
        ilplayer.ILPLayer(solver=PositionalSolver(1e-6), executor="processes")
    assert ilplayer.ILPLayer(solver=PositionalSolver(1e-6)).oracle.executor is None  # auto: serial
    # a Solver object built with keywords: each worker builds its own from its class and keywords
    c, A, b = (
        torch.randn(6, 4, dtype=torch.float64),
        torch.ones(1, 4, dtype=torch.float64),
        torch.tensor([2.0]),
    )
    with ilplayer.ILPLayer(solver=GilEnumerationSolver(), executor="processes", workers=2) as layer:
        assert torch.equal(layer(c, A, b), ilplayer.solve(c, A, b)[0])
        assert (
            layer.oracle.recipe is not None
            and layer.oracle.recipe.spec.target is GilEnumerationSolver
        )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(executor="gpu"),
            r"executor must be one of \('auto', 'serial', 'threads', 'processes', 'ray'\)",
        ),
        (dict(executor="threads", workers=0), r"workers must be a positive integer"),
        (dict(executor="processes", mp_context="teleport"), r"mp_context must be one of"),
    ],
)
def test_bad_executor_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ilplayer.ILPLayer(solver="gil-enumeration", **kwargs)


def test_device_native_backends_use_no_executor():
    assert ilplayer.ILPLayer(solver="bruteforce", executor="processes").oracle.executor is None


def test_auto_dispatch_measures_both_ways_then_takes_the_faster_and_probes_the_other():
    auto = AutoDispatch(probe_every=4, weight=1.0)
    assert auto.parallel() is False  # first batch: serial's warm-up (models built), not timed
    auto.record(False, 1.0, 10)
    assert auto.parallel() is False  # second: measure serial
    auto.record(False, 0.010, 10)
    assert auto.parallel() is True  # third: the workers' warm-up (pool started), not timed
    auto.record(True, 1.0, 10)
    assert auto.parallel() is True  # fourth: measure the workers
    auto.record(True, 0.030, 10)  # slower on the workers (GIL-bound, busy machine)
    assert auto.seconds_per_instance == {False: 0.001, True: 0.003}
    choices = [auto.parallel() for _ in range(8)]
    assert choices == [False, False, False, True] * 2  # every 4th batch re-measures the workers
    auto.record(True, 0.002, 10)  # the instances got harder: the workers now win
    assert [auto.parallel() for _ in range(4)] == [True, True, True, False]


def test_auto_dispatch_keeps_a_batch_too_small_to_hand_over_in_the_calling_thread():
    from ilplayer.parallel.auto import SMALL_BATCH_SECONDS

    auto = AutoDispatch(probe_every=2, weight=1.0)
    auto.parallel()
    auto.record(False, 1.0, 32)  # serial's warm-up, not timed
    auto.parallel()
    auto.record(False, SMALL_BATCH_SECONDS / 2, 32)  # 32 LPs answered in a millisecond
    assert [auto.parallel() for _ in range(6)] == [False] * 6  # no workers' warm-up, no probes
    auto.record(
        False, 10 * SMALL_BATCH_SECONDS, 32
    )  # the batches grew: the workers are tried again
    assert auto.parallel() is True


def test_auto_executor_answers_every_batch_exactly_whichever_way_it_goes():
    instances = make_instances("per-instance", seed=4, batch=24)
    layer = ilplayer.ILPLayer(
        lb=instances.lb, ub=instances.ub, solver=mip_backend(), executor="auto", workers=2
    )
    try:
        assert layer.oracle.executor is not None and layer.oracle.executor.auto is not None
        layer.oracle.executor.auto.probe_every = 2
        for _ in range(6):
            y = layer(instances.c, instances.A, instances.b)
            assert_same_as_bruteforce(instances, y, layer.last_status)
        assert set(layer.oracle.executor.auto.seconds_per_instance) == {
            False,
            True,
        }  # both were used
    finally:
        layer.close()


def _blas_threads(_: int) -> int:
    from threadpoolctl import threadpool_info

    return max(
        (pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"), default=1
    )


BLAS_LOADED_LATER = """
import ilplayer.parallel.executors as executors
with executors.one_blas_thread():  # the first scan: numpy's BLAS only
    pass
import scipy.linalg  # brings its own BLAS
from threadpoolctl import threadpool_info
with executors.one_blas_thread():
    print(max(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"))
"""


def test_a_blas_loaded_after_the_first_limit_is_limited_too():
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", BLAS_LOADED_LATER],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=True,
    )
    assert out.stdout.split() == ["1"]


def test_workers_run_blas_on_one_thread(monkeypatch):
    """Process workers keep one BLAS thread for life; a thread pool's batch runs under the limit
    and leaves the caller's setting as it was (docs/parallel.md)."""
    import ilplayer.parallel.executors

    executor = FuturesExecutor(kind="processes", workers=2, mp_context="forkserver")
    try:
        assert {executor.lane(i).submit(_blas_threads, i).result() for i in range(4)} == {1}
    finally:
        executor.close()
    before = _blas_threads(0)
    monkeypatch.setattr(
        ilplayer.parallel.executors, "run_task", lambda recipe, task: _blas_threads(0)
    )
    executor = FuturesExecutor(kind="threads", workers=2)
    try:
        assert executor.run(None, [[], []]) == [1, 1]
    finally:
        executor.close()
    assert _blas_threads(0) == before


def test_a_processes_layer_in_dataloader_workers_solves_in_threads_and_says_so(tmp_path):
    pytest.importorskip("highspy")
    script = tmp_path / "loader.py"
    script.write_text(
        textwrap.dedent("""
        import warnings, torch, ilplayer

        class Data(torch.utils.data.Dataset):
            def __init__(self):
                program = ilplayer.Program(lb=0, ub=1, A=torch.ones(1, 4), b=torch.tensor([2.0]))
                self.layer = ilplayer.ILPLayer(ilplayer.Oracle(program, solver="highs", executor="processes",
                                                               workers=2))

            def __len__(self):
                return 4

            def __getitem__(self, i):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    y = self.layer(-torch.arange(4.0)[None] - i)[0]
                return y, " | ".join(str(w.message) for w in caught)

        if __name__ == "__main__":
            for y, said in torch.utils.data.DataLoader(Data(), batch_size=2, num_workers=2):
                print(y.tolist(), said[0])
    """)
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2 and all(
        line.startswith("[[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0]]") for line in lines
    )
    assert (
        "daemonic process (a DataLoader worker?), which cannot start worker processes; its batches are solved "
        "in threads instead" in done.stdout
    )
