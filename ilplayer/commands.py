"""What each ``ilplayer`` subcommand does, given its parsed arguments (`ilplayer.cli`
parses them): ``run_demo``, ``run_experiments``, ``run_fuzz``, ``run_learn``, ``run_bench`` and
the ``solvers`` table. Each returns the exit status: 0 done, 1 a wrong answer found, 2 bad input.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["default_fuzz_backends", "print_table", "run_bench", "run_demo", "run_experiments", "run_fuzz", "run_learn",
           "solvers_table"]


def _distribution_version(name: str | None) -> str:
    if not name:
        return "-"
    try:
        return f"{name} {importlib.metadata.version(name)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{name} (not installed)"


def solvers_table() -> list[list[str]]:
    """Rows of ``ilplayer solvers``: name, distribution, available, licence, capabilities."""
    from ilplayer.plugins import registered_specs

    rows = [["name", "distribution", "available", "licence", "capabilities"]]
    for name, spec in sorted(registered_specs().items()):
        available = spec.is_available()
        licence, capabilities = "-", "-"
        if available:
            cls = spec.load()
            try:
                licence = cls.license_status().value
            except Exception as exc:  # report, never crash the listing
                licence = f"error: {exc}"
            capabilities = ", ".join(sorted(cap.value for cap in cls.capabilities)) or "-"
        elif spec.missing_requirements():
            licence = f"missing {', '.join(spec.missing_requirements())}"
        rows.append([name, _distribution_version(spec.distribution), "yes" if available else "no",
                     licence, capabilities])
    return rows


def print_table(rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for index, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            print("  ".join("-" * width for width in widths))


def run_demo(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ilplayer.experiments.random_constraints import make_dataset
    from ilplayer.experiments.runner import PAPER
    from ilplayer.training import BackendConfig, TrainingConfig, train_static_constraints

    print(f"Random Constraints demo: learn {args.m} hidden constraints on {{0,1}}^{args.n} from "
          f"(cost, optimal solution) pairs; solver {args.solver!r}, seed {args.seed}")
    start = time.perf_counter()
    data = make_dataset(num_variables=args.n, num_constraints=args.m, box="binary",
                        seed=args.seed, solver=args.solver)
    print(f"dataset: {len(data.c_train)} train / {len(data.c_test)} held-out instances "
          f"({time.perf_counter() - start:.1f} s)")
    with tqdm(total=args.epochs, unit="epoch", dynamic_ncols=True) as bar:
        def report(record: dict[str, float]) -> None:
            bar.update(1)
            bar.set_postfix(loss=f"{record['loss']:.4f}", accuracy=f"{100 * record['accuracy']:.1f}%")

        _, history = train_static_constraints(
            data, TrainingConfig(epochs=args.epochs, lr=args.lr),
            BackendConfig(solver=args.solver, executor=args.executor, workers=args.workers),
            seed=args.seed, on_epoch=report)
    paper = PAPER[("rc", "binary")].get(args.m) if args.n == 16 else None
    baseline = 100 * data.box_baseline_accuracy
    print(f"held-out exact-match accuracy: CombOptNet {100 * history[-1]['accuracy']:.1f} %  |  "
          f"box-constrained baseline {baseline:.1f} %"
          + (f"  |  paper (mean of 10 seeds) {paper} %" if paper else ""))
    print(f"wall time {time.perf_counter() - start:.0f} s")
    if args.plot:
        try:
            from ilplayer.experiments.plots import plot_training
        except ImportError:  # pragma: no cover - matplotlib is the [demo] extra
            print("no plot: pip install 'ilplayer[demo]' for matplotlib")
            return 0
        references = {"box-constrained baseline": baseline}
        if paper:
            references["paper (mean of 10 seeds)"] = paper
        path = plot_training(history, args.plot, f"Random Constraints, binary, n={args.n}, "
                             f"m={args.m}, seed {args.seed}", references)
        print(f"plot: {path}")
    return 0


def parse_int_list(text: str) -> list[int]:
    """``"3"``, ``"0-9"`` or ``"1,2,4,8"``."""
    values: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        values.extend(range(int(low), int(high) + 1) if high else [int(low)])
    return values


def parse_ablation(items: list[str]) -> dict[str, object]:
    overrides: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--ablation takes KEY=VALUE, got {item!r}")
        if key == "tau":
            overrides[key] = None if value in ("hard", "none") else float(value)
        elif key in ("lr", "backbone_lr", "blackbox_lambda", "temperature", "temperature_factor", "margin_pos",
                     "margin_neg", "cycle_epochs"):
            overrides[key] = float(value)
        elif key in ("epochs", "batch_size", "k", "iterations", "validate_every", "stop_patience",
                     "samples_per_hop", "temperature_patience"):
            overrides[key] = int(value)
        else:
            overrides[key] = value
    return overrides


def run_experiments(args: argparse.Namespace) -> int:
    from ilplayer.experiments.runner import run_decision_focused, run_knapsack, run_static_constraints
    from ilplayer.training import BackendConfig

    if args.task in ("shortest-path", "knapsack-regret", "tsp"):
        methods = tuple(args.methods) if args.methods else None
        from ilplayer.experiments.decision_focused import METHODS, PYEPO_METHODS

        unknown = sorted(set(methods or ()) - set(METHODS))
        if unknown:
            raise SystemExit(f"--methods: unknown {unknown}; choose from {list(METHODS)}")
        run_decision_focused(args.task, args.out, methods=methods,
                             solvers=tuple(args.solvers) if args.solvers else None,
                             seeds=tuple(parse_int_list(args.seeds)), epochs=args.epochs,
                             train_size=args.train_size, test_size=args.test_size,
                             pyepo=not args.no_pyepo, resume=args.resume, executor=args.executor,
                             workers=args.workers, pyepo_processes=args.pyepo_processes,
                             pyepo_solvers=tuple(args.pyepo_solvers) if args.pyepo_solvers else None,
                             report=lambda line: print(line, flush=True),
                             pyepo_methods=tuple(m for m in methods if m in PYEPO_METHODS) if methods else None,
                             task_options={key: getattr(args, key) for key in ("grid", "items", "dim", "nodes",
                                                                               "formulation") if hasattr(args, key)})
        return 0
    if args.task == "knapsack":
        for seed in parse_int_list(args.seeds):
            record = run_knapsack(seed, args.out, epochs=args.epochs, method=args.method,
                                  resume=args.resume, items=args.items, sentence_model=args.sentence_model,
                                  solver=args.solver)
            paper, reported = record["paper_accuracy"], record.get("ilploss_reported")
            print(f"knapsack {args.items} items {args.method} restart {seed}: accuracy "
                  f"{100 * record['accuracy']:.1f} %"
                  + (f" (paper {paper} %)" if paper is not None else "")
                  + (f" (ILP-Loss' authors: {reported} %)" if reported is not None else "")
                  + f" in {record['wall_time_s']:.0f} s", flush=True)
        return 0
    if args.task == "sudoku":
        from ilplayer.experiments.sudoku_runs import run_command

        return run_command(args, parse_int_list(args.seeds))
    if args.task == "matching":
        from ilplayer.experiments.runner import run_matching

        for p in parse_int_list(args.p):
            for seed in parse_int_list(args.seeds):
                record = run_matching(p, seed, args.out, method=args.method, solver=args.solver,
                                      **{"epochs": args.epochs, **parse_ablation(args.ablation)})
                print(f"matching p={p} {args.method} seed {seed}: accuracy "
                      f"{100 * record['accuracy']:.1f} % (untrained backbone "
                      f"{100 * record['untrained_assignment_accuracy']:.1f} %) in "
                      f"{record['wall_time_s']:.0f} s", flush=True)
        return 0

    box = getattr(args, "box", "binary")
    backend = BackendConfig(solver=args.solver, executor=args.executor, workers=args.workers)
    overrides = {**({} if args.epochs is None else {"epochs": args.epochs}), **parse_ablation(args.ablation)}
    for m in parse_int_list(args.m):
        for seed in parse_int_list(args.seeds):
            for restart in parse_int_list(args.restarts):
                record = run_static_constraints(args.task, m, seed, args.out, box=box, backend=backend,
                                                method=args.method, resume=args.resume,
                                                restart=restart, **overrides)
                paper = record["paper_accuracy"]
                again = f" restart {restart}" if restart else ""
                print(f"{args.task} {box} m={m} seed={seed}{again} {record['variant'] or ''}: accuracy "
                      f"{100 * record['accuracy']:.1f} % (box-constrained "
                      f"{100 * record['box_baseline_accuracy']:.1f} %"
                      + (f", paper {paper} %" if paper is not None else "")
                      + f") in {record['wall_time_s']:.0f} s with {record['solver'] or args.method}", flush=True)
    return 0


def default_fuzz_backends() -> list[str]:
    """Every available backend, and the Pyomo paths to HiGHS and Gurobi when Pyomo is there."""
    from ilplayer.plugins import available_solvers

    names = [name for name in available_solvers() if name != "pyomo"]
    if "pyomo" in available_solvers():
        names += ["pyomo:appsi_highs", "pyomo:highs", "pyomo:gurobi_persistent"]
    return names


def run_fuzz(args: argparse.Namespace) -> int:
    import json
    import warnings
    from pathlib import Path

    from ilplayer import milp_fuzz
    from ilplayer.fuzz import fuzz_backend, fuzz_cases_for, judge, load_reproducer, oracle, save_reproducer, solve_case
    from ilplayer.plugins import get_solver
    from ilplayer.types import Capability, Status

    options = args.solver_options
    if options is not None and len(args.solver or []) != 1 and not args.replay:
        print("fuzz: --solver-options needs exactly one --solver (the options are that backend's)")
        return 2
    if args.replay:
        case: Any  # a FuzzCase, or a MilpCase
        try:
            record = json.loads(Path(args.replay).read_text())
            milp = bool(record.get("milp"))
            if milp:
                case, backend, saved = (milp_fuzz.MilpCase.from_json(record["case"]), record["backend"],
                                        record.get("options", {}))
            else:
                backend, case, saved = load_reproducer(args.replay)
        except FileNotFoundError:
            print(f"fuzz --replay: {args.replay}: no such file", file=sys.stderr)
            return 2
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            print(f"fuzz --replay: {args.replay} is not a reproducer written by ilplayer fuzz "
                  f"({type(exc).__name__}: {exc})", file=sys.stderr)
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
            print(f"  scipy   {answer.status}  strict {answer.strict.tolist()}  loose {answer.loose.tolist()}")
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
    milp = getattr(args, "milp", False)
    cases: list[Any] = (milp_fuzz.milp_cases_for if milp else fuzz_cases_for)(args.instances, args.start)
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
            print(f"{name}: skipped (solves pure-integer programs only; it refuses mixed-integer ones)")
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
        print(f"{name}: {report.instances} instances, {report.count('wrong-optimal')} wrong optimal, "
              f"{report.count('false-infeasible')} false infeasible, "
              f"{100 * report.not_optimal_fraction:.2f} % not optimal on feasible ones "
              f"({report.seconds:.0f} s)", flush=True)
    header = list(rows[0]) if rows else []
    if rows:
        print_table([header] + [[str(row[k]) for k in header] for row in rows])
    if any(row["wrong_optimal"] or row["false_infeasible"] or row["not_optimal"] or row["not_infeasible"]
           for row in rows):
        print(f"reproducers: {args.out}/ (replay one with: ilplayer fuzz --replay FILE)")
    if args.json:
        Path(args.json).write_text(json.dumps({"instances": args.instances, "start": args.start,
                                               "rows": rows}, indent=1))
        print(f"wrote {args.json}")
    return 1 if failed else 0


def _which_model(epoch: int) -> str:
    return "the start, untrained" if epoch == 0 else f"model of epoch {epoch}"


def run_learn(args: argparse.Namespace) -> int:
    import json
    import warnings
    from pathlib import Path

    import numpy as np
    import torch

    import ilplayer.learn as learning
    from ilplayer.executors import default_workers
    from ilplayer.training import BackendConfig

    try:
        c, y, lb, ub = learning.load_solutions(args.train, args.lb, args.ub)
        train_rows = len(c)  # the rows after them in c_all, y_all are the test file's
        c_all, y_all = c, y  # every observation, in the files' order, for the checks below
        if args.test:
            c_test, y_test, lb_test, ub_test = learning.load_solutions(args.test, lb, ub)
            if c_test.shape[1] != c.shape[1]:
                raise ValueError(f"{args.test}: {c_test.shape[1]} variables, but {args.train} has "
                                 f"{c.shape[1]}")
            c_all, y_all = np.vstack([c, c_test]), np.vstack([y, y_test])
        else:
            c_test = y_test = None  # type: ignore[assignment]  # learn_constraints holds pairs out
            if not 0 < args.test_fraction < 1:
                raise ValueError(f"--test-fraction must lie strictly between 0 and 1, got {args.test_fraction}")
            print(f"no --test file: holding out {learning.holdout_size(len(c), args.test_fraction)} of {len(c)} "
                  f"observations (--test-fraction {args.test_fraction})")
        given = {key: value for key, value in (("epochs", args.epochs), ("lr", args.lr),
                                                ("batch_size", args.batch_size), ("k", args.k))
                 if value is not None}
        own = {"combopt": {"tau": args.tau, "box_relative_steps": args.box_relative_steps, "init": args.init},
               "ilploss": {"temperature": args.temperature}}
        for method, options in own.items():
            foreign = [f"--{name.replace('_', '-')}" for name, value in options.items() if value is not None]
            if args.method not in (method, "auto") and foreign:
                raise ValueError(f"{', '.join(foreign)} belong(s) to --method {method}, not {args.method}")
        configs: dict[str, Callable[..., Any]] = {"combopt": learning.LearnConfig, "ilploss": lambda **kw:
                                                  learning.ILPLossConfig(**{"k": learning.AUTO_ILPLOSS_K, **kw})}
        built = {method: configs[method](**given, **{name: value for name, value in own[method].items()
                                                     if value is not None})
                 for method in (learning.LEARN_METHODS if args.method == "auto" else (args.method,))}
        config: learning.LearnConfig | learning.ILPLossConfig | learning.AutoConfig = (
            learning.AutoConfig(**built) if args.method == "auto" else built[args.method])
    except (ValueError, FileNotFoundError) as exc:
        print(f"ilplayer learn: {exc}", file=sys.stderr)
        return 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        learning.check_solutions(c_all, y_all, lb, ub, lambda i: f"{args.train} row {i}" if i < train_rows
                                 else f"{args.test} row {i - train_rows}")
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    held_out = len(c_test) if c_test is not None else learning.holdout_size(len(c), args.test_fraction)
    rows = (f"{args.num_constraints * config.k} constraints with {args.method}"
            if not isinstance(config, learning.AutoConfig)
            else f"{args.num_constraints * config.ilploss.k} constraints with ilploss and "
                 f"{args.num_constraints * config.combopt.k} with combopt (the better kept)")
    print(f"learning {rows} on {c.shape[1]} variables from "
          f"{len(c) - (0 if c_test is not None else held_out)} observations ({held_out} held out)")
    result = learning.learn_constraints(c, y, lb, ub, args.num_constraints, c_test=c_test, y_test=y_test,
                                        test_fraction=args.test_fraction, config=config, seed=args.seed,
                                        method=args.method, validation_fraction=args.validation_fraction,
                                        restarts=args.restarts, test_every=args.test_every, polish=args.polish,
                                        equalities=args.equalities, time_limit=args.time_limit,
                                        restart_workers=args.restart_workers or min(args.restarts, default_workers()),
                                        backend=BackendConfig(args.solver, None, args.executor, args.workers))
    alone = result.equalities() is not None and result.constraints()[0].shape[0] == 0
    which = "the equalities alone" if alone else _which_model(result.settings["selected_epoch"])
    print(f"exact-match accuracy: train {100 * result.train_accuracy:.1f} %, held out "
          f"{100 * result.test_accuracy:.1f} % ({which}; "
          f"{result.settings['solver']}, {result.wall_time_s:.0f} s)")
    auto = result.settings.get("auto")
    if auto:
        print(f"auto: {auto['judged_on']} accuracy ilploss {100 * auto['ilploss_accuracy']:.1f} % "
              f"({auto['ilploss_seconds']:.0f} s)"
              + (f", combopt {100 * auto['combopt_accuracy']:.1f} % ({auto['combopt_seconds']:.0f} s)"
                 if "combopt_accuracy" in auto else ", combopt not run (nothing left to learn)")
              + f": kept {auto['kept']}")
    found = result.settings["equalities"]
    if found and found["rows"]:
        print(f"equalities: {found['rows']} found on the {found['found_on']}"
              + (", enough alone: nothing trained" if alone else ", kept fixed"))
    polished = result.settings["polish"]
    if polished:
        print(f"polish: {polished['rows_before']} -> {polished['rows_after']} constraints, {polished['judged_on']} "
              f"accuracy {100 * polished['accuracy_before']:.1f} -> {100 * polished['accuracy_after']:.1f} %, "
              + ("kept" if polished["kept"] else "not kept: the trained constraints stay"))
        other = polished.get("other")
        if other:
            print(f"polish of {_which_model(other['epoch'])}: validation accuracy {100 * other['accuracy_before']:.1f}"
                  f" -> {100 * other['accuracy_after']:.1f} %, not taken")
    if args.json:
        record = {"train": str(args.train), "test": str(args.test) if args.test else None,
                  **result.record()}
        Path(args.json).write_text(json.dumps(record, indent=1))
        print(f"wrote {args.json}")
    if args.out:
        A, b = result.constraints()
        equalities = result.equalities()
        torch.save({"A": A, "b": b, "lb": result.settings["lb"], "ub": result.settings["ub"],
                    **({"A_eq": equalities[0], "b_eq": equalities[1]} if equalities else {}),
                    "state_dict": result.model.state_dict(), "settings": result.settings}, args.out)
        print(f"wrote {args.out} (A, b{', A_eq, b_eq' if equalities else ''}, the box and the model's state_dict)")
    return 0


def run_bench(args: argparse.Namespace) -> int:
    from ilplayer import bench

    if args.bench == "scale":
        from ilplayer.bench.scale import SCALE_SIZES, plot_scale, scale_benchmark

        sizes: dict[str, tuple[int, ...]] = ({family: tuple(args.sizes) for family in args.families}
                                             if args.sizes else dict(SCALE_SIZES))
        print(f"ilplayer bench scale on {args.backend}: one thread, each size in a fresh process", flush=True)
        rows = scale_benchmark(tuple(args.families), args.backend, sizes, args.instances,
                               report=lambda line: print(line, flush=True))
        if args.plot and rows:
            plot_scale(rows, args.plot)
            print(f"wrote {args.plot}")
        if args.json:
            import json
            from pathlib import Path

            Path(args.json).write_text(json.dumps(rows, indent=1))
            print(f"wrote {args.json}")
        return 0
    if args.bench == "parallel":
        rows = bench.parallel_benchmark(args.solver, args.batch, args.workers, args.repeats, args.executors,
                                        tuple(args.families or bench.PARALLEL_FAMILIES), runs=args.runs)
        _write_bench_rows(rows, args.json, args.plot)
        return 0
    torch_threads_note = "torch intra-op threads: 1 in the layer's backward (backward_threads)"
    print(f"ilplayer bench {args.bench}; one thread per solver; {torch_threads_note}", flush=True)
    backends = tuple(args.backends) if getattr(args, "backends", None) else bench.MIP_BACKENDS
    sized = {"n": args.n, "batch": args.batch} if hasattr(args, "n") else {}
    if getattr(args, "families", None):
        sized["families"] = tuple(args.families)
    rows = []
    if args.bench in ("solvers", "all"):
        rows += bench.solvers_benchmark(backends, reference=args.bench == "all" or args.reference,
                                        through_layer=getattr(args, "through_layer", False), **sized)
    if args.bench in ("warm", "all"):
        warm = dict(sized)
        warm.setdefault("families", ("binary m=8", "dense m=8"))
        rows += bench.warm_benchmark(backends, **warm)
    if args.bench in ("reuse", "all"):
        reuse_backends = backends if getattr(args, "backends", None) else ("gurobi", "highs")
        family = args.families[0] if getattr(args, "families", None) else "dense m=4"
        rows += bench.reuse_benchmark(reuse_backends, family=family)
    if args.bench in ("backward", "all"):
        rows += bench.backward_benchmark()
    for kind in dict.fromkeys(row["benchmark"] for row in rows):
        print()
        bench.print_rows([row for row in rows if row["benchmark"] == kind])
    if args.bench == "all":  # printed as it runs; Ray's start-up per family is left to bench parallel
        for name in bench.installed_backends(backends):
            print()
            rows += bench.parallel_benchmark(name, executors=("serial", "ideal", "threads", "processes"))
    _write_bench_rows(rows, args.json, args.plot)
    return 0


def _write_bench_rows(rows: list[dict[str, object]], json_path: str | None, plot_path: str | None) -> None:
    """Print the speed targets the rows can check, then write the rows (targets included)."""
    import json
    from pathlib import Path

    from ilplayer import bench

    targets = bench.target_rows(rows)
    if targets:
        print("\nthe speed targets this run can check (docs/records/bench.md)")
        bench.print_rows(targets)
    rows = rows + targets
    if json_path:
        Path(json_path).write_text(json.dumps(rows, indent=1))
        print(f"wrote {json_path}")
    if plot_path and rows:
        print(f"wrote {bench.plot_rows(rows, plot_path)}")
