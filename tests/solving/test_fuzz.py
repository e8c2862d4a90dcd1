"""Every available backend against exhaustive enumeration on seeded fuzz cases, and the checks
themselves against deliberately wrong backends."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from host_solvers import EnumerationSolver, FalseInfeasibleSolver, SuboptimalSolver

import ilplayer
from ilplayer.cli.fuzz import default_fuzz_backends
from ilplayer.cli.main import main
from ilplayer.testing.conformance import assert_correct_on_fuzzed_instances
from ilplayer.testing.fuzz import fuzz_backend, judge, load_reproducer, oracle, save_reproducer
from ilplayer.testing.fuzz_cases import FuzzCase, fuzz_case, fuzz_cases, fuzz_cases_for

CASES = 800  # about 2 000 instances per backend
# The Pyomo bridges hand the same programs to HiGHS and Gurobi, fuzzed at full size above, at
# several times their cost per instance: a third of the cases checks the bridge itself.
PYOMO_CASES = 270


def _backend(name: str) -> ilplayer.solvers.contract.Solver:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ilplayer.get_solver(name)
    except Exception as exc:  # not installed, or no licence
        pytest.skip(f"backend {name!r} is not usable here: {exc}")


@pytest.mark.parametrize("name", default_fuzz_backends())
def test_backend_is_correct_on_fuzzed_instances(name):
    solver = _backend(name)
    try:
        report = fuzz_backend(
            solver, fuzz_cases(PYOMO_CASES if name.startswith("pyomo:") else CASES)
        )
    finally:
        solver.close()
    # A one-row backend takes about a fifth of the cases (tests/solving/test_knapsack_solver.py fuzzes it further).
    expected = (
        1900 if ilplayer.core.records.Capability.ONE_ROW_ONLY not in solver.capabilities else 300
    )
    assert report.instances >= (expected // 3 if name.startswith("pyomo:") else expected)
    assert report.count("wrong-optimal") == 0, report.row()
    assert report.count("false-infeasible") == 0, report.row()
    assert report.count("not-infeasible") == 0, report.row()
    assert report.not_optimal_fraction <= 0.005, report.row()


def test_a_float32_equality_pair_met_only_within_rounding_must_not_be_called_infeasible():
    """SCIP with rows at b and feastol 1e-9 called such cases INFEASIBLE; every other backend
    answered them. The family and the judge make that a failure of the fuzz."""

    def rounding_only(case: FuzzCase) -> bool:
        points = (
            np.stack(
                np.meshgrid(
                    *[np.arange(l, u + 1) for l, u in zip(case.lb, case.ub)], indexing="ij"
                ),
                -1,
            )
            .reshape(-1, len(case.lb))
            .astype(float)
        )
        excess = (points @ case.A.T - case.b).max(axis=1, initial=-np.inf)
        return bool(((excess > 1e-9) & (excess <= 1e-7)).any() and not (excess <= 1e-9).any())

    case = next(
        case
        for case in fuzz_cases(3000)
        if "equality-pair-float32" in case.kinds and not len(case.b_eq) and rounding_only(case)
    )
    reference = oracle(case)
    assert not np.isnan(reference.strict).any()
    placeholder = np.zeros_like(case.c)
    assert judge(case, reference, placeholder, np.full(len(case.c), 1)) == [
        "false-infeasible"
    ] * len(case.c)
    for name in ("scip", "highs", "gurobi", "cpsat", "bruteforce"):
        if name not in ilplayer.available_solvers():
            continue
        y, status = ilplayer.solve(case.c, case.A, case.b, case.lb, case.ub, solver=name)
        assert judge(case, reference, y, status) == ["ok"] * len(case.c), name


def test_cases_cover_every_row_kind_and_box_only():
    kinds = {kind for case in fuzz_cases(400) for kind in case.kinds}
    assert {
        "random",
        "integer",
        "zero-satisfied",
        "zero-infeasible",
        "tight",
        "equality-pair",
        "infeasible",
        "box-only",
        "float32",
        "equality-integer",
        "equality-float",
        "equality-pair-float32",
    } <= kinds
    assert fuzz_case(17).c.tolist() == fuzz_case(17).c.tolist()  # seeded
    assert sum(len(case.c) for case in fuzz_cases_for(100)) >= 100


def test_the_oracle_agrees_with_bruteforce():
    for case in fuzz_cases(150):
        reference = oracle(case)
        y, status = ilplayer.solve(
            case.c,
            case.A,
            case.b,
            case.lb,
            case.ub,
            solver="bruteforce",
            A_eq=case.A_eq,
            b_eq=case.b_eq,
        )
        assert judge(case, reference, y, status) == ["ok"] * len(case.c)


def test_judge_names_wrong_optimal_and_false_infeasible():
    case = FuzzCase(
        c=np.array([[-1.0, -1.0]]),
        A=np.array([[1.0, 1.0]]),
        b=np.array([1.0]),
        lb=np.zeros(2, np.int64),
        ub=np.ones(2, np.int64),
    )
    reference = oracle(case)
    assert judge(case, reference, np.array([[0.0, 0.0]]), np.array([0])) == ["wrong-optimal"]
    assert judge(case, reference, np.array([[1.0, 0.0]]), np.array([0])) == ["ok"]
    assert judge(case, reference, np.zeros((1, 2)), np.array([1])) == ["false-infeasible"]
    assert judge(case, reference, np.zeros((1, 2)), np.array([4])) == ["not-optimal"]


@pytest.mark.parametrize(
    "wrong, verdict",
    [(SuboptimalSolver, "wrong-optimal"), (FalseInfeasibleSolver, "false-infeasible")],
)
def test_the_conformance_kit_fails_a_wrong_backend_with_a_reproducer(wrong, verdict):
    report = fuzz_backend(wrong(), fuzz_cases(60))
    assert report.count(verdict) > 0
    with pytest.raises(AssertionError, match=r"Reproducer .*\n\{\"c\": ") as failure:
        assert_correct_on_fuzzed_instances(wrong(), cases=60)
    reproducer = json.loads(str(failure.value).splitlines()[-1])
    case = FuzzCase.from_json(reproducer)
    assert verdict in judge(
        case,
        oracle(case),
        *ilplayer.solve(case.c, case.A, case.b, case.lb, case.ub, solver=wrong()),
    )


def test_the_conformance_kit_passes_a_correct_backend():
    assert_correct_on_fuzzed_instances(EnumerationSolver(), cases=60)


def test_reproducers_round_trip(tmp_path):
    case = fuzz_case(3)
    path = save_reproducer(
        tmp_path, "pyomo:x", case, ["ok"], case.c * 0, np.zeros(len(case.c)), {"time_limit": 5}
    )
    backend, again, options = load_reproducer(path)
    assert backend == "pyomo:x" and np.array_equal(again.A, case.A) and again.kinds == case.kinds
    assert options == {"time_limit": 5}


def test_fuzz_command_checks_native_parameter_overrides(tmp_path, capsys):
    """CP-SAT with ``use_exact_lp_reason`` off calls a non-optimal point optimal on case 520
    (docs/records/solvers.md): the option reaches the backend, the case fails, and its reproducer
    replays with the same option."""
    _backend("cpsat").close()
    options = '{"params": {"use_exact_lp_reason": false}}'
    args = [
        "fuzz",
        "--solver",
        "cpsat",
        "--start",
        "520",
        "--instances",
        "1",
        "--out",
        str(tmp_path),
    ]
    assert main(args) == 0  # the defaults get it right
    assert main([*args, "--solver-options", options]) == 1
    assert "1 wrong optimal" in capsys.readouterr().out
    reproducer = tmp_path / "cpsat-case520.json"
    assert json.loads(reproducer.read_text())["options"] == {
        "params": {"use_exact_lp_reason": False}
    }
    assert main(["fuzz", "--replay", str(reproducer)]) == 1  # still wrong
    replayed = capsys.readouterr().out
    assert "use_exact_lp_reason" in replayed and "wrong-optimal" in replayed
    assert (
        main(["fuzz", "--replay", str(reproducer), "--solver-options", "{}"]) == 0
    )  # the defaults fix it


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such file"),
        ("{not json", "is not a reproducer"),
        ('{"backend": "highs"}', "is not a reproducer"),
    ],
)
def test_fuzz_replay_of_a_missing_or_malformed_file_is_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "case.json"
    if content is not None:
        path.write_text(content)
    assert main(["fuzz", "--replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_fuzz_command_refuses_options_it_cannot_apply(capsys):
    assert main(["fuzz", "--solver-options", '{"time_limit": 5}', "--instances", "1"]) == 2
    assert "exactly one --solver" in capsys.readouterr().out
    assert (
        main(
            [
                "fuzz",
                "--solver",
                "bruteforce",
                "--solver-options",
                '{"time_limit": 5}',
                "--instances",
                "1",
            ]
        )
        == 2
    )
    assert "bruteforce rejected --solver-options" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["fuzz", "--solver", "bruteforce", "--solver-options", "[1, 2]"])
    assert "must be a JSON object" in capsys.readouterr().err


def test_fuzz_command_prints_the_table_and_writes_json(tmp_path, capsys):
    record = tmp_path / "fuzz.json"
    code = main(
        [
            "fuzz",
            "--solver",
            "bruteforce",
            "--instances",
            "300",
            "--out",
            str(tmp_path),
            "--json",
            str(record),
        ]
    )
    assert code == 0
    assert "bruteforce: " in capsys.readouterr().out
    row = json.loads(record.read_text())["rows"][0]
    assert row["backend"] == "bruteforce" and row["instances"] >= 300 and row["wrong_optimal"] == 0


def test_a_case_with_native_equalities_survives_its_reproducer():
    case = next(case for case in fuzz_cases(100) if len(case.b_eq))
    again = FuzzCase.from_json(json.loads(json.dumps(case.to_json())))
    assert again.A_eq.tolist() == case.A_eq.tolist() and again.b_eq.tolist() == case.b_eq.tolist()
