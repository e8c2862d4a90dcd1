"""``ilplayer fuzz``: check backends against exhaustive enumeration (or, with ``--milp``, against
scipy's HiGHS on mixed-integer programs), write a reproducer per failure, and replay one
(``--replay FILE``). ``run_fuzz`` returns the exit status: 0 correct, 1 a wrong answer, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

from ilplayer.cli.solvers import print_table
from ilplayer.core.records import Capability, Status
from ilplayer.solvers.registry import available_solvers, get_solver
from ilplayer.testing import milp_cases, milp_fuzz
from ilplayer.testing.fuzz import (
    fuzz_backend,
    judge,
    load_reproducer,
    oracle,
    save_reproducer,
    solve_case,
)
from ilplayer.testing.fuzz_cases import fuzz_cases_for

__all__ = ["default_fuzz_backends", "run_fuzz"]


def default_fuzz_backends() -> list[str]:
    """Every available backend, and the Pyomo paths to HiGHS and Gurobi when Pyomo is there."""
    available = available_solvers()
    names = [name for name in available if not name.startswith("pyomo:")]
    return names + [
        name
        for name in ("pyomo:appsi_highs", "pyomo:highs", "pyomo:gurobi_persistent")
        if name in available
    ]


def run_fuzz(args: argparse.Namespace) -> int:
    options = args.solver_options
    if options is not None and len(args.solver or []) != 1 and not args.replay:
        print("fuzz: --solver-options needs exactly one --solver (the options are that backend's)")
        return 2
    if args.replay:
        return _replay(args, options)
    milp = getattr(args, "milp", False)
    cases: list[Any] = (milp_cases.milp_cases_for if milp else fuzz_cases_for)(
        args.instances, args.start
    )
    rows, failed = [], False
    for name in args.solver or default_fuzz_backends():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                solver = get_solver(name, **(options or {}))
        except Exception as exc:  # not installed, no licence: say so and go on
            if options is not None and isinstance(exc, (TypeError, ValueError)):
                print(f"fuzz: {name} rejected --solver-options {options}: {exc}")
                return 2
            print(f"{name}: skipped ({type(exc).__name__}: {exc})", flush=True)
            continue
        if milp and Capability.CONTINUOUS_VARIABLES not in solver.capabilities:
            print(
                f"{name}: skipped (solves pure-integer programs only; it refuses mixed-integer ones)"
            )
            solver.close()
            continue
        try:
            report = (milp_fuzz.fuzz_milp_backend if milp else fuzz_backend)(solver, cases)
        finally:
            solver.close()
        rows.append(report.row())
        save: Any = milp_fuzz.save_milp_reproducer if milp else save_reproducer
        for failure in report.failures:
            save(args.out, name, *failure, options)
        failed |= not report.correct
        print(
            f"{name}: {report.instances} instances, {report.count('wrong-optimal')} wrong optimal, "
            f"{report.count('beats-oracle')} better than the oracle (a checked point), "
            f"{report.count('false-infeasible')} false infeasible, "
            f"{100 * report.not_optimal_fraction:.2f} % not optimal on feasible ones "
            f"({report.seconds:.0f} s)",
            flush=True,
        )
    _summary(args, rows)
    return 1 if failed else 0


def _summary(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    """The table of every backend's row, where the reproducers went, the ``--json`` record."""
    header = list(rows[0]) if rows else []
    if rows:
        print_table([header] + [[str(row[k]) for k in header] for row in rows])
    if any(
        row["wrong_optimal"]
        or row["false_infeasible"]
        or row["not_optimal"]
        or row["not_infeasible"]
        for row in rows
    ):
        print(f"reproducers: {args.out}/ (replay one with: ilplayer fuzz --replay FILE)")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"instances": args.instances, "start": args.start, "rows": rows}, indent=1)
        )
        print(f"wrote {args.json}")


def _replay(args: argparse.Namespace, options: dict[str, Any] | None) -> int:
    """``--replay FILE``: solve the one case a reproducer holds, on its backend (or ``--solver``)."""
    case: Any  # a FuzzCase, or a MilpCase
    try:
        record = json.loads(Path(args.replay).read_text())
        milp = bool(record.get("milp"))
        if milp:
            case, backend, saved = (
                milp_cases.MilpCase.from_json(record["case"]),
                record["backend"],
                record.get("options", {}),
            )
        else:
            backend, case, saved = load_reproducer(args.replay)
    except FileNotFoundError:
        print(f"fuzz --replay: {args.replay}: no such file", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        print(
            f"fuzz --replay: {args.replay} is not a reproducer written by ilplayer fuzz "
            f"({type(exc).__name__}: {exc})",
            file=sys.stderr,
        )
        return 2
    name = args.solver[0] if args.solver else backend
    options = saved if options is None and name == backend else options or {}
    try:
        solver = get_solver(name, **options)
    except (TypeError, ValueError) as exc:
        print(f"fuzz: {name} rejected the options {options}: {exc}")
        return 2
    if milp:
        try:
            y, status = milp_fuzz.solve_milp_case(case, solver)
        finally:
            solver.close()
        answer = milp_fuzz.milp_oracle(case)
        verdicts = milp_fuzz.judge_milp(case, answer, y, status)
        print(f"MILP case {case.seed} ({', '.join(case.kinds)}) on {name}")
        print(f"  status  {Status.names(status)}\n  verdict {verdicts}")
        print(
            f"  scipy   {answer.status}  strict {answer.strict.tolist()}  loose {answer.loose.tolist()}"
        )
        return 1 if {"wrong-optimal", "false-infeasible", "false-unbounded"} & set(verdicts) else 0
    try:
        y, status = solve_case(case, solver)
    finally:
        solver.close()
    reference = oracle(case)
    verdicts = judge(case, reference, y, status)
    shown = f" with {options}" if options else ""
    print(f"case {case.seed} ({', '.join(case.kinds)}) on {name}{shown}")
    print(f"  status  {Status.names(status)}\n  verdict {verdicts}")
    print(f"  oracle  strict {reference.strict.tolist()}  loose {reference.loose.tolist()}")
    return 1 if {"wrong-optimal", "false-infeasible"} & set(verdicts) else 0
