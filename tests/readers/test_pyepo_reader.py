"""Program.from_pyepo / Oracle.from_pyepo: PyEPO's own models on every ilplayer backend."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer import Status
from tests.host_solvers import MILP_BACKENDS, require

pyepo = pytest.importorskip("pyepo")
pytest.importorskip("gurobipy")


def models() -> dict:
    from pyepo.model import grb, omo

    weights = np.random.RandomState(0).choice(range(300, 800), size=(2, 12)) / 100
    return {
        "shortest path": lambda: grb.shortestPathModel((4, 4)),
        "knapsack": lambda: grb.knapsackModel(weights, [12.0, 12.0]),
        "tsp gg": lambda: grb.tspGGModel(6),
        "tsp mtz": lambda: grb.tspMTZModel(6),
        "cvrp mtz": lambda: grb.vrp.vrpMTZModel(
            6, demands=[2.0, 3.0, 1.0, 2.0, 3.0], capacity=6.0, num_vehicle=3
        ),
        "shortest path (pyomo)": lambda: omo.shortestPathModel((4, 4), solver="appsi_highs"),
        "knapsack (pyomo)": lambda: omo.knapsackModel(weights, [12.0, 12.0], solver="appsi_highs"),
    }


@pytest.mark.parametrize("backend", MILP_BACKENDS)
@pytest.mark.parametrize("name", list(models()))
def test_pyepo_models_solve_as_pyepo_solves_them(name, backend):
    require(backend)
    optmodel = models()[name]()
    costs = np.random.default_rng(1).uniform(0.1, 2.0, size=(6, optmodel.num_cost))
    with ilplayer.Oracle.from_pyepo(optmodel, solver=backend) as oracle:
        y, status = oracle(torch.from_numpy(costs))
    assert y.shape == costs.shape and (status == Status.OPTIMAL).all()
    for i, c in enumerate(costs):
        optmodel.setObj(c)
        _, objective = optmodel.solve()
        assert float(y[i].double() @ torch.from_numpy(c)) == pytest.approx(
            objective, rel=1e-6, abs=1e-6
        )


@pytest.mark.parametrize("name", ["tspDFJModel", "vrp.vrpRCIModel"])
def test_models_that_add_rows_lazily_are_refused(name):
    from pyepo.model import grb

    owner, _, attribute = name.rpartition(".")
    cls = getattr(getattr(grb, owner) if owner else grb, attribute)
    optmodel = cls(6) if attribute == "tspDFJModel" else cls(6, [2.0, 3.0, 1.0, 2.0, 3.0], 6.0, 3)
    with pytest.raises(ilplayer.errors.UnreadableModelError, match="LazyConstraints"):
        ilplayer.Oracle.from_pyepo(optmodel)


def test_spo_plus_on_the_pyepo_model_trains_to_pyepos_regret():
    """The same linear model, data, initial weights and batches: ilplayer's SPO+ on the model
    read from PyEPO (HiGHS) and PyEPO's SPO+ on its own Gurobi model reach the same regret."""
    from pyepo.model.grb import shortestPathModel

    torch.set_num_threads(1)
    x, c = pyepo.data.shortestpath.genData(200, 5, (4, 4), deg=4, noise_width=0.5, seed=3)
    x, c = torch.from_numpy(x).double(), torch.from_numpy(c).double()
    optmodel = shortestPathModel((4, 4))
    dataset = pyepo.data.dataset.optDataset(optmodel, x.numpy(), c.numpy())
    w, z = torch.as_tensor(dataset.sols).double(), torch.as_tensor(dataset.objs).double()
    regrets = []
    for library in ("pyepo", "ilplayer"):
        torch.manual_seed(0)
        model = torch.nn.Linear(5, optmodel.num_cost).double()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
        oracle = ilplayer.Oracle.from_pyepo(optmodel, solver="highs", executor="serial")
        spo = (
            pyepo.func.SPOPlus(optmodel, processes=1)
            if library == "pyepo"
            else ilplayer.losses.SPOPlus(oracle)
        )
        for _ in range(2):
            for rows in torch.arange(200).split(20):
                if library == "pyepo":
                    loss = spo(model(x[rows]), c[rows], w[rows], z[rows])
                else:
                    loss = spo(model(x[rows]), c[rows], y_true=w[rows])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        loader = torch.utils.data.DataLoader(dataset, batch_size=50)
        regrets.append(pyepo.metric.regret(model.float(), optmodel, loader))
        oracle.close()
    assert abs(regrets[0] - regrets[1]) <= 0.005, regrets
