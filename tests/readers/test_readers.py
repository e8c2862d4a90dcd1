"""Program.from_file / from_gurobipy / from_pyomo / from_cvxpy against each tool's own solve:
random mixed-integer models (rows of every sense, ranged rows, finite and infinite bounds,
fractional data) solved by the tool and by ilplayer on every MILP backend, statuses included."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ilplayer
from ilplayer import Program, Status
from ilplayer.errors import UnreadableModelError
from tests.host_solvers import MILP_BACKENDS, require

SEEDS = range(40)


def random_model(seed: int) -> dict:
    """A small random MILP as plain data: rows ``lower <= A y <= upper``, a box, integrality."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(3, 7)), int(rng.integers(1, 5))
    A = np.round(rng.normal(size=(m, n)) * (rng.random((m, n)) < 0.7), 2)
    kind = rng.integers(0, 4, size=m)  # 0: <=, 1: >=, 2: =, 3: ranged
    mid = np.round(rng.normal(size=m) * 3, 2)
    lower = np.where((kind == 1) | (kind == 2) | (kind == 3), mid - (kind == 3) * 2.5, -np.inf)
    upper = np.where((kind == 0) | (kind == 2) | (kind == 3), mid + (kind == 3) * 2.5, np.inf)
    open_lb = rng.random(n) < (0.5 if seed % 3 else 0.0)
    lb = np.where(open_lb, -np.inf, -rng.integers(0, 3, size=n).astype(float))
    ub = np.where(
        rng.random(n) < (0.4 if seed % 3 else 0.0), np.inf, rng.integers(1, 5, size=n).astype(float)
    )
    integer = rng.random(n) < 0.7
    c = np.round(rng.normal(size=n), 2)
    return dict(
        n=n,
        A=A,
        lower=lower,
        upper=upper,
        lb=lb,
        ub=ub,
        integer=integer,
        c=c,
        sense="max" if seed % 2 else "min",
    )


def ilplayer_outcome(program: Program, backend: str) -> tuple[str, float]:
    oracle = ilplayer.Oracle(program, solver=backend)
    y, status = oracle(program.c[None])
    oracle.close()
    value = {
        Status.OPTIMAL: "optimal",
        Status.INFEASIBLE: "infeasible",
        Status.UNBOUNDED: "unbounded",
    }
    return value.get(Status(int(status[0])), "other"), float((y[0].double() * program.c).sum())


def agree(tool: tuple[str, float], ours: tuple[str, float]) -> bool:
    if tool[0] == "infeasible_or_unbounded":
        return ours[0] in ("infeasible", "unbounded")
    if tool[0] != ours[0]:
        return False
    return tool[0] != "optimal" or math.isclose(tool[1], ours[1], rel_tol=1e-6, abs_tol=1e-6)


# The source tools, each building the model its own way and solving it itself.


def gurobipy_model(data: dict):
    gp = pytest.importorskip("gurobipy")
    env = gp.Env(params={"OutputFlag": 0})
    model = gp.Model(env=env)
    x = [
        model.addVar(
            lb=data["lb"][j],
            ub=data["ub"][j],
            obj=data["c"][j],
            vtype=gp.GRB.INTEGER if data["integer"][j] else gp.GRB.CONTINUOUS,
            name=f"x{j}",
        )
        for j in range(data["n"])
    ]
    for i, row in enumerate(data["A"]):
        expr = gp.quicksum(float(a) * v for a, v in zip(row, x))
        lo, hi = data["lower"][i], data["upper"][i]
        if lo == hi:
            model.addConstr(expr == hi, name=f"r{i}")
        else:
            if np.isfinite(hi):
                model.addConstr(expr <= hi, name=f"r{i}u")
            if np.isfinite(lo):
                model.addConstr(expr >= lo, name=f"r{i}l")
    model.ModelSense = -1 if data["sense"] == "max" else 1
    model.Params.DualReductions = 0  # tell infeasible from unbounded
    model.update()
    return model


def gurobipy_outcome(model) -> tuple[str, float]:
    model.optimize()
    status = {2: "optimal", 3: "infeasible", 4: "infeasible_or_unbounded", 5: "unbounded"}[
        model.Status
    ]
    if status == "optimal" and math.isinf(
        model.ObjVal
    ):  # Gurobi 13 says so of some unbounded MILPs
        status = "unbounded"
    return status, model.ObjVal if status == "optimal" else math.nan


def pyomo_model(data: dict):
    pe = pytest.importorskip("pyomo.environ")
    model = pe.ConcreteModel()
    model.J = pe.RangeSet(0, data["n"] - 1)
    bounds = {
        j: (
            None if np.isinf(data["lb"][j]) else data["lb"][j],
            None if np.isinf(data["ub"][j]) else data["ub"][j],
        )
        for j in range(data["n"])
    }
    model.x = pe.Var(
        model.J,
        bounds=lambda _, j: bounds[j],
        domain=lambda _, j: pe.Integers if data["integer"][j] else pe.Reals,
    )
    model.rows = pe.ConstraintList()
    for i, row in enumerate(data["A"]):
        expr = sum(float(a) * model.x[j] for j, a in enumerate(row) if a)
        lo, hi = data["lower"][i], data["upper"][i]
        if isinstance(expr, int):
            continue
        model.rows.add((None if np.isinf(lo) else lo, expr, None if np.isinf(hi) else hi))
    model.obj = pe.Objective(
        expr=sum(float(c) * model.x[j] for j, c in enumerate(data["c"])),
        sense=pe.maximize if data["sense"] == "max" else pe.minimize,
    )
    return model


def cvxpy_problem(data: dict):
    cp = pytest.importorskip("cvxpy")
    n = data["n"]
    integer = np.flatnonzero(data["integer"])
    x = cp.Variable(n, integer=(integer,) if len(integer) else False, name="x")
    constraints = []
    for i, row in enumerate(data["A"]):
        lo, hi = data["lower"][i], data["upper"][i]
        if lo == hi:
            constraints.append(row @ x == hi)
            continue
        if np.isfinite(hi):
            constraints.append(row @ x <= hi)
        if np.isfinite(lo):
            constraints.append(row @ x >= lo)
    for j in range(n):
        if np.isfinite(data["lb"][j]):
            constraints.append(x[j] >= data["lb"][j])
        if np.isfinite(data["ub"][j]):
            constraints.append(x[j] <= data["ub"][j])
    objective = (cp.Maximize if data["sense"] == "max" else cp.Minimize)(data["c"] @ x)
    return cp.Problem(objective, constraints)


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_gurobipy_models_solve_as_gurobi_solves_them(backend):
    require(backend)
    for seed in SEEDS:
        model = gurobipy_model(random_model(seed))
        program = Program.from_gurobipy(model)
        assert program.variable_names == tuple(f"x{j}" for j in range(model.NumVars))
        assert agree(gurobipy_outcome(model), ilplayer_outcome(program, backend)), seed


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_files_solve_as_highs_solves_them(backend, tmp_path):
    require(backend)
    highspy = pytest.importorskip("highspy")
    for seed in SEEDS:
        path = tmp_path / f"model{seed}.{'mps' if seed % 2 else 'lp'}"
        gurobipy_model(random_model(seed)).write(str(path))
        program = Program.from_file(path)
        highs = highspy.Highs()
        highs.setOptionValue("output_flag", False)
        highs.readModel(str(path))
        highs.run()
        status = {
            highspy.HighsModelStatus.kOptimal: "optimal",
            highspy.HighsModelStatus.kInfeasible: "infeasible",
            highspy.HighsModelStatus.kUnbounded: "unbounded",
            highspy.HighsModelStatus.kUnboundedOrInfeasible: "infeasible_or_unbounded",
        }[highs.getModelStatus()]
        tool = (status, highs.getInfo().objective_function_value)
        assert agree(tool, ilplayer_outcome(program, backend)), seed


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_pyomo_models_solve_as_pyomo_solves_them(backend):
    require(backend)
    pe = pytest.importorskip("pyomo.environ")
    from pyomo.opt import TerminationCondition as TC

    for seed in SEEDS:
        data = random_model(seed)
        model = pyomo_model(data)
        program = Program.from_pyomo(model)
        result = pe.SolverFactory("appsi_highs").solve(model, load_solutions=False)
        condition = result.solver.termination_condition
        status = {
            TC.optimal: "optimal",
            TC.infeasible: "infeasible",
            TC.unbounded: "unbounded",
            TC.infeasibleOrUnbounded: "infeasible_or_unbounded",
        }[condition]
        tool = (
            status,
            result.problem.lower_bound if data["sense"] == "min" else result.problem.upper_bound,
        )
        assert agree(tool, ilplayer_outcome(program, backend)), seed


@pytest.mark.parametrize("backend", MILP_BACKENDS)
def test_cvxpy_problems_solve_as_cvxpy_solves_them(backend):
    require(backend)
    cp = pytest.importorskip("cvxpy")
    for seed in SEEDS:
        problem = cvxpy_problem(random_model(seed))
        program = Program.from_cvxpy(problem)
        problem.solve(solver=cp.HIGHS)
        status = {
            cp.OPTIMAL: "optimal",
            cp.INFEASIBLE: "infeasible",
            cp.UNBOUNDED: "unbounded",
            "infeasible_or_unbounded": "infeasible_or_unbounded",
        }[problem.status]
        assert agree((status, problem.value), ilplayer_outcome(program, backend)), seed


# What a MILP cannot hold is refused by name, before any solve.


def test_gurobipy_refuses_what_is_not_linear_by_name():
    gp = pytest.importorskip("gurobipy")

    def model():
        m = gp.Model(env=gp.Env(params={"OutputFlag": 0}))
        x = m.addVars(3, vtype="I", ub=4, name="x")
        m.addConstr(x[0] + x[1] <= 3, name="row")
        return m, x

    m, x = model()
    m.addQConstr(x[0] * x[1] <= 2, name="product")
    with pytest.raises(UnreadableModelError, match="quadratic constraint 'product'"):
        Program.from_gurobipy(m)
    m, x = model()
    m.setObjective(x[0] * x[0])
    with pytest.raises(UnreadableModelError, match="objective is quadratic"):
        Program.from_gurobipy(m)
    m, x = model()
    m.addSOS(gp.GRB.SOS_TYPE1, [x[0], x[1]])
    with pytest.raises(UnreadableModelError, match="SOS"):
        Program.from_gurobipy(m)
    m, x = model()
    m.addGenConstrMax(x[2], [x[0], x[1]], name="largest")
    with pytest.raises(UnreadableModelError, match="general constraint 'largest'"):
        Program.from_gurobipy(m)
    m, _ = model()
    m.addVar(vtype="S", lb=1, ub=3, name="semi")
    with pytest.raises(UnreadableModelError, match="'semi' is semi-continuous"):
        Program.from_gurobipy(m)
    with pytest.raises(TypeError, match=r"gurobipy.Model"):
        Program.from_gurobipy("model.lp")


def test_pyomo_refuses_what_is_not_linear_by_name():
    pe = pytest.importorskip("pyomo.environ")
    m = pe.ConcreteModel()
    m.x = pe.Var([0, 1], domain=pe.Integers, bounds=(0, 3))
    m.curve = pe.Constraint(expr=m.x[0] * m.x[1] <= 2)
    m.obj = pe.Objective(expr=m.x[0])
    with pytest.raises(UnreadableModelError, match="constraint 'curve' is not linear"):
        Program.from_pyomo(m)
    m.curve.deactivate()
    m.obj.deactivate()
    m.square = pe.Objective(expr=m.x[0] ** 2)
    with pytest.raises(UnreadableModelError, match="objective 'square' is not linear"):
        Program.from_pyomo(m)
    m.square.deactivate()
    with pytest.raises(UnreadableModelError, match="0 active objectives"):
        Program.from_pyomo(m)
    m.obj.activate()
    m.pick = pe.SOSConstraint(var=m.x, sos=1)
    with pytest.raises(UnreadableModelError, match="SOS constraint 'pick'"):
        Program.from_pyomo(m)


def test_files_that_cannot_be_read_are_refused_with_the_path(tmp_path):
    pytest.importorskip("highspy")
    with pytest.raises(UnreadableModelError, match=r"model.txt.*the formats are .mps, .lp"):
        Program.from_file(tmp_path / "model.txt")
    with pytest.raises(FileNotFoundError, match=r"missing.mps"):
        Program.from_file(tmp_path / "missing.mps")
    broken = tmp_path / "broken.lp"
    broken.write_text("this is not an LP file\n")
    with pytest.raises(UnreadableModelError, match=r"HiGHS could not read .*broken.lp"):
        Program.from_file(broken)
    quadratic = tmp_path / "quadratic.lp"
    quadratic.write_text("Minimize\n obj: x + [ 2 x ^ 2 ] / 2\nSubject To\n c: x >= 1\nEnd\n")
    with pytest.raises(UnreadableModelError, match="quadratic objective"):
        Program.from_file(quadratic)


GOOD_MPS = """NAME          TINY
ROWS
 N  obj
 L  c1
COLUMNS
    MARKER                 'MARKER'                 'INTORG'
    x1        obj       -1.0       c1        1.0
    x2        obj       -2.0       c1        1.0
    MARKER                 'MARKER'                 'INTEND'
RHS
    rhs       c1        1.5
BOUNDS
 UP BND       x1        1
 UP BND       x2        1
ENDATA
"""


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("x2        obj       -2.0", "x2        obj       abc", r"line 8 .* 'abc' is not a number"),
        (
            "x1        obj       -1.0",
            "x1        obj 1 r   ",
            r"line 7 .* a column line is column row value",
        ),
        ("ROWS", "ROWZ", r"line 2 .* starts 'ROWZ', which is not an MPS section"),
        (
            "x1        obj       -1.0       c1",
            "x1        obj       -1.0       c9",
            r"line 7 .* row 'c9' is not declared",
        ),
        (" UP BND       x2", " UP BND       x3", r"line 14 .* column 'x3' is not declared"),
        (
            " UP BND       x2        1",
            " XX BND       x2        1",
            r"line 14 .* 'XX' is not a bound type",
        ),
    ],
)
def test_a_corrupt_mps_file_is_refused_naming_its_line(tmp_path, old, new, message):
    pytest.importorskip("highspy")
    good = tmp_path / "good.mps"
    good.write_text(GOOD_MPS)
    assert Program.from_file(good).c.tolist() == [-1.0, -2.0]
    corrupt = tmp_path / "corrupt.mps"
    corrupt.write_text(GOOD_MPS.replace(old, new))
    with pytest.raises(UnreadableModelError, match=message):
        Program.from_file(corrupt)


def test_mps_files_the_solvers_write_pass_the_check_in_free_and_fixed_format(tmp_path):
    gp = pytest.importorskip("gurobipy")
    highspy = pytest.importorskip("highspy")
    from ilplayer.readers.mps import check_mps

    for seed in range(20):
        written = tmp_path / f"gurobi{seed}.mps"
        gurobipy_model(random_model(seed)).write(str(written))
        highs = highspy.Highs()
        highs.setOptionValue("output_flag", False)
        highs.readModel(str(written))
        highs.writeModel(str(tmp_path / f"highs{seed}.mps"))
        for path in (written, tmp_path / f"highs{seed}.mps"):
            check_mps(path)

    # Fixed format: names with spaces in their columns.
    def fixed(code: str, *fields: str) -> str:
        line = f" {code:<2} " + "".join(
            f"{field:<10}" if k % 2 == 0 else f"{field:<15}" for k, field in enumerate(fields)
        )
        return line.rstrip()

    spaced = tmp_path / "spaced.mps"
    spaced.write_text(
        "\n".join(
            [
                "NAME          SPACED",
                "ROWS",
                fixed("N", "obj"),
                fixed("L", "my c1"),
                "COLUMNS",
                fixed("", "my x1", "obj", "-1.0", "my c1", "1.0"),
                "RHS",
                fixed("", "rhs", "my c1", "1.5"),
                "BOUNDS",
                fixed("UP", "BND", "my x1", "1"),
                "ENDATA",
                "",
            ]
        )
    )
    check_mps(spaced)
    assert Program.from_file(spaced).variable_names == ("my x1",)
    del gp


def test_solutions_are_read_back_by_name():
    gp = pytest.importorskip("gurobipy")
    program = Program.from_gurobipy(gurobipy_model(random_model(0)))
    y = torch.arange(program.num_variables, dtype=torch.float64)
    assert program.values(y) == {f"x{j}": y[j] for j in range(program.num_variables)}
    assert program.A is not None and hasattr(program.A, "nnz")  # kept sparse
    del gp
