"""What makes repeated solving cheap: warm-start pools, solve() reusing its backends, one
torch thread in the backward, and the benchmark command that measures them."""

from __future__ import annotations

import itertools
import json
import math
import multiprocessing
import threading

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer import Status
from ilplayer.cli.main import main
from ilplayer.parallel import backend_cache
from ilplayer.plugin_api import PersistentModelSolver
from ilplayer.solvers.shortcuts import WarmStartPool
from ilplayer_experiments.bench import FAMILIES, family_batch
from tests.host_solvers import EnumerationSolver


def test_the_pool_returns_its_cheapest_point_and_forgets_the_oldest():
    pool = WarmStartPool(num_variables=2, capacity=2)
    assert pool.best_for(np.array([1.0, 1.0])) is None
    for point in ([0, 1], [1, 0], [0, 1]):  # the repeat is not stored twice
        pool.add(np.array(point, dtype=float))
    assert pool.size == 2
    assert pool.best_for(np.array([1.0, -1.0])).tolist() == [0.0, 1.0]
    assert pool.best_for(np.array([1.0, -2.0])).tolist() == [0.0, 1.0]
    pool.add(np.array([1.0, 1.0]))  # evicts [0, 1], the oldest
    assert pool.best_for(np.array([1.0, -2.0])).tolist() == [1.0, 1.0]
    pool.add(np.array([0.0, 1.0]))  # an evicted point can come back (evicting [1, 0])
    assert pool.size == 2
    assert pool.best_for(np.array([-1.0, 0.0])).tolist() == [1.0, 1.0]


def test_the_pool_takes_minus_zero_and_zero_as_one_point():
    pool = WarmStartPool(num_variables=2, capacity=4)
    pool.add(np.array([0.0, 1.0]))
    pool.add(np.array([-0.0, 1.0]))
    assert pool.size == 1


class StartRecordingSolver(PersistentModelSolver):
    """Exact enumeration behind the persistent-model contract; records the starts it is given."""

    name = "start-recording"

    def __init__(self, warm_start=None, tag=None):
        super().__init__(warm_start=warm_start)
        self.starts = []

    def build_model(self, batch):
        return EnumerationSolver.feasible_points(batch)

    accepts_start = True

    def solve_instance(self, model, c, start=None):
        if start is not None:
            self.starts.append(start.copy())
        if not len(model):
            return Status.INFEASIBLE, None
        return Status.OPTIMAL, model[np.argmin(model @ c)]


def test_a_revisited_instance_starts_from_its_previous_solution():
    solver = StartRecordingSolver()
    c = torch.tensor([[-1.0, -2.0, 0.5], [2.0, -1.0, -1.5]], dtype=torch.float64)
    # at most one item: neither box optimum is feasible, so both instances reach the backend
    # (two rows: the core answers one-row programs from their relaxation's closed form)
    A, b = (
        torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]], dtype=torch.float64),
        torch.tensor([1.0, 1.0], dtype=torch.float64),
    )
    y, _ = ilplayer.solve(c, A, b, lb=0, ub=1, solver=solver)
    assert y.tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    solver.starts.clear()
    ilplayer.solve(c * 1.01, A, b, lb=0, ub=1, solver=solver)
    # each instance starts from the pooled point that is cheapest for it: its own last answer
    assert [s.tolist() for s in solver.starts] == y.tolist()
    cold = StartRecordingSolver(warm_start=False)
    ilplayer.solve(c, A, b, lb=0, ub=1, solver=cold)
    ilplayer.solve(c, A, b, lb=0, ub=1, solver=cold)
    assert cold.starts == []
    with pytest.raises(TypeError, match="warm_start must be True, False or None"):
        StartRecordingSolver(warm_start="yes")


def test_solve_reuses_its_backend_per_thread_until_released(monkeypatch):
    built = []
    from ilplayer.parallel.workers import SolverRecipe

    real = SolverRecipe.create
    monkeypatch.setattr(SolverRecipe, "create", lambda self: built.append(self) or real(self))
    ilplayer.release_solvers()
    c, A, b = torch.randn(3, 4), torch.ones(1, 4), torch.ones(1)
    for _ in range(3):
        ilplayer.solve(c, A, b, solver="bruteforce")
    assert len(built) == 1
    ilplayer.solve(c, A, b, solver="bruteforce", solver_options={"max_points": 2**10})
    assert len(built) == 2  # other options: another backend

    def other_thread():
        ilplayer.solve(c, A, b, solver="bruteforce")

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    assert len(built) == 3  # a backend is never shared between threads
    ilplayer.release_solvers()
    ilplayer.solve(c, A, b, solver="bruteforce")
    assert len(built) == 4
    ilplayer.release_solvers()


def test_solve_with_an_option_that_cannot_be_a_key_builds_afresh_and_keeps_nothing():
    ilplayer.register_solver("start-recording", StartRecordingSolver, replace=True)
    try:
        c, A, b = torch.randn(2, 3), torch.ones(1, 3), torch.ones(1)
        _, status = ilplayer.solve(
            c, A, b, solver="start-recording", solver_options={"tag": {1, 2}}
        )
        assert (status == Status.OPTIMAL).all()
        assert not any(key[0] == "start-recording" for key in backend_cache._thread_cache().entries)
    finally:
        ilplayer.solvers.registry.unregister_solver("start-recording")


def test_backward_runs_on_one_torch_thread_and_restores_the_setting():
    seen = []
    layer = ilplayer.ILPLayer(lb=0, ub=1)
    c = torch.randn(4, 5, requires_grad=True)
    A, b = torch.rand(2, 5), torch.ones(2)
    torch.set_num_threads(2)
    try:
        y = layer(c, A, b)
        y.register_hook(lambda grad: seen.append(torch.get_num_threads()))
        y.sum().backward()
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)
    assert c.grad is not None
    with pytest.raises(ValueError, match="backward_threads must be a positive integer or None"):
        ilplayer.ILPLayer(lb=0, ub=1, backward_threads=0)


def test_knapsack_family_has_one_row_and_a_reachable_capacity():
    batch = family_batch("knapsack", 5)
    assert "knapsack" in FAMILIES and batch.A.shape == (1, 16) and (batch.c < 0).all()
    assert 0 < batch.b[0] < batch.A.sum()


def test_bench_command_writes_rows_and_a_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out, png = tmp_path / "rows.json", tmp_path / "ratios.png"
    assert (
        main(
            [
                "bench",
                "solvers",
                "--backends",
                "bruteforce",
                "--families",
                "binary m=1",
                "--batch",
                "4",
                "--json",
                str(out),
                "--plot",
                str(png),
            ]
        )
        == 0
    )
    rows = json.loads(out.read_text())
    assert rows and rows[0]["backend"] == "bruteforce" and rows[0]["ratio"] == 1.0
    assert png.stat().st_size > 0
    assert (
        main(
            [
                "bench",
                "reuse",
                "--backends",
                "bruteforce",
                "--families",
                "binary m=4",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())[0]["benchmark"] == "reuse"
    assert "solve_ms" in capsys.readouterr().out


def test_the_ideal_split_times_each_task_alone_and_side_by_side_in_bare_processes():
    from ilplayer.parallel.workers import SolverRecipe
    from ilplayer_experiments.bench import ideal_split

    data = family_batch("binary m=1", 8, n=8)
    ideal = ideal_split(SolverRecipe.from_name("bruteforce"), data, workers=2, repeats=2)
    assert ideal["seconds"] > 0 and ideal["serial_s"] > 0
    # two workers side by side cannot beat four times their tasks one after the other
    assert 0 < ideal["cores"] < 4 and ideal["split"] > 0 and ideal["speedup"] > 0
    assert not [child for child in multiprocessing.active_children() if child.is_alive()]


def test_the_ideal_split_reports_a_workers_failure_instead_of_waiting_for_it():
    from ilplayer.parallel.workers import SolverRecipe
    from ilplayer_experiments.bench import ideal_split

    data = family_batch("binary m=1", 8, n=8)  # 256 points per instance, above max_points=1
    with pytest.raises(
        RuntimeError, match=r"ideal split: a worker failed: ValueError: .*max_points"
    ):
        ideal_split(
            SolverRecipe.from_name("bruteforce", {"max_points": 1}), data, workers=2, repeats=1
        )


def test_bench_solvers_can_time_the_reference_layers_way_beside_the_backends(tmp_path):
    pytest.importorskip("gurobipy", reason="the reference row solves with Gurobi")
    out = tmp_path / "rows.json"
    assert (
        main(
            [
                "bench",
                "solvers",
                "--backends",
                "bruteforce",
                "--families",
                "binary m=8",
                "--batch",
                "4",
                "--reference",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    written = json.loads(out.read_text())
    rows = {row["backend"]: row for row in written if row["benchmark"] == "solvers"}
    assert set(rows) == {"bruteforce", "reference"} and rows["reference"]["ms_per_instance"] > 0
    verdict = next(
        row for row in written if row["benchmark"] == "targets"
    )  # checked in the same run
    assert verdict["target"] == "binary m=8 slowest backend (bruteforce) / reference layer"
    assert (
        verdict["measured"]
        == rows["bruteforce"]["ms_per_instance"] / rows["reference"]["ms_per_instance"]
    )


def test_target_rows_check_each_target_the_run_measured():
    from ilplayer_experiments.bench import target_rows

    rows = [
        {
            "benchmark": "solvers",
            "family": "dense m=8",
            "n": 16,
            "backend": "cpsat",
            "ms_per_instance": 6.0,
            "ratio": 1.6,
            "reference": "gurobi",
        },
        {
            "benchmark": "solvers",
            "family": "dense m=8",
            "n": 16,
            "backend": "scip",
            "ms_per_instance": 9.0,
            "ratio": 2.4,
            "reference": "gurobi",
        },
        {
            "benchmark": "solvers",
            "family": "dense m=8",
            "n": 32,
            "backend": "scip",
            "ms_per_instance": 9.0,
            "ratio": 9.0,
            "reference": "gurobi",
        },  # another size: no target
        {"benchmark": "warm", "family": "dense m=8", "backend": "highs", "ratio": 0.85},
        {"benchmark": "warm", "family": "dense m=8", "backend": "gurobi", "ratio": 0.95},
        {"benchmark": "reuse", "backend": "highs", "ratio": 1.1},
        {
            "benchmark": "backward",
            "threads": "layer (1 thread)",
            "load": "busy neighbour",
            "ratio": 1.2,
        },
        {
            "benchmark": "backward",
            "threads": "torch default threads",
            "load": "busy neighbour",
            "ratio": 9.0,
        },
        {
            "benchmark": "parallel",
            "family": "dense m=4",
            "backend": "cpsat",
            "executor": "ideal",
            "ratio": 1.6,
            "cores": 1.65,
        },
        {
            "benchmark": "parallel",
            "family": "dense m=4",
            "backend": "cpsat",
            "executor": "threads",
            "ratio": 1.5,
            "cores": None,
        },
        {
            "benchmark": "parallel",
            "family": "dense m=4",
            "backend": "cpsat",
            "executor": "processes",
            "ratio": 1.85,
            "cores": None,
        },
        {
            "benchmark": "parallel",
            "family": "set cover",
            "backend": "cpsat",
            "executor": "threads",
            "ratio": 1.2,
            "cores": None,
        },
    ]
    verdicts = {row["target"]: (row["verdict"], row["limit"]) for row in target_rows(rows)}
    assert verdicts == {
        "dense m=8 cpsat / gurobi": ("missed", "<= 1.50"),
        "dense m=8 scip / gurobi": ("met", "<= 3.00"),
        "dense m=8 highs warm / cold": ("missed", "<= 0.80"),
        "dense m=8 gurobi warm / cold": ("met", "<= 1.00"),
        "highs solve() / reused layer": ("met", "<= 1.30"),
        "backward beside a busy neighbour / quiet": ("met", "<= 1.50"),
        "dense m=4 cpsat threads / serial": (
            "no two cores",
            ">= 1.80",
        ),  # the ideal split's cores: 1.65
        "dense m=4 cpsat processes / serial": ("met", ">= 1.80"),
        "set cover cpsat threads / serial": ("missed", ">= 1.80"),  # no ideal row in this run
    }


def test_bench_solvers_through_the_layer_times_the_forward_path(tmp_path):
    out = tmp_path / "rows.json"
    assert (
        main(
            [
                "bench",
                "solvers",
                "--backends",
                "bruteforce",
                "--families",
                "binary m=1",
                "--batch",
                "8",
                "--through-layer",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    row = json.loads(out.read_text())[0]
    assert row["through_layer"] is True and row["ms_per_instance"] > 0


def _assignment_batch(k: int, seed: int) -> ilplayer.core.records.ILPBatch:
    """3 x 3 assignments (totally unimodular rows: every LP vertex is integral)."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((6, 9))
    for i in range(3):
        rows[i, 3 * i : 3 * i + 3] = 1.0  # each worker one job
        rows[3 + i, i::3] = 1.0  # each job one worker
    return ilplayer.core.records.ILPBatch(
        c=rng.normal(size=(k, 9)),
        A=np.zeros((0, 9)),
        b=np.zeros(0),
        lb=np.zeros(9),
        ub=np.ones(9),
        A_eq=rows,
        b_eq=np.ones(6),
    )


@pytest.mark.parametrize("backend", ["highs", "gurobi"])
def test_an_integral_lp_relaxation_answers_without_the_mip_and_a_fractional_one_does_not(backend):
    if backend not in ilplayer.available_solvers():
        pytest.skip(f"backend {backend!r} is not installed")
    # warm starts off: the search around a rounded LP optimum would settle the knapsack below
    solver = ilplayer.get_solver(backend, warm_start=False)
    calls = []
    solve_instance = solver.solve_instance
    solver.solve_instance = lambda model, c, start=None: (
        calls.append(1),
        solve_instance(model, c, start),
    )[1]
    batch = _assignment_batch(8, seed=0)
    result = solver.solve(batch)
    assert (result.status == Status.OPTIMAL).all() and not calls
    best = [
        min(cost.reshape(3, 3)[range(3), list(p)].sum() for p in itertools.permutations(range(3)))
        for cost in batch.c
    ]
    assert np.allclose(result.objective, best)
    # a knapsack whose LP optimum takes half an item must reach the MIP (a second, redundant
    # row: the core answers one-row programs itself)
    knapsack = ilplayer.core.records.ILPBatch(
        c=np.array([[-3.0, -2.0, -2.0]]),
        A=np.array([[2.0, 2.0, 2.0], [0.0, 1.0, 0.0]]),
        b=np.array([3.0, 1.0]),
        lb=np.zeros(3),
        ub=np.ones(3),
        A_eq=np.zeros((0, 3)),
        b_eq=np.zeros(0),
    )
    result = solver.solve(knapsack)
    assert (
        calls and result.status[0] == Status.OPTIMAL and result.objective[0] == pytest.approx(-3.0)
    )
    solver.close()


@pytest.mark.parametrize("backend", ["highs", "gurobi"])
def test_relaxations_solved_together_match_the_oracle_block_by_block(backend):
    """More instances than one block-diagonal LP holds, some relaxations integral, some not."""
    if backend not in ilplayer.available_solvers():
        pytest.skip(f"backend {backend!r} is not installed")
    # warm starts off: the search around a pooled start would settle the knapsacks before a MIP
    solver, oracle = (
        ilplayer.get_solver(backend, warm_start=False),
        ilplayer.get_solver("bruteforce"),
    )
    calls = []
    solve_instance = solver.solve_instance
    solver.solve_instance = lambda model, c, start=None: (
        calls.append(1),
        solve_instance(model, c, start),
    )[1]
    assignments = _assignment_batch(37, seed=1)
    result = solver.solve(assignments)
    assert not calls and np.allclose(result.objective, oracle.solve(assignments).objective)
    rng = np.random.default_rng(2)
    knapsacks = ilplayer.core.records.ILPBatch(
        c=-rng.uniform(0, 1, size=(41, 5)),
        # a second, redundant row: the core answers one-row programs itself
        A=np.array([[2.0, 3.0, 4.0, 5.0, 3.0], [0.0, 1.0, 0.0, 0.0, 0.0]]),
        b=np.array([7.0, 1.0]),
        lb=np.zeros(5),
        ub=np.ones(5),
        A_eq=np.zeros((0, 5)),
        b_eq=np.zeros(0),
    )
    result, expected = solver.solve(knapsacks), oracle.solve(knapsacks)
    assert (result.status == Status.OPTIMAL).all() and 0 < len(calls) < 41
    assert np.allclose(result.objective, expected.objective)
    solver.close()


def test_the_relaxation_gate_keeps_trying_while_it_pays_and_then_samples():
    from ilplayer.solvers.gates import RelaxationGate

    paying, wasted = RelaxationGate(), RelaxationGate()
    for _ in range(200):
        assert paying.should_try()
        paying.record(True)
        if wasted.should_try():
            wasted.record(False)
    assert paying.tries == 200
    assert wasted.tries == 32 + (200 - 32) // 16  # every instance at first, then every 16th
    while not wasted.should_try():
        pass
    wasted.record(True)  # one sampled answer opens it again, and failures close it soon after
    assert wasted.should_try() and wasted.should_try()
    for _ in range(4):
        wasted.record(False)
    assert not all(wasted.should_try() for _ in range(3))
    demanding = RelaxationGate(min_rate=0.5)  # a backend with a cheap MIP sets a higher bar
    for answered in [True] * 32 + [True, False, False] * 8:
        demanding.should_try()
        demanding.record(answered)
    assert 0.1 < demanding.rate < 0.5 and not all(demanding.should_try() for _ in range(3))


def test_the_search_gate_stays_open_only_while_its_answers_save_more_than_its_tries_cost():
    from ilplayer.solvers.gates import SearchGate

    def run(gate, mip_seconds, instances=96):
        tried = 0
        for i in range(instances):  # 80 % answered, each try 1 ms; a failed one still needs a MIP
            if gate.should_try():
                tried += 1
                answered = i % 5 != 0
                gate.record(answered, seconds=0.001)
                if not answered:
                    gate.record_mip(2 * mip_seconds, after_try=True)  # the hard instances fail
            else:
                gate.record_mip(mip_seconds, after_try=False)
        return tried

    dear_mip, close_call, cheap_mip = SearchGate(), SearchGate(), SearchGate()
    # pays by far: a control MIP on every 16th until four are timed, then on every 64th
    assert run(dear_mip, 0.02) == 96 - 4
    assert dear_mip.pays()
    run(close_call, 0.003)  # 1 ms + 0.2 x 6 ms < 3 ms, but not by half: every 16th
    assert close_call.pays() and sum(not close_call.should_try() for _ in range(64)) == 4
    run(cheap_mip, 0.001)  # 1 ms + 0.2 x 2 ms > 1 ms: the flattering MIPs after failures aside
    assert not cheap_mip.pays()
    assert sum(cheap_mip.should_try() for _ in range(32)) == 2  # sampled on every 16th
    fresh = SearchGate()  # no MIP timed yet: the rate alone decides
    fresh.record(True, seconds=1.0)
    assert fresh.pays()


def test_one_easy_control_mip_does_not_close_the_search_gate():
    # Seeded by its first sample, the MIP time's average once closed the gate on one 0.1 ms
    # instance when the MIPs took 1.5 ms: every instance of the next chunk went to the MIP
    # (Gurobi, binary m=8: 0.65-1.04 instead of 0.28-0.32 ms per instance).
    from ilplayer.solvers.gates import MIN_CONTROLS, SearchGate

    gate = SearchGate()
    for seconds in [0.0001] + [0.0015] * (MIN_CONTROLS - 1):
        gate.record(True, seconds=0.0002)
        gate.record_mip(seconds, after_try=False)
        assert gate.pays()
    assert gate.mip_seconds[False] == pytest.approx(
        (0.0001 + 0.0015 * (MIN_CONTROLS - 1)) / MIN_CONTROLS
    )
    early = SearchGate()  # one control, however cheap, is not yet a reason to stop searching
    early.record(True, seconds=0.0002)
    early.record_mip(0.0001, after_try=False)
    assert early.saving() == math.inf and early.is_open()


def searching_from_zero(batch):
    """What search_chunk takes for ``batch``: a solver whose LP multipliers are all zero, its
    model, and a pool holding the point 0 (every try starts there)."""

    class Searching(StartRecordingSolver):
        def relaxation_multipliers(self, model, c):
            return [(np.zeros(batch.num_constraints), np.zeros(0)) for _ in c]

    solver, pool = Searching(), WarmStartPool(batch.num_variables, 8)
    pool.add(np.zeros(batch.num_variables))
    return solver, solver.model_for(batch), pool


def test_a_closed_search_gate_does_not_time_its_samples():
    # A closed gate searches every 16th row; those few rows carry the LP call's fixed cost
    # alone, and their cost per try (4x a full chunk's) kept the gate closed.
    from ilplayer.solvers.gates import SearchGate
    from ilplayer.solvers.shortcuts import search_chunk

    batch = family_batch("binary m=4", 64, seed=1)
    solver, model, pool = searching_from_zero(batch)
    gate = SearchGate(min_rate=2.0)  # never pays: closed once its first 32 tries are done
    gate.tries, gate.try_seconds = 32, 1.0
    search_chunk(solver, model, batch, list(range(64)), pool, gate)
    assert gate.tries == 32 + 4 and gate.try_seconds == 1.0  # every 16th sampled, none timed
    gate.min_rate = 0.0  # open: the chunk's tries are timed
    search_chunk(solver, model, batch, list(range(64)), pool, gate)
    assert gate.tries > 36 + 32 and gate.try_seconds < 1.0


def test_a_closed_search_gate_probes_a_whole_chunk_now_and_then_and_reopens_when_the_search_pays_again():
    """Tries are timed only while the gate is open, so a try's cost measured in one slow moment
    kept a gate closed for good; a closed gate now searches and times a whole chunk after
    PROBE_FIRST closed chunks, then twice as long apart while it stays closed."""
    from ilplayer.solvers.gates import MIN_CONTROLS, PROBE_FIRST, PROBE_MAX, SearchGate
    from ilplayer.solvers.shortcuts import SEARCH_CHUNK, search_chunk

    batch = family_batch("binary m=4", SEARCH_CHUNK, seed=1)
    batch = batch.with_rows(
        c=np.abs(batch.c)
    )  # the pooled 0 is every instance's optimum: tries answer
    solver, model, pool = searching_from_zero(batch)
    rows = list(range(SEARCH_CHUNK))
    gate = SearchGate()
    gate.tries, gate.rate, gate.try_seconds = 1000, 1.0, 1.0  # one slow moment: tries took 1 s
    for _ in range(MIN_CONTROLS):
        gate.record_mip(0.001, after_try=False)
    assert not gate.is_open()
    tried = []
    for _ in range(PROBE_FIRST + 1):
        before = gate.tries
        search_chunk(solver, model, batch, rows, pool, gate)
        tried.append(gate.tries - before)
    assert tried[: PROBE_FIRST - 1] == [SEARCH_CHUNK // 16] * (
        PROBE_FIRST - 1
    )  # closed: every 16th sampled
    assert tried[PROBE_FIRST - 1] == SEARCH_CHUNK  # the probe: the whole chunk, timed
    assert (
        tried[PROBE_FIRST] >= SEARCH_CHUNK - SEARCH_CHUNK // 16
    )  # open again (control MIPs aside)
    assert gate.try_seconds < 1e-3 and gate.is_open() and gate.probe_after == PROBE_FIRST

    never = SearchGate(min_rate=2.0)  # never pays: closed, its probes come ever further apart
    never.tries = 1000
    probed = []
    for chunk in range(15 * PROBE_FIRST):
        before = never.tries
        search_chunk(solver, model, batch, rows, pool, never)
        if never.tries - before == SEARCH_CHUNK:
            probed.append(chunk + 1)
    assert probed == [PROBE_FIRST, 3 * PROBE_FIRST, 7 * PROBE_FIRST, 15 * PROBE_FIRST]
    assert never.probe_after == min(16 * PROBE_FIRST, PROBE_MAX)


def test_a_backend_still_defining_set_start_is_refused_with_the_fix():
    with pytest.raises(
        TypeError,
        match=r"OldStyle.set_start: the start now arrives as solve_instance\(model, c, "
        r"start=None\); set accepts_start = True",
    ):

        class OldStyle(PersistentModelSolver):
            name = "old-style"

            def build_model(self, batch):
                return None

            def solve_instance(self, model, c, start=None):
                return Status.INFEASIBLE, None

            def set_start(self, model, point):
                pass
