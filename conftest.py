import os
import sys

import pytest

import ilplayer

# the tests' helper modules (host_solvers, naive_backward, the fixture plugins), for every folder of tests
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests"))


@pytest.fixture
def builtin_registry(monkeypatch):
    """A fresh registry without entry-point plugins, for tests that pin its exact contents (and
    without the backends that ``ilplayer.solve`` keeps from earlier tests of the process)."""
    from ilplayer.solvers import registry as plugins

    ilplayer.release_solvers()
    monkeypatch.setenv(plugins.AUTOLOAD_ENV, "1")
    registry = plugins._Registry()
    monkeypatch.setattr(plugins, "_registry", registry)
    return registry


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same global random state (torch, NumPy, random), whatever ran
    before it in its worker: a test that draws without its own generator is reproducible (one
    drew costs that let the box decide every row, once in ~128 runs)."""
    import random

    import numpy as np
    import torch

    random.seed(0)
    np.random.seed(0)  # noqa: NPY002 (the legacy global state is what a bare draw uses)
    torch.manual_seed(0)
