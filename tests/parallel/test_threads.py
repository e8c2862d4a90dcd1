"""The library's choice of torch's intra-op threads (ilplayer.core.threads)."""

from __future__ import annotations

import pytest
import torch

import ilplayer
from ilplayer.core import threads


@pytest.fixture(autouse=True)
def two_threads(monkeypatch):
    """No thread variable in the environment, torch on two threads (its default on the fake
    2-core machines below; another test may have left its own count), restored after."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def _fake_machine(monkeypatch, others_busy: float, cpus: int = 2, seconds: float = 1.0):
    """A look at a machine where the other processes kept ``others_busy`` cores busy over
    ``seconds`` and this process none."""
    look = threads._Look()
    look.cpus, look.wall, look.busy, look.ours = list(range(cpus)), 0.0, 0.0, 0.0
    monkeypatch.setattr(threads, "_look", look)
    monkeypatch.setattr(threads.time, "monotonic", lambda: seconds)
    monkeypatch.setattr(threads.time, "process_time", lambda: 0.0)
    monkeypatch.setattr(threads, "_busy_seconds", lambda cpus: others_busy * seconds)
    monkeypatch.setattr(threads, "_DEFAULT", cpus)
    return look


def test_a_busy_neighbour_leaves_the_library_one_thread_and_an_idle_machine_all(monkeypatch):
    _fake_machine(monkeypatch, others_busy=1.0)
    assert threads.chosen_threads() == 1
    with threads.library_threads() as count:
        assert count == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2  # restored
    _fake_machine(monkeypatch, others_busy=0.05)
    assert threads.chosen_threads() == 2
    _fake_machine(monkeypatch, others_busy=1.9, cpus=4)
    monkeypatch.setattr(threads, "_DEFAULT", 4)
    assert threads.chosen_threads() == 2  # four cores, two free


def test_the_users_own_count_wins(monkeypatch):
    _fake_machine(monkeypatch, others_busy=1.0, cpus=4)
    monkeypatch.setattr(threads, "_DEFAULT", 4)
    torch.set_num_threads(3)  # not the count ilplayer found at import: the user's
    assert threads.user_chose_threads()
    with threads.library_threads() as count:
        assert count == 3 and torch.get_num_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    torch.set_num_threads(4)
    assert threads.user_chose_threads()
    with threads.library_threads():
        assert torch.get_num_threads() == 4


def test_a_look_within_the_interval_keeps_the_last_count(monkeypatch):
    look = _fake_machine(monkeypatch, others_busy=1.0, seconds=threads.LOOK_EVERY / 10)
    look.threads = 2
    assert threads.chosen_threads() == 2  # too soon to look again


def test_the_training_loop_and_the_bruteforce_solve_run_on_the_librarys_count(monkeypatch):
    seen = []
    _fake_machine(monkeypatch, others_busy=1.0)
    from ilplayer.solvers.bruteforce import BruteForceSolver

    solve = BruteForceSolver.solve_tensors
    monkeypatch.setattr(
        BruteForceSolver,
        "solve_tensors",
        lambda self, problem: (seen.append(torch.get_num_threads()), solve(self, problem))[1],
    )
    ilplayer.solve(
        torch.randn(4, 5), torch.ones(1, 5), torch.tensor([2.0]), lb=0, ub=1, solver="bruteforce"
    )
    assert seen == [1] and torch.get_num_threads() == 2
    from ilplayer.learning.loop import fit_epochs

    model = torch.nn.Linear(3, 1)

    def batch_loss(rows):
        seen.append(torch.get_num_threads())
        return model(torch.ones(len(rows), 3)).pow(2).mean(), {}

    fit_epochs(
        8,
        epochs=1,
        batch_size=4,
        seed=0,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        batch_loss=batch_loss,
        evaluate=dict,
    )
    assert seen[1:] == [1, 1] and torch.get_num_threads() == 2
